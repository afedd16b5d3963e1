import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { startApp, type TestApp } from '../support/app.ts';
import { registerUser, type TestUser } from '../support/users.ts';
import { uploadFields, uploadImage } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { onPostgres, TEST_REDIS_URL } from '../support/env.ts';
import { testRedisPrefix } from '../support/redis.ts';
import { wilsonLowerBound } from '../../src/domain/ranking.ts';
import { until } from '../support/budget.ts';

let app: TestApp;
let alice: TestUser;
let bob: TestUser;
const ids: string[] = [];

const link = (u: TestUser, fields: Record<string, string> = {}) =>
  uploadFields(app.api, u.token, {
    upload_type: 'link',
    external_url: `https://example.com/${randomBytes(4).toString('hex')}`,
    ...fields,
  });
/** Waits until the app's Redis feed cache has its subscription confirmed. */
async function pushed(t: TestApp): Promise<void> {
  await until(() => t.composed.feedCache?.pushed, 10);
}
const vote = (u: TestUser, id: string, value: string) =>
  app.api.post('/api/vote', { uploadId: id, vote: value }, { token: u.token });

before(async () => {
  app = await startApp();
  alice = await registerUser(app.api, 'feed_alice');
  bob = await registerUser(app.api, 'feed_bob');
  // 15 public links by alice, tagged, newest last.
  for (let i = 0; i < 15; i++) {
    const r = await link(alice, { tags: i % 3 === 0 ? 'three,common' : 'common', description: `n${i}` });
    assert.equal(r.status, 201);
    ids.push(r.body.id);
  }
});
after(() => app.close());

describe('GET /api/uploads', () => {
  test('newest first, default page 1 and limit 12, has_more, caching headers', async () => {
    const r = await app.api.get('/api/uploads');
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body).sort(), ['has_more', 'limit', 'next_cursor', 'page', 'uploads']);
    assert.equal(r.body.page, 1);
    assert.equal(r.body.limit, 12);
    assert.equal(r.body.has_more, true);
    assert.equal(r.body.uploads.length, 12);
    assert.deepEqual(
      r.body.uploads.map((u: { id: string }) => u.id),
      [...ids].reverse().slice(0, 12),
    );
    assert.equal(r.headers.get('cache-control'), 'public, max-age=120');
    assert.ok(r.headers.get('etag'));
    const page2 = await app.api.get('/api/uploads?page=2');
    assert.equal(page2.body.uploads.length, 3);
    assert.equal(page2.body.has_more, false);
    assert.equal((await app.api.get('/api/uploads?page=99')).body.uploads.length, 0);
  });

  test('a cached page (headers in one writeHead: listed-headers.ts) has every header once; HEAD no body', async () => {
    /** The raw header lines of one request: names as sent, duplicates kept (fetch would join them). */
    const rawGet = (method: string, headers: Record<string, string> = {}) =>
      new Promise<{ status: number; names: string[]; headers: Record<string, string>; bytes: Buffer }>((ok, fail) => {
        const req = request(`${app.url}/api/uploads?limit=4`, { method, headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => chunks.push(d));
          res.on('end', () => {
            const names = res.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
            const headers = Object.fromEntries(names.map((n, i) => [n, res.rawHeaders[i * 2 + 1]!]));
            ok({ status: res.statusCode!, names, headers, bytes: Buffer.concat(chunks) });
          });
        });
        req.on('error', fail);
        req.end();
      });
    await rawGet('GET'); // the page is built and cached
    const get = await rawGet('GET');
    assert.equal(get.status, 200);
    assert.equal(new Set(get.names).size, get.names.length, `a header twice: ${get.names.join(' ')}`);
    for (const name of [
      'x-request-id',
      'content-security-policy',
      'x-content-type-options',
      'ratelimit-limit',
      'ratelimit-remaining',
      'ratelimit-reset',
      'cache-control',
      'etag',
      'content-type',
      'content-length',
      'vary',
    ])
      assert.ok(get.headers[name], `${name} missing: ${get.names.join(' ')}`);
    assert.equal(get.headers['content-encoding'], undefined);
    assert.equal(Number(get.headers['content-length']), get.bytes.length);
    assert.equal(JSON.parse(get.bytes.toString('utf8')).uploads.length, 4);
    const head = await rawGet('HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.bytes.length, 0);
    assert.equal(head.headers['content-length'], get.headers['content-length']);
    assert.equal(head.headers.etag, get.headers.etag);

    // A client that takes gzip gets the same page gzipped, under the same (weak) ETag, every header still once.
    const gz = await rawGet('GET', { 'accept-encoding': 'gzip, deflate, br' });
    assert.equal(gz.status, 200);
    assert.equal(new Set(gz.names).size, gz.names.length, `a header twice: ${gz.names.join(' ')}`);
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.equal(gz.headers.vary, 'Accept-Encoding');
    assert.equal(gz.headers.etag, get.headers.etag);
    assert.equal(Number(gz.headers['content-length']), gz.bytes.length);
    assert.ok(gz.bytes.length < get.bytes.length, `${gz.bytes.length} ≥ ${get.bytes.length}`);
    assert.deepEqual(gunzipSync(gz.bytes), get.bytes);
    const gzHead = await rawGet('HEAD', { 'accept-encoding': 'gzip' });
    assert.equal(gzHead.headers['content-length'], gz.headers['content-length']);
    // gzip refused by its q-value, or not offered: the page as it is.
    for (const accept of ['gzip;q=0, identity', 'br', 'identity']) {
      const plain = await rawGet('GET', { 'accept-encoding': accept });
      assert.equal(plain.headers['content-encoding'], undefined, accept);
      assert.deepEqual(plain.bytes, get.bytes, accept);
    }
    // Revalidation answers 304 for either coding, with Vary.
    const notModified = await rawGet('GET', { 'accept-encoding': 'gzip', 'if-none-match': get.headers.etag! });
    assert.equal(notModified.status, 304);
    assert.equal(notModified.bytes.length, 0);
    assert.equal(notModified.headers.vary, 'Accept-Encoding');
  });

  test('If-None-Match with the ETag → 304 with an empty body', async () => {
    const r = await app.api.get('/api/uploads?limit=5');
    const again = await app.api.get('/api/uploads?limit=5', { headers: { 'if-none-match': r.headers.get('etag')! } });
    assert.equal(again.status, 304);
    assert.equal(again.text, '');
  });

  test('limit over 50 is clamped; non-integer or < 1 is 400', async () => {
    assert.equal((await app.api.get('/api/uploads?limit=100')).body.limit, 50);
    for (const q of ['limit=0', 'limit=abc', 'limit=1.5', 'page=0', 'page=-1', 'page=x', 'sort=random', 'type=video']) {
      const r = await app.api.get(`/api/uploads?${q}`);
      assert.equal(r.status, 400, q);
      assert.equal(r.body.error, 'invalid_request', q);
    }
  });

  test('private uploads never appear, not even to their owner', async () => {
    const hidden = await link(alice, { is_private: 'true' });
    const anon = await app.api.get('/api/uploads?limit=50');
    assert.ok(!anon.body.uploads.some((u: { id: string }) => u.id === hidden.body.id));
    const own = await app.api.get('/api/uploads?limit=50', { token: alice.token });
    assert.ok(!own.body.uploads.some((u: { id: string }) => u.id === hidden.body.id));
  });

  test('filters: tag, user, type', async () => {
    const byTag = await app.api.get('/api/uploads?tag=three&limit=50');
    assert.equal(byTag.body.uploads.length, 5);
    assert.ok(
      byTag.body.uploads.every((u: { tags: Array<{ slug: string }> }) => u.tags.some((t) => t.slug === 'three')),
    );
    const b = await link(bob);
    const byUser = await app.api.get('/api/uploads?user=FEED_BOB');
    assert.deepEqual(
      byUser.body.uploads.map((u: { id: string }) => u.id),
      [b.body.id],
    );
    const img = await uploadImage(app.api, bob.token, await photoJpeg({ seed: 801 }));
    const images = await app.api.get('/api/uploads?type=image');
    assert.deepEqual(
      images.body.uploads.map((u: { id: string }) => u.id),
      [img.body.id],
    );
    const links = await app.api.get('/api/uploads?type=link&limit=50');
    assert.ok(links.body.uploads.every((u: { upload_type: string }) => u.upload_type === 'link'));
    assert.equal((await app.api.get('/api/uploads?tag=nope')).body.uploads.length, 0);
  });

  test('sort=top, hot and best order by score, hot rank and the Wilson lower bound', async () => {
    const voters = await Promise.all(Array.from({ length: 6 }, () => registerUser(app.api)));
    const [a, b, c] = [ids[0]!, ids[1]!, ids[2]!];
    // a: 5 up 1 down (score 4); b: 2 up (score 2); c: 6 up 0 down... but only after a and b.
    for (let i = 0; i < 5; i++) await vote(voters[i]!, a, 'fucks');
    await vote(voters[5]!, a, 'does_not_fuck');
    for (let i = 0; i < 2; i++) await vote(voters[i]!, b, 'fucks');
    for (let i = 0; i < 6; i++) await vote(voters[i]!, c, 'fucks');
    const top = (await app.api.get('/api/uploads?sort=top&limit=3')).body.uploads.map((u: { id: string }) => u.id);
    assert.deepEqual(top, [c, a, b]);
    const best = (await app.api.get('/api/uploads?sort=best&limit=3')).body.uploads.map((u: { id: string }) => u.id);
    assert.ok(wilsonLowerBound(6, 0) > wilsonLowerBound(5, 1) && wilsonLowerBound(5, 1) > wilsonLowerBound(2, 0));
    assert.deepEqual(best, [c, a, b]);
    const hot = (await app.api.get('/api/uploads?sort=hot&limit=50')).body.uploads.map((u: { id: string }) => u.id);
    assert.equal(hot[0], c, 'same age: the highest score is hottest');
  });
});

describe('server-side cache invalidation', () => {
  test('a new upload, a vote, a privacy change and a delete show on the very next request', async () => {
    const first = await app.api.get('/api/uploads?limit=1');
    const fresh = await link(bob);
    const afterUpload = await app.api.get('/api/uploads?limit=1');
    assert.notEqual(afterUpload.headers.get('etag'), first.headers.get('etag'));
    assert.equal(afterUpload.body.uploads[0].id, fresh.body.id);
    await vote(alice, fresh.body.id, 'fucks');
    assert.equal((await app.api.get('/api/uploads?limit=1')).body.uploads[0].upvotes, 1);
    await app.api.patch(`/api/upload/${fresh.body.id}/privacy`, { is_private: true }, { token: bob.token });
    assert.notEqual((await app.api.get('/api/uploads?limit=1')).body.uploads[0].id, fresh.body.id);
    await app.api.patch(`/api/upload/${fresh.body.id}/privacy`, { is_private: false }, { token: bob.token });
    assert.equal((await app.api.get('/api/uploads?limit=1')).body.uploads[0].id, fresh.body.id);
    await app.api.del(`/api/upload/${fresh.body.id}`, { token: bob.token });
    assert.notEqual((await app.api.get('/api/uploads?limit=1')).body.uploads[0].id, fresh.body.id);
    const recent = await app.api.get('/api/items-recent?limit=1');
    assert.notEqual(recent.body.items[0].id, fresh.body.id);
  });

  test('a vote keeps sort=new pages cached (counts read again) and reorders only the top pages it is in', async () => {
    const owner = await registerUser(app.api);
    const voters = await Promise.all(Array.from({ length: 3 }, () => registerUser(app.api)));
    const hex = randomBytes(3).toString('hex');
    const [tagA, tagB] = [`scopea${hex}`, `scopeb${hex}`];
    const a1 = (await link(owner, { tags: tagA })).body.id as string;
    const a2 = (await link(owner, { tags: tagA })).body.id as string;
    await link(owner, { tags: tagB });
    await vote(voters[0]!, a1, 'fucks');
    const ids = (r: { body: { uploads: Array<{ id: string }> } }) => r.body.uploads.map((u) => u.id);
    const outcomes = async () => {
      const values = (await app.composed.metrics.feedCache.get()).values;
      const of = (o: string) => values.find((v) => v.labels.outcome === o)?.value ?? 0;
      return { hit: of('hit'), recount: of('recount'), miss: of('miss') };
    };
    // Cached: the newest page, the top page of each tag.
    const newPage = await app.api.get('/api/uploads?limit=50');
    const topB = await app.api.get(`/api/uploads?sort=top&tag=${tagB}`);
    assert.deepEqual(ids(await app.api.get(`/api/uploads?sort=top&tag=${tagA}`)), [a1, a2]);
    const before = await outcomes();
    // a2 overtakes a1: two votes.
    for (const v of voters.slice(1)) assert.equal((await vote(v, a2, 'fucks')).status, 200);
    const newAfter = await app.api.get('/api/uploads?limit=50');
    assert.deepEqual(ids(newAfter), ids(newPage), 'the new order is the same');
    assert.equal(newAfter.body.uploads.find((u: { id: string }) => u.id === a2).upvotes, 2, 'with the new counts');
    assert.notEqual(newAfter.headers.get('etag'), newPage.headers.get('etag'));
    const topBAfter = await app.api.get(`/api/uploads?sort=top&tag=${tagB}`);
    assert.equal(topBAfter.headers.get('etag'), topB.headers.get('etag'));
    assert.deepEqual(ids(await app.api.get(`/api/uploads?sort=top&tag=${tagA}`)), [a2, a1], 'reordered at once');
    const after = await outcomes();
    assert.deepEqual(
      { hit: after.hit - before.hit, recount: after.recount - before.recount, miss: after.miss - before.miss },
      { hit: 1, recount: 1, miss: 1 },
      'the new page recounted from the cache, the other tag a hit, the voted tag built again',
    );
    // Read again: both served from the cache as they are.
    assert.equal((await app.api.get('/api/uploads?limit=50')).headers.get('etag'), newAfter.headers.get('etag'));
    assert.equal((await outcomes()).hit, after.hit + 1);
    // A structural write still invalidates every page it touches: a2 made private leaves the new and top pages.
    await app.api.patch(`/api/upload/${a2}/privacy`, { is_private: true }, { token: owner.token });
    assert.ok(!ids(await app.api.get('/api/uploads?limit=50')).includes(a2));
    assert.deepEqual(ids(await app.api.get(`/api/uploads?sort=top&tag=${tagA}`)), [a1]);
  });

  test(
    'with Redis, a write through one process shows on the next read through another',
    { skip: !onPostgres && 'needs Redis (PostgreSQL + Redis pass)' },
    async () => {
      const prefix = testRedisPrefix();
      const a = await startApp({ REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix });
      const b = await startApp(
        { REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix },
        { databaseUrl: a.config.databaseUrl! },
      );
      try {
        const u = await registerUser(a.api);
        await uploadFields(a.api, u.token, { upload_type: 'link', external_url: 'https://example.com/x1' });
        const before = await b.api.get('/api/uploads');
        assert.equal(before.body.uploads.length, 1);
        const second = await uploadFields(a.api, u.token, {
          upload_type: 'link',
          external_url: 'https://example.com/x2',
        });
        const afterWrite = await b.api.get('/api/uploads');
        assert.equal(afterWrite.body.uploads[0].id, second.body.id);
        await a.api.post('/api/vote', { uploadId: second.body.id, vote: 'fucks' }, { token: u.token });
        assert.equal((await b.api.get('/api/uploads')).body.uploads[0].upvotes, 1);
        // Again and again, once B trusts the generations Redis pushes to it (no round trip per read): a vote
        // flipped through A, then at once a read through B. (Without the writer's second round trip to Redis,
        // 7 reads in 400 were stale on a loaded machine.)
        await pushed(b);
        for (let i = 0; i < 100; i++) {
          await b.api.get('/api/uploads');
          assert.equal(
            (
              await a.api.post(
                '/api/vote',
                { uploadId: second.body.id, vote: i % 2 ? 'fucks' : 'none' },
                { token: u.token },
              )
            ).status,
            200,
          );
          assert.equal(
            (await b.api.get('/api/uploads')).body.uploads[0].upvotes,
            i % 2 ? 1 : 0,
            `flip ${i} shows through B at once`,
          );
        }
      } finally {
        await b.close();
        await a.close();
      }
    },
  );

  test(
    'with Redis, a cached read costs no Redis round trip of its own',
    { skip: !onPostgres && 'needs Redis (PostgreSQL + Redis pass)' },
    async () => {
      const redis = app.composed.redis!;
      await app.api.get('/api/uploads');
      await pushed(app);
      const sent: string[] = [];
      const send = redis.sendCommand.bind(redis);
      redis.sendCommand = (command: { name: string }, stream?: unknown) => {
        sent.push(command.name);
        return send(command as never, stream as never);
      };
      const started = performance.now();
      try {
        // 200 reads over 8 connections, as a busy client sends them.
        await Promise.all(
          Array.from({ length: 8 }, async () => {
            for (let i = 0; i < 25; i++) assert.equal((await app.api.get('/api/uploads')).status, 200);
          }),
        );
      } finally {
        redis.sendCommand = send;
      }
      const seconds = (performance.now() - started) / 1000;
      // The generation is pushed: asked for only by the once-a-second recheck. The general limit goes in
      // batches (one command per 25 ms, or per 512 reads of a key): before, every read sent two commands.
      const gets = sent.filter((name) => name === 'get').length;
      assert.ok(gets <= Math.ceil(seconds) + 1, `${gets} GETs in ${seconds.toFixed(2)} s`);
      assert.ok(
        sent.length - gets <= 100,
        `${sent.length} Redis commands for 200 cached reads: ${[...new Set(sent)].join(', ')}`,
      );
    },
  );
});

test('GET /api/items-recent', async () => {
  const r = await app.api.get('/api/items-recent');
  assert.equal(r.status, 200);
  assert.deepEqual(Object.keys(r.body), ['items']);
  assert.ok(r.body.items.length <= 20);
  assert.equal(r.headers.get('cache-control'), 'public, max-age=300');
  assert.ok(r.body.items.every((u: { is_private: boolean }) => !u.is_private));
  assert.equal((await app.api.get('/api/items-recent?limit=2')).body.items.length, 2);
});

test('GET /api/profile: the user, stats and own uploads including private ones', async () => {
  const u = await registerUser(app.api);
  const pub = await uploadFields(app.api, u.token, { upload_type: 'link', external_url: 'https://example.com/p1' });
  const priv = await uploadFields(app.api, u.token, {
    upload_type: 'link',
    external_url: 'https://example.com/p2',
    is_private: 'true',
  });
  await vote(alice, pub.body.id, 'fucks');
  await vote(bob, pub.body.id, 'does_not_fuck');
  await vote(u, ids[3]!, 'fucks');
  const r = await app.api.get('/api/profile', { token: u.token });
  assert.equal(r.status, 200);
  assert.equal(r.body.user.id, u.id);
  assert.equal(r.body.user.email, u.email);
  assert.deepEqual(r.body.stats, { uploads: 2, upvotes_received: 1, downvotes_received: 1, votes_cast: 1 });
  assert.deepEqual(
    r.body.uploads.map((x: { id: string }) => x.id),
    [priv.body.id, pub.body.id],
  );
  assert.equal(r.headers.get('cache-control'), 'private, max-age=30');
  assert.ok(r.headers.get('etag'));
  assert.equal((await app.api.get('/api/profile')).status, 401);
});
