import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { RedisGenerations } from '../../src/store/cache/generations.ts';
import { redisFeedCache as cacheOver, type RedisFeedCache } from '../../src/store/cache/redis-feed-cache.ts';

/** One process's Redis feed cache, as src/main.ts builds it. */
const redisFeedCache = (redis: Redis, prefix: string, opts: { subscriber?: Redis } = {}) =>
  cacheOver(redis, prefix, new RedisGenerations(redis, prefix, opts));
import { onPostgres, TEST_REDIS_URL } from '../support/env.ts';
import { testRedisPrefix } from '../support/redis.ts';
import { until } from '../support/budget.ts';

const page = (text: string) => ({ etag: `W/"${text}"`, body: Buffer.from(JSON.stringify({ text })) });
const skip = !onPostgres && 'needs Redis (PostgreSQL + Redis pass)';

async function connected(): Promise<Redis> {
  const r = new Redis(TEST_REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  if (r.status !== 'ready') await once(r, 'ready');
  return r;
}

/** Two processes' caches on one Redis, each with its own connections; removed with every key afterwards. */
async function twoProcesses(
  run: (a: RedisFeedCache, b: RedisFeedCache, ctx: { prefix: string; ra: Redis; rb: Redis }) => Promise<void>,
): Promise<void> {
  const prefix = testRedisPrefix();
  const [ra, rb] = await Promise.all([connected(), connected()]);
  const a = redisFeedCache(ra, prefix);
  const b = redisFeedCache(rb, prefix);
  try {
    await run(a, b, { prefix, ra, rb });
  } finally {
    a.close();
    b.close();
    const keys = await ra.keys(`${prefix}*`);
    if (keys.length) await ra.del(...keys);
    ra.disconnect();
    rb.disconnect();
  }
}

test(
  'Redis feed cache: two processes, one generation; a page kept in memory is never served past a write',
  { skip },
  () =>
    twoProcesses(async (a, b, { prefix, rb }) => {
      const first = await a.read('k');
      assert.equal(first.hit, null);
      await a.write('k', first.generation, page('one'), 60);
      // B has nothing in memory: it takes the page from Redis, then keeps it.
      const viaRedis = await b.read('k');
      assert.equal(viaRedis.hit?.body.toString(), '{"text":"one"}');
      assert.equal(viaRedis.hit?.etag, 'W/"one"');
      await rb.del(`${prefix}feedpage:${viaRedis.generation}:k`);
      assert.equal((await b.read('k')).hit?.etag, 'W/"one"', 'served from memory while the generation holds');
      // A write through A: B's next read misses, and a page built before the write is not kept.
      await a.invalidate();
      const after = await b.read('k');
      assert.equal(after.hit, null);
      assert.notEqual(after.generation, first.generation);
      await a.write('k', first.generation, page('stale'), 60);
      assert.equal((await b.read('k')).hit, null, 'a page of the old generation is never served');
      await b.write('k', after.generation, page('two'), 60);
      assert.equal((await a.read('k')).hit?.etag, 'W/"two"');
      // The copy kept in memory does not outlive the page in Redis.
      await a.write('short', after.generation, page('short'), 1);
      assert.equal((await b.read('short')).hit?.etag, 'W/"short"');
      await new Promise((r) => setTimeout(r, 1100));
      assert.equal((await b.read('short')).hit, null);
    }),
);

test(
  'Redis feed cache: with pushed generations, a write through one process is missed by the very next read of the other',
  { skip },
  () =>
    twoProcesses(async (a, b) => {
      await until(() => a.pushed && b.pushed, 10); // both subscriptions confirmed
      for (let i = 0; i < 50; i++) {
        const before = await b.read('k');
        await b.write('k', before.generation, page(`v${i}`), 60);
        assert.equal((await b.read('k')).hit?.etag, `W/"v${i}"`);
        // No wait between the write's answer and the read: the announcement must already have been applied.
        await a.invalidate();
        const next = await b.read('k');
        assert.equal(next.hit, null, `round ${i}: B served a page from before A's write`);
        assert.ok(Number(next.generation) > Number(before.generation));
      }
      assert.ok(a.pushed && b.pushed, 'still trusting pushed generations');
    }),
);

test(
  'Redis feed cache: a process whose subscription drops asks Redis on every read until it is back',
  { skip },
  async () => {
    const prefix = testRedisPrefix();
    const [ra, rb] = await Promise.all([connected(), connected()]);
    const name = `pvtest-sub-${randomBytes(4).toString('hex')}`;
    const sub = new Redis(TEST_REDIS_URL, {
      enableOfflineQueue: false,
      autoResubscribe: false,
      retryStrategy: () => 50,
      connectionName: name,
    });
    const a = redisFeedCache(ra, prefix);
    const b = redisFeedCache(rb, prefix, { subscriber: sub });
    try {
      await until(() => b.pushed, 10); // B live
      const g = await b.read('k');
      await b.write('k', g.generation, page('one'), 60);
      // The subscription is cut and A writes while B hears nothing: B still misses.
      const list = String(await ra.client('LIST'));
      const id = /id=(\d+) [^\n]* name=(\S+)/g;
      const mine = [...list.matchAll(id)].find((m) => m[2] === name)?.[1];
      assert.ok(mine, 'the subscriber connection is listed');
      await ra.client('KILL', 'ID', mine);
      await until(() => !b.pushed, 10); // B stops trusting pushed generations
      await a.invalidate();
      assert.equal((await b.read('k')).hit, null);
      // A vote meanwhile: B, asking Redis for the generations (one MULTI), drops the voted scope's page and
      // recounts the pages it keeps.
      for (const [key, scopes, ids] of [
        ['top', ['rank:tag:cats'], undefined],
        ['new', [], ['u0', 'u1']],
      ] as const) {
        const r = await b.read(key, scopes);
        await b.write(key, r.generation, { ...page(key), ids }, 60, { scopes, seq: r.seq });
      }
      await a.voted({ scopes: ['rank:all', 'rank:tag:cats'], uploads: ['u1'] });
      assert.equal((await b.read('top', ['rank:tag:cats'])).hit, null);
      const kept = await b.read('new', []);
      assert.equal(kept.hit?.etag, 'W/"new"');
      assert.ok(kept.recount.includes('u1'));
      // Reconnected: B resubscribes, catches up with Redis, and trusts announcements again.
      await until(() => b.pushed, 10); // B live again
      const now = await b.read('k');
      await b.write('k', now.generation, page('two'), 60);
      await a.invalidate();
      assert.equal((await b.read('k')).hit, null);
    } finally {
      a.close();
      b.close();
      const keys = await ra.keys(`${prefix}*`);
      if (keys.length) await ra.del(...keys);
      for (const r of [ra, rb, sub]) r.disconnect();
    }
  },
);

test('Redis feed cache: a Redis that lost its data never brings back an old generation', { skip }, () =>
  twoProcesses(async (a, b, { prefix, ra }) => {
    await until(() => a.pushed && b.pushed, 10); // both live
    for (let i = 0; i < 3; i++) await a.invalidate();
    const before = await b.read('k');
    await b.write('k', before.generation, page('old'), 60);
    await ra.del(`${prefix}feed:gen`); // as after a restart of a Redis that keeps nothing on disk
    await a.invalidate();
    const after = await b.read('k');
    assert.equal(after.hit, null);
    assert.ok(Number(after.generation) > Number(before.generation), `${after.generation} > ${before.generation}`);
  }),
);

test(
  'Redis feed cache: a write whose bump failed is owed: ' +
    'pages are built from the database until a bump lands everywhere',
  { skip },
  () =>
    twoProcesses(async (a, b, { ra }) => {
      await until(() => a.pushed && b.pushed, 10); // both live
      const g = await a.read('k');
      await a.write('k', g.generation, page('before'), 60);
      assert.equal((await b.read('k')).hit?.etag, 'W/"before"');
      const evalFn = ra.eval.bind(ra);
      // Each attempt fails after a while, as a command timeout does.
      ra.eval = () => new Promise((_, reject) => setTimeout(() => reject(new Error('Command timed out')), 150));
      try {
        await a.invalidate(); // answered: writes go on while Redis misbehaves
        for (let i = 0; i < 5; i++) {
          assert.equal((await a.read('k')).hit, null, 'the writing process never serves a page from before its write');
          await new Promise((r) => setTimeout(r, 100)); // its retries fail meanwhile
        }
      } finally {
        ra.eval = evalFn;
      }
      // The retry lands: the other process drops its page too.
      await until(async () => (await b.read('k')).hit === null);
      assert.equal((await b.read('k')).hit, null, 'the owed bump reached the other process');
      const now = await a.read('k');
      await a.write('k', now.generation, page('after'), 60);
      assert.equal((await a.read('k')).hit?.etag, 'W/"after"', 'caching again once nothing is owed');
    }),
);

test(
  'Redis feed cache: a vote through one process drops only the pages of its scopes in the other, ' +
    'which recounts its upload on the pages it keeps',
  { skip },
  () =>
    twoProcesses(async (a, b) => {
      const keep = async (key: string, scopes: string[], ids?: string[]) => {
        const r = await b.read(key, scopes);
        assert.notEqual(r.generation, 'none');
        await b.write(key, r.generation, { ...page(key), ids }, 60, { scopes, seq: r.seq });
      };
      const rounds = async (label: string) => {
        for (let i = 0; i < 10; i++) {
          await keep('top-cats', ['rank:tag:cats']);
          await keep('top-dogs', ['rank:tag:dogs']);
          await keep('new', [], ['u0', 'u1']);
          await keep('new-other', [], ['u2']);
          await a.voted({ scopes: ['rank:all', 'rank:tag:cats'], uploads: ['u1'] });
          assert.equal((await b.read('top-cats', ['rank:tag:cats'])).hit, null, `${label} ${i}: voted scope dropped`);
          assert.equal((await b.read('top-dogs', ['rank:tag:dogs'])).hit?.etag, 'W/"top-dogs"');
          const fresh = await b.read('new', []);
          assert.equal(fresh.hit?.etag, 'W/"new"');
          assert.ok(fresh.recount.includes('u1'), `${label} ${i}: the voted upload is recounted`);
          if (b.pushed) assert.deepEqual((await b.read('new-other', [])).recount, [], 'nothing else to recount');
        }
      };
      // With pushed generations: no wait between the vote's answer and the other process's read.
      await until(() => a.pushed && b.pushed, 10); // both live
      await rounds('pushed');
      // Two processes that never heard of a scope agree on its generation (asked for in one round trip).
      const g = await a.read('x', ['rank:tag:cats']);
      assert.equal((await b.read('x', ['rank:tag:cats'])).generation, g.generation);
    }),
);
