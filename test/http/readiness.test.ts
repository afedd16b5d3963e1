/**
 * GET /readyz per API.md Operations: 200 `degraded` while Redis is configured but down and the in-process
 * fallbacks serve; 503 only when the service cannot serve (database, workers, media store).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import { startApp } from '../support/app.ts';
import { registerUser } from '../support/users.ts';
import { uploadFields } from '../support/uploads.ts';
import { onPostgres } from '../support/env.ts';

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = createServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test(
  'Redis configured but down: /readyz 200 degraded naming Redis, and the service serves; no media store: 503',
  { skip: !onPostgres && 'PostgreSQL + Redis profile' },
  async () => {
    const app = await startApp({ REDIS_URL: `redis://127.0.0.1:${await closedPort()}` });
    try {
      const ready = await app.api.get('/readyz');
      assert.equal(ready.status, 200, ready.text);
      assert.equal(ready.body.status, 'degraded');
      assert.equal(ready.body.checks.redis.status, 'down');
      for (const name of ['database', 'workers', 'media']) assert.equal(ready.body.checks[name].status, 'ok', name);
      assert.equal(ready.headers.get('retry-after'), null);

      // It does serve: accounts, writes, reads.
      const u = await registerUser(app.api);
      assert.equal(
        (await uploadFields(app.api, u.token, { upload_type: 'link', external_url: 'https://example.com/degraded' }))
          .status,
        201,
      );
      assert.equal((await app.api.get('/api/uploads')).status, 200);

      // Without its media directory the service cannot store or serve images: not ready.
      const media = join(app.config.dataDir, 'media');
      await rename(media, `${media}.gone`);
      try {
        await sleep(1100); // past the shared result of the last check
        const gone = await app.api.get('/readyz');
        assert.equal(gone.status, 503, gone.text);
        assert.equal(gone.body.error, 'busy');
        assert.equal(gone.body.status, 'down');
        assert.match(gone.body.message, /media/);
        assert.equal(gone.body.checks.media.status, 'down');
        assert.ok(Number(gone.headers.get('retry-after')) >= 1);
      } finally {
        await rename(`${media}.gone`, media);
      }
      await sleep(1100);
      assert.equal((await app.api.get('/readyz')).body.status, 'degraded');
    } finally {
      await app.close();
    }
  },
);

test('every dependency up: /readyz 200 ok with the database, workers, media (and Redis when configured)', async () => {
  const app = await startApp();
  try {
    const ready = await app.api.get('/readyz');
    assert.equal(ready.status, 200);
    assert.equal(ready.body.status, 'ok');
    const expected = ['database', 'media', 'workers', ...(app.config.redisUrl ? ['redis'] : [])].sort();
    assert.deepEqual(Object.keys(ready.body.checks).sort(), expected);
    for (const name of expected) assert.equal(ready.body.checks[name].status, 'ok', name);
  } finally {
    await app.close();
  }
});
