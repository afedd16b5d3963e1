/**
 * Object storage down or slow (issue 19, Faults), against the real server behind a proxy that refuses or stalls:
 * uploads answer 503 `storage_unavailable` with Retry-After and leave no row and no file; reads answer 503;
 * /readyz reports the store down; deletes still take the row away and the journal removes the objects once
 * the store is back; everything recovers by itself, without a restart.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../support/app.ts';
import { apiToken, registerUser } from '../support/users.ts';
import { countUploads, diskState, uploadImage } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { createTestBucket, s3Skip, type TestBucket } from '../support/s3.ts';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.ts';
import { pollUntil } from '../support/budget.ts';

const skip = await s3Skip();

describe('object storage down or slow', { skip }, () => {
  let bucket: TestBucket;
  let proxy: FaultProxy;
  let app: TestApp;
  let token: string;
  let seed = 1950;
  const photo = () => photoJpeg({ width: 640, height: 480, seed: seed++ });

  before(async () => {
    bucket = await createTestBucket();
    proxy = await startFaultProxy(bucket.settings.endpoint!);
    app = await startApp({ ...bucket.env(proxy.url), MEDIA_STORE_TIMEOUT: '2s' });
    token = await apiToken(app.api, await registerUser(app.api));
  });
  after(async () => {
    await app?.close();
    await proxy?.close();
    await bucket?.drop();
  });

  const readyStatus = async () => (await app.api.get('/readyz')).status;
  const objectsOf = async (key: string) => (await bucket.keys()).filter((k) => k.includes(key));

  async function assertRefusedUpload() {
    const rows = await countUploads(app);
    const r = await uploadImage(app.api, token, await photo());
    assert.equal(r.status, 503, r.text);
    assert.equal(r.body.error, 'storage_unavailable');
    assert.ok(Number(r.headers.get('retry-after')) >= 1, 'Retry-After');
    assert.equal(await countUploads(app), rows, 'no row');
    const disk = await diskState(app);
    assert.deepEqual(disk.staging, [], 'no staged file');
    assert.deepEqual(disk.tmp, [], 'no temp file');
  }

  test('down: uploads 503 storage_unavailable with no row, reads 503, /readyz 503; back: all recovers', async () => {
    const stored = await uploadImage(app.api, token, await photo());
    assert.equal(stored.status, 201, stored.text);
    proxy.set('refuse');
    await assertRefusedUpload();
    const read = await app.api.get(`/api/image/${stored.body.id}`);
    assert.equal(read.status, 503);
    assert.equal(read.body.error, 'storage_unavailable');
    await waitFor(async () => (await readyStatus()) === 503, '/readyz turns 503');
    const ready = await app.api.get('/readyz');
    assert.equal(ready.body.checks.media.status, 'down');

    proxy.set('pass');
    await waitFor(async () => (await readyStatus()) === 200, '/readyz recovers');
    const again = await uploadImage(app.api, token, await photo());
    assert.equal(again.status, 201, again.text);
    assert.equal((await app.api.get(`/api/image/${stored.body.id}`)).status, 200);
  });

  test('slow (accepts, never answers): uploads 503 storage_unavailable after the timeout, no row', async () => {
    proxy.set('stall');
    try {
      await assertRefusedUpload();
    } finally {
      proxy.set('pass');
    }
    const r = await uploadImage(app.api, token, await photo());
    assert.equal(r.status, 201, r.text);
  });

  test('frozen: an image GET or HEAD answers 503 within one MEDIA_STORE_TIMEOUT, not two', async () => {
    const stored = await uploadImage(app.api, token, await photo());
    assert.equal(stored.status, 201, stored.text);
    const timeoutMs = app.config.mediaStoreTimeoutMs;
    proxy.set('stall');
    try {
      for (const method of ['GET', 'HEAD'] as const) {
        const started = performance.now();
        const r = await fetch(`${app.url}/api/image/${stored.body.id}?size=thumb`, { method });
        const ms = performance.now() - started;
        assert.equal(r.status, 503, method);
        if (method === 'GET') assert.equal(((await r.json()) as { error: string }).error, 'storage_unavailable');
        // One deadline for the whole request: a retry (or a second store call) after the first timeout would
        // take it to two. The bound is generous above one timeout and below two.
        assert.ok(ms < 1.8 * timeoutMs, `${method} answered after ${Math.round(ms)} ms; timeout ${timeoutMs} ms`);
      }
    } finally {
      proxy.set('pass');
    }
    assert.equal((await app.api.get(`/api/image/${stored.body.id}`)).status, 200);
  });

  test('a delete while the store is down takes the row away; the journal removes the objects later', async () => {
    const r = await uploadImage(app.api, token, await photo());
    assert.equal(r.status, 201, r.text);
    const key = (r.body.filename as string).replace(/\.webp$/, '');
    proxy.set('refuse');
    try {
      assert.equal((await app.api.del(`/api/upload/${r.body.id}`, { token })).status, 200);
      assert.equal((await app.api.get(`/api/upload/${r.body.id}`)).status, 404);
    } finally {
      proxy.set('pass');
    }
    assert.equal((await objectsOf(key)).length, 3, 'the objects outlived the failed removal');
    const pending = await app.composed.db.db().selectFrom('media_garbage').select('media_key').execute();
    assert.deepEqual(
      pending.map((p) => p.media_key),
      [key],
      'the deletion is pending in the journal',
    );
    // The sweep (at start-up and periodically) retries the journal.
    const sweeper = await startApp(
      bucket.env(),
      app.config.databaseUrl ? { databaseUrl: app.config.databaseUrl } : { sharedDataDir: app.config.dataDir },
    );
    await sweeper.close();
    assert.deepEqual(await objectsOf(key), []);
    assert.deepEqual(await app.composed.db.db().selectFrom('media_garbage').selectAll().execute(), []);
  });
});

/** Polls `check` until it holds; fails after 20 s, stretched by the machine's load. */
async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  await pollUntil(check, what, timeoutMs, 100);
}
