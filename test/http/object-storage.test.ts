/**
 * Media on S3-compatible object storage (issue 19), against the real server scripts/s3-server.sh runs (OpenStack
 * Swift + s3api): configuration and start-up, uploads written to the store before their rows, reads streamed
 * with the disk store's headers (304, Range → 206), MEDIA_REDIRECT's presigned 302, deletes (owner and
 * moderation) through the journal, twins sharing one set of objects, and the sweep of objects no row references.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { startApp, type TestApp } from '../support/app.ts';
import { apiToken, registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { countUploads, diskState, uploadImage } from '../support/uploads.ts';
import { photoJpeg, pngImage } from '../support/fixtures.ts';
import { createTestBucket, s3Skip, type TestBucket } from '../support/s3.ts';
import { onPostgres } from '../support/env.ts';
import { testRedisPrefix } from '../support/redis.ts';
import { loadConfig } from '../../src/config.ts';
import { compose } from '../../src/main.ts';
import { S3MediaStore } from '../../src/store/s3-media-store.ts';
import { pollUntil } from '../support/budget.ts';

const skip = await s3Skip();
const VARIANT_NAMES = ['full', 'medium', 'thumb'];

describe('media on object storage', { skip }, () => {
  let bucket: TestBucket;
  let app: TestApp;
  let alice: TestUser;
  let token: string;
  let bobToken: string;

  before(async () => {
    bucket = await createTestBucket();
    app = await startApp(bucket.env(undefined, 'media'));
    alice = await registerUser(app.api);
    token = await apiToken(app.api, alice);
    bobToken = await apiToken(app.api, await registerUser(app.api));
  });
  after(async () => {
    await app?.close();
    await bucket?.drop();
  });

  const objectsOf = async (mediaKey: string) => (await bucket.keys()).filter((k) => k.includes(mediaKey)).sort();

  test('an upload writes its three variants to the store under the prefix, none to local disk', async () => {
    const r = await uploadImage(app.api, token, await photoJpeg({ width: 900, height: 600, seed: 1901 }));
    assert.equal(r.status, 201, r.text);
    const key = (r.body.filename as string).replace(/\.webp$/, '');
    const objects = await objectsOf(key);
    assert.deepEqual(
      objects,
      VARIANT_NAMES.map((v) => `media/${key.slice(0, 2)}/${key}.${v}.webp`),
    );
    const disk = await diskState(app);
    assert.deepEqual(disk.media, [], 'nothing under DATA_DIR/media');
    assert.deepEqual(disk.staging, [], 'the local staging copy is gone');
    const head = await bucket.client.send(
      new (await import('@aws-sdk/client-s3')).HeadObjectCommand({ Bucket: bucket.name, Key: objects[0] }),
    );
    assert.equal(head.ContentType, 'image/webp');
    assert.equal(head.CacheControl, 'public, max-age=31536000, immutable');
  });

  test('reads stream from the store with the disk headers: ETag, Cache-Control, 304, HEAD, Range → 206', async () => {
    const r = await uploadImage(app.api, token, await photoJpeg({ width: 800, height: 500, seed: 1902 }));
    assert.equal(r.status, 201, r.text);
    const id = r.body.id as string;
    const full = await app.api.get(`/api/image/${id}`);
    assert.equal(full.status, 200);
    assert.equal(full.headers.get('content-type'), 'image/webp');
    assert.equal(full.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(full.headers.get('accept-ranges'), 'bytes');
    const etag = full.headers.get('etag')!;
    assert.match(etag, /^"[0-9a-f-]{36}\.full"$/);
    assert.equal(Number(full.headers.get('content-length')), full.bytes.length);
    assert.equal(full.bytes.subarray(0, 4).toString(), 'RIFF');

    const cached = await app.api.get(`/api/image/${id}`, { headers: { 'If-None-Match': etag } });
    assert.equal(cached.status, 304);
    assert.equal(cached.bytes.length, 0);

    const head = await app.api.request('HEAD', `/api/image/${id}?size=thumb`);
    assert.equal(head.status, 200);
    const thumb = await app.api.get(`/api/image/${id}?size=thumb`);
    assert.equal(head.headers.get('content-length'), String(thumb.bytes.length));

    const part = await app.api.get(`/api/image/${id}`, { headers: { Range: 'bytes=10-109' } });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get('content-range'), `bytes 10-109/${full.bytes.length}`);
    assert.deepEqual(part.bytes, full.bytes.subarray(10, 110));
    const tail = await app.api.get(`/api/image/${id}`, { headers: { Range: 'bytes=-16' } });
    assert.equal(tail.status, 206);
    assert.deepEqual(tail.bytes, full.bytes.subarray(full.bytes.length - 16));
    const outside = await app.api.get(`/api/image/${id}`, { headers: { Range: `bytes=${full.bytes.length + 5}-` } });
    assert.equal(outside.status, 200, 'a range outside the image is ignored');
    assert.deepEqual(outside.bytes, full.bytes);
  });

  test('an owner delete removes the objects after the row; a twin keeps shared ones until its row goes', async () => {
    const bytes = await pngImage(500, 400, 1903);
    // Private: Bob's upload of the same bytes is not answered as a duplicate, it shares the stored objects.
    const first = await uploadImage(app.api, token, bytes, { is_private: 'true' });
    assert.equal(first.status, 201, first.text);
    const second = await uploadImage(app.api, bobToken, bytes);
    assert.equal(second.status, 201, second.text);
    const key = (first.body.filename as string).replace(/\.webp$/, '');
    const twinKey = (second.body.filename as string).replace(/\.webp$/, '');
    // The twin shares the first upload's objects: its own, written before its row, were released.
    await waitFor(async () => (await objectsOf(twinKey)).length === 0, 'the twin released its own objects');
    assert.equal((await objectsOf(key)).length, 3);

    assert.equal((await app.api.del(`/api/upload/${first.body.id}`, { token })).status, 200);
    assert.equal((await objectsOf(key)).length, 3, 'still referenced by the twin');
    const served = await app.api.get(`/api/image/${second.body.id}`);
    assert.equal(served.status, 200);

    assert.equal((await app.api.del(`/api/upload/${second.body.id}`, { token: bobToken })).status, 200);
    assert.deepEqual(await objectsOf(key), [], 'the last row gone, the objects go');
    const garbage = await app.composed.db.db().selectFrom('media_garbage').selectAll().execute();
    assert.deepEqual(garbage, [], 'no pending deletion is left');
  });

  test("moderation's remove deletes the objects through the journal", async () => {
    const admin = await registerAdmin(app);
    const adminToken = await apiToken(app.api, admin);
    const r = await uploadImage(app.api, token, await photoJpeg({ width: 640, height: 480, seed: 1904 }));
    assert.equal(r.status, 201, r.text);
    const key = (r.body.filename as string).replace(/\.webp$/, '');
    assert.equal((await objectsOf(key)).length, 3);
    const removed = await app.api.post(
      `/api/admin/uploads/${r.body.id}/moderation`,
      { action: 'remove', reason: 'test' },
      { token: adminToken },
    );
    assert.equal(removed.status, 200, removed.text);
    assert.deepEqual(await objectsOf(key), []);
    assert.equal((await app.api.get(`/api/image/${r.body.id}`)).status, 410);
  });

  test('MEDIA_REDIRECT=true answers 302 to a presigned URL that serves the variant', async () => {
    const redirecting = await startApp({ ...bucket.env(undefined, 'media'), MEDIA_REDIRECT: 'true' });
    try {
      const user = await registerUser(redirecting.api);
      const t = await apiToken(redirecting.api, user);
      const r = await uploadImage(redirecting.api, t, await photoJpeg({ width: 600, height: 400, seed: 1905 }));
      assert.equal(r.status, 201, r.text);
      const res = await redirecting.api.get(`/api/image/${r.body.id}?size=medium`);
      assert.equal(res.status, 302);
      assert.equal(res.headers.get('cache-control'), 'private, no-store');
      const location = res.headers.get('location')!;
      assert.match(location, /X-Amz-Signature=/);
      assert.match(location, /X-Amz-Expires=300/);
      // The pages let the browser follow that redirect: the store's origin is in their img-src.
      const page = await redirecting.api.get('/', { unchecked: 'an HTML page, not an API route' });
      const imgSrc = page.headers
        .get('content-security-policy')!
        .split('; ')
        .find((d) => d.startsWith('img-src'));
      assert.equal(imgSrc, `img-src 'self' data: blob: ${new URL(location).origin}`);
      const got = await fetch(location);
      assert.equal(got.status, 200);
      assert.equal(
        Buffer.from(await got.arrayBuffer())
          .subarray(0, 4)
          .toString(),
        'RIFF',
      );
    } finally {
      await redirecting.close();
    }
  });

  test('the sweep removes objects no row references once older than the grace period, and keeps the rest', async () => {
    const r = await uploadImage(app.api, token, await photoJpeg({ width: 500, height: 500, seed: 1906 }));
    assert.equal(r.status, 201, r.text);
    const kept = (r.body.filename as string).replace(/\.webp$/, '');
    // What a crash between the store and the row leaves: objects of a key no row has.
    const orphan = '0e0e0e0e-0000-4000-8000-000000000019';
    for (const v of VARIANT_NAMES)
      await bucket.client.send(
        new PutObjectCommand({ Bucket: bucket.name, Key: `media/0e/${orphan}.${v}.webp`, Body: 'x' }),
      );
    const rows = await countUploads(app);
    // A gateway starting with a grace of 0 sweeps at once (start-up runs the sweep before serving).
    const sweeper = await startApp(
      { ...bucket.env(undefined, 'media'), MEDIA_SWEEP_GRACE: '0s' },
      app.config.databaseUrl ? { databaseUrl: app.config.databaseUrl } : { sharedDataDir: app.config.dataDir },
    );
    await sweeper.close();
    assert.deepEqual(await objectsOf(orphan), [], 'the orphan is swept');
    assert.equal((await objectsOf(kept)).length, 3, 'referenced objects stay');
    assert.equal(await countUploads(app), rows);
  });

  test(
    'periodic sweeps of gateways sharing a Redis: only the lease holder lists the bucket; start-up sweeps always do',
    { skip: !onPostgres && 'gateways share a Redis (PostgreSQL + Redis pass)' },
    async () => {
      const shared = {
        ...bucket.env(undefined, 'media'),
        MEDIA_SWEEP_GRACE: '0s',
        REDIS_PREFIX: testRedisPrefix(),
      };
      const db = { databaseUrl: app.config.databaseUrl! };
      const orphan = async (n: number) => {
        const key = `0e0e0e0e-0000-4000-8000-0000000001${String(n).padStart(2, '0')}`;
        for (const v of VARIANT_NAMES)
          await bucket.client.send(
            new PutObjectCommand({ Bucket: bucket.name, Key: `media/0e/${key}.${v}.webp`, Body: 'x' }),
          );
        return key;
      };
      const a = await startApp(shared, db);
      const b = await startApp(shared, db);
      try {
        const first = await orphan(1);
        await a.composed.sweepMedia({ periodic: true }); // takes the lease
        assert.deepEqual(await objectsOf(first), [], "the lease holder's periodic sweep lists and removes");
        const second = await orphan(2);
        await b.composed.sweepMedia({ periodic: true });
        assert.equal((await objectsOf(second)).length, 3, 'another gateway leaves the listing to the holder');
        await b.composed.sweepMedia(); // as at start-up
        assert.deepEqual(await objectsOf(second), [], 'a start-up sweep lists whatever the lease');
        const third = await orphan(3);
        await a.composed.sweepMedia({ periodic: true }); // renews it
        assert.deepEqual(await objectsOf(third), []);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    },
  );

  test('start-up fails with one clear line on a missing bucket or refused credentials', async (t) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'pv-s3-x-'));
    t.after(() => rm(dataDir, { recursive: true, force: true }));
    const missing = loadConfig({
      ...bucket.env(),
      MEDIA_STORE: 's3://pvtest-no-such-bucket',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
    });
    await assert.rejects(
      compose(missing),
      /MEDIA_STORE=s3:\/\/pvtest-no-such-bucket\/: bucket pvtest-no-such-bucket does not exist/,
    );
    const denied = loadConfig({
      ...bucket.env(),
      AWS_SECRET_ACCESS_KEY: 'wrong',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
    });
    await assert.rejects(compose(denied), /access to bucket .* is denied/);
  });

  test('an object above 16 MiB goes up in parts (lib-storage multipart) and reads back whole', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pixvote-s3-big-'));
    const store = new S3MediaStore(dir, { ...bucket.settings, prefix: 'big/' });
    try {
      const bytes = randomBytes(18 * 1024 * 1024);
      await writeFile(join(dir, 'big.bin'), bytes);
      await store.putFile('big/0b/big.bin', join(dir, 'big.bin'), 'application/octet-stream');
      const got = await bucket.client.send(new GetObjectCommand({ Bucket: bucket.name, Key: 'big/0b/big.bin' }));
      const back = Buffer.from(await got.Body!.transformToByteArray());
      assert.equal(back.length, bytes.length);
      assert.ok(back.equals(bytes));
      await bucket.client.send(new DeleteObjectCommand({ Bucket: bucket.name, Key: 'big/0b/big.bin' }));
    } finally {
      store.client.destroy();
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('/readyz reports the store', async () => {
    const r = await app.api.get('/readyz');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.checks.media.status, 'ok');
  });
});

/** Polls `check` until it holds; fails after 10 s, stretched by the machine's load. */
async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  await pollUntil(check, what, timeoutMs, 50);
}
