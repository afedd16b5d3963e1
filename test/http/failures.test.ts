import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer as createTcpServer, connect, type Server, type Socket } from 'node:net';
import { once } from 'node:events';
import { startApp } from '../support/app.ts';
import { registerUser } from '../support/users.ts';
import { uploadFields, uploadImage } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres, TEST_PG_URL } from '../support/env.ts';
import { pollUntil, until as waitFor } from '../support/budget.ts';

const REDIS_SERVER = '/usr/bin/redis-server';

async function freePort(): Promise<number> {
  const s = createTcpServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address() as { port: number };
  s.close();
  return port;
}

async function startRedis(port: number): Promise<ChildProcess> {
  const p = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const answers = () =>
    new Promise<boolean>((r) => {
      const c = connect(port, '127.0.0.1', () => (c.end(), r(true)));
      c.on('error', () => r(false));
    });
  await pollUntil(answers, 'redis-server to listen', 5_000, 100);
  return p;
}

/** Polls `fn` until it holds; fails after `ms`, stretched by the machine's load (test/support/budget.ts). */
async function until(what: string, fn: () => Promise<boolean>, ms = 20_000): Promise<void> {
  await pollUntil(fn, what, ms, 200);
}

test(
  'Redis down: auth limits still enforced in memory, reads keep working, /readyz names Redis; recovery without restart',
  { skip: !existsSync(REDIS_SERVER) && `${REDIS_SERVER} not installed` },
  async () => {
    const port = await freePort();
    let redis = await startRedis(port);
    const app = await startApp({ REDIS_URL: `redis://127.0.0.1:${port}`, RATE_LIMIT_AUTH: '3/15m' });
    try {
      const u = await registerUser(app.api);
      await uploadFields(app.api, u.token, { upload_type: 'link', external_url: 'https://example.com/r' });
      assert.equal((await app.api.get('/readyz')).status, 200);

      redis.kill('SIGKILL');
      await once(redis, 'exit');
      // Still serving on the in-process fallbacks: ready, but degraded (API.md Operations).
      await until('readyz to report redis down', async () => (await app.api.get('/readyz')).body.status === 'degraded');
      const ready = await app.api.get('/readyz');
      assert.equal(ready.status, 200);
      assert.equal(ready.body.checks.redis.status, 'down');
      assert.equal(ready.body.checks.database.status, 'ok');
      assert.equal((await app.api.get('/api/uploads')).status, 200, 'reads keep working');
      assert.equal((await app.api.get('/api/profile', { token: u.token })).status, 200);
      // The auth limit (3, one already spent by the registration) holds through the insurance limiter.
      const tries = [];
      for (let i = 0; i < 4; i++)
        tries.push(
          (await app.api.post('/api/auth', { action: 'login', username: u.username, password: 'wrong-password' }))
            .status,
        );
      assert.ok(tries.includes(429), `auth limit enforced while Redis is down: ${tries}`);

      redis = await startRedis(port);
      await until('readyz to recover', async () => (await app.api.get('/readyz')).body.status === 'ok');
      assert.equal(
        (await uploadFields(app.api, u.token, { upload_type: 'link', external_url: 'https://example.com/r2' })).status,
        201,
      );
    } finally {
      await app.close();
      redis.kill('SIGKILL');
    }
  },
);

/** A TCP proxy in front of PostgreSQL that the test can cut and restore. */
async function pgProxy(target: URL) {
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  const port = await freePort();
  const up = async () => {
    server = createTcpServer((client) => {
      const upstream = connect(Number(target.port || 5432), target.hostname);
      sockets.add(client).add(upstream);
      client.pipe(upstream).pipe(client);
      const drop = () => (client.destroy(), upstream.destroy());
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
    }).listen(port, '127.0.0.1');
    await once(server, 'listening');
  };
  const down = async () => {
    for (const s of sockets) s.destroy();
    sockets.clear();
    await new Promise((r) => server!.close(r));
  };
  await up();
  return { port, up, down };
}

test(
  'PostgreSQL down: 503 with Retry-After (never a 500 or a hang), /readyz 503; recovery without restart',
  { skip: !onPostgres && 'PostgreSQL only (PostgreSQL + Redis pass)' },
  async () => {
    const database = await createTestDatabase();
    const url = new URL(database.url);
    const proxy = await pgProxy(new URL(TEST_PG_URL));
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    const app = await startApp({}, { databaseUrl: url.toString() });
    try {
      const u = await registerUser(app.api);
      assert.equal((await app.api.get('/api/uploads')).status, 200);
      await proxy.down();
      const started = Date.now();
      for (const r of [
        await app.api.get(`/api/upload/00000000-0000-4000-8000-000000000000`),
        await app.api.post(
          '/api/vote',
          { uploadId: '00000000-0000-4000-8000-000000000000', vote: 'fucks' },
          { token: u.token },
        ),
        await app.api.get('/api/profile', { token: u.token }),
      ]) {
        assert.equal(r.status, 503, r.text);
        assert.equal(r.body.error, 'busy');
        assert.match(r.body.message, /database/);
        assert.ok(Number(r.headers.get('retry-after')) >= 1);
      }
      assert.ok(Date.now() - started < 30_000, 'answered promptly, no hang');
      const ready = await app.api.get('/readyz');
      assert.equal(ready.status, 503);
      assert.match(ready.body.message, /database/);
      await proxy.up();
      await until('the database to be usable again', async () => (await app.api.get('/readyz')).status === 200);
      assert.equal((await app.api.get('/api/profile', { token: u.token })).status, 200);
    } finally {
      await app.close();
      await proxy.down().catch(() => {});
      await database.drop();
    }
  },
);

test('a worker thread that crashes fails only its own request, and is replaced', async () => {
  // Detection on (flag) makes each task long enough to catch it running.
  const app = await startApp({ WORKERS: '1', WORKER_QUEUE: '4', HUMAN_POLICY: 'flag' });
  try {
    const u = await registerUser(app.api);
    const images = await Promise.all(
      [1501, 1503].map((seed) => photoJpeg({ width: 4000, height: 3000, seed, metadata: false })),
    );
    // Two uploads, one thread: once one waits in the queue, the other is certainly running. Which of the
    // two reaches the pool first is up to the network, so the test does not assume it.
    const uploads = images.map((image) => uploadImage(app.api, u.token, image));
    await waitFor(() => app.composed.pool.stats().queueSize === 1, 5);
    assert.equal(app.composed.pool.stats().queueSize, 1, 'one upload queued behind the other');
    await app.composed.pool.threads()[0]!.terminate();
    const answers = await Promise.all(uploads);
    const failed = answers.filter((a) => a.status === 500);
    const created = answers.filter((a) => a.status === 201);
    assert.equal(
      failed.length,
      1,
      `exactly the running upload failed (statuses ${answers.map((a) => a.status).join(', ')})`,
    );
    assert.deepEqual(Object.keys(failed[0]!.body).sort(), ['error', 'message']);
    assert.equal(failed[0]!.body.error, 'internal');
    assert.equal(created.length, 1, 'the queued upload ran on the replacement thread');
    assert.equal(app.composed.pool.stats().threads, 1);
  } finally {
    await app.close();
  }
});
