import { test } from 'node:test';
import { request } from 'node:http';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, createServer as createNetServer } from 'node:net';
import { once } from 'node:events';
import { startApp } from '../support/app.ts';
import { spawnServer } from '../support/process.ts';
import { registerUser } from '../support/users.ts';
import { diskStateOf, uploadFields, uploadImage } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres, TEST_REDIS_URL } from '../support/env.ts';
import { dropRedisKeys, testRedisPrefix } from '../support/redis.ts';

async function serverEnv() {
  const dataDir = await mkdtemp(join(tmpdir(), 'pixvote-proc-'));
  const database = onPostgres ? await createTestDatabase() : null;
  const redisPrefix = testRedisPrefix();
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    WORKERS: '1',
    WORKER_QUEUE: '20',
    HUMAN_POLICY: 'off',
    RATE_LIMIT_AUTH: '1000/15m',
    RATE_LIMIT_UPLOAD: '1000/1h',
    // PROCESSES=2: a dead gateway process is replaced after 50 ms, 100 ms, 200 ms … instead of 1 s, 2 s, 4 s …
    // (the crash loop below is its 5th death within 60 s, however long the backoff).
    PROCESS_RESTART_DELAY_MS: '50',
    ...(database ? { DATABASE_URL: database.url, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: redisPrefix } : {}),
  };
  return {
    env,
    dataDir,
    async cleanup() {
      await database?.drop();
      if (database) await dropRedisKeys(redisPrefix);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

const listening = (l: Record<string, unknown>) => l.msg === 'pixvote listening';

test(
  'SIGTERM with uploads in flight: each completes (201) or is refused cleanly (503 busy / connection refused); ' +
    'exit 0; nothing staged',
  async () => {
    const { env, dataDir, cleanup } = await serverEnv();
    try {
      const server = await spawnServer({ ...env, SHUTDOWN_GRACE_MS: '30000' });
      const user = await registerUser(server.api);
      // 2 MP each (12 MP before): with one worker thread the last ones are still queued when SIGTERM comes, and
      // the graceful drain no longer spends most of the test resizing.
      const images = await Promise.all(
        Array.from({ length: 6 }, (_, i) => photoJpeg({ width: 1600, height: 1200, seed: 1100 + i, metadata: false })),
      );
      const inFlight = images.map((img) =>
        uploadImage(server.api, user.token, img).then(
          (r) => ({ status: r.status, body: r.body }),
          (e: Error) => ({ status: -1, body: { error: String((e.cause as Error | undefined) ?? e) } }),
        ),
      );
      // SIGTERM once the server has received every upload's body (each observed as the `hash` stage, the SHA-256
      // computed as the body arrives), however loaded the machine is: none is then still on its way in, where the
      // close of a connection the server saw no request on yet would meet it as a reset.
      const received = async () =>
        Number(
          /^pixvote_pipeline_stage_duration_seconds_count\{stage="hash"\} (\d+)$/m.exec(
            (await server.api.get('/metrics')).text,
          )?.[1] ?? 0,
        );
      while ((await received()) < images.length) await new Promise((r) => setTimeout(r, 50));
      server.kill('SIGTERM');
      // The server has stopped listening once it says it is shutting down (it closes in the same tick).
      await server.logged((l) => String(l.msg).startsWith('shutting down'));
      // A new client after SIGTERM, on a new connection (a request racing the close of an idle keep-alive
      // connection can meet a reset: that is HTTP/1.1, not the server; clients retry those).
      const late = await new Promise<{ status: number; body: { error: string } }>((resolve) => {
        const req = request(
          `${server.url}/api/v1/upload`,
          { method: 'POST', agent: false, headers: { authorization: `Bearer ${user.token}` } },
          (res) => {
            let text = '';
            res
              .on('data', (d) => (text += d))
              .on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text || '{}') }));
          },
        );
        req.on('error', (e) => resolve({ status: -1, body: { error: e.message } }));
        req.end();
      });
      const results = await Promise.all(inFlight);
      const exit = await server.exited;
      assert.equal(exit.code, 0, 'exits 0 after a graceful shutdown');
      for (const r of [...results, late]) {
        const clean =
          r.status === 201 ||
          (r.status === 503 && r.body.error === 'busy') ||
          (r.status === -1 && /ECONNREFUSED/.test(r.body.error));
        assert.ok(clean, `answered ${r.status} ${JSON.stringify(r.body)}`);
      }
      assert.ok(
        results.some((r) => r.status === 201),
        'in-flight uploads were allowed to finish',
      );
      assert.notEqual(late.status, 201, 'a new upload after SIGTERM is refused');
      const disk = await diskStateOf(dataDir);
      assert.deepEqual(disk.staging, [], 'nothing left in staging');
      assert.deepEqual(disk.tmp, [], 'no temp file left');
      assert.equal(disk.media.length, 3 * results.filter((r) => r.status === 201).length);
    } finally {
      await cleanup();
    }
  },
);

test(
  'while shutting down, an upload refused mid-body is read to its end, ' +
    'so its client reads 503 busy instead of a reset',
  async () => {
    const app = await startApp();
    try {
      const user = await registerUser(app.api);
      app.composed.drain();
      const socket = connect(Number(new URL(app.url).port), '127.0.0.1');
      await once(socket, 'connect');
      let answer = '';
      let failure: Error | null = null;
      socket.setEncoding('latin1').on('data', (d: string) => (answer += d));
      socket.on('error', (e) => (failure = e));
      // The answer is whole once the server ends its side (or the connection closes, on an error).
      const ended = new Promise((resolve) => socket.once('end', resolve).once('close', resolve));
      const total = 8 * 1024 * 1024;
      socket.write(
        `POST /api/v1/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${user.token}\r\n` +
          `Content-Type: multipart/form-data; boundary=b\r\nContent-Length: ${total}\r\n\r\n`,
      );
      // The body keeps coming well after the server decided to refuse it.
      const chunk = Buffer.alloc(256 * 1024, 0x61);
      for (let sent = 0; sent < total && !failure; sent += chunk.length) {
        if (!socket.write(chunk)) await once(socket, 'drain');
        await new Promise((r) => setTimeout(r, 10));
      }
      await ended;
      assert.equal(failure, null, 'the client could send its whole body');
      assert.match(answer, /^HTTP\/1\.1 503 /);
      assert.match(answer, /"error":"busy"/);
      assert.match(answer, /connection: close/i);
      socket.destroy();
    } finally {
      await app.close();
    }
  },
);

test(
  'PROCESSES=2: one port served by two gateway processes, metrics aggregated, a dead process replaced, ' +
    'SIGTERM stops all',
  async () => {
    const { env, cleanup } = await serverEnv();
    try {
      const server = await spawnServer({ ...env, PROCESSES: '2' });
      // Wait until both processes listen (each logs "pixvote listening").
      await server.logged(listening, 2);
      const pids = new Set(server.logs.filter((l) => l.msg === 'pixvote listening').map((l) => l.pid));
      assert.equal(pids.size, 2);
      for (let i = 0; i < 10; i++) assert.equal((await server.api.get('/healthz')).status, 200);
      const metrics = await server.api.get('/metrics');
      assert.equal(metrics.status, 200);
      assert.match(metrics.text, /^pixvote_pool_threads 2$/m, 'the pool gauge is summed over both processes');
      // Kill one gateway process: the primary starts another.
      process.kill(Number([...pids][0]), 'SIGKILL');
      await server.logged(listening, 3);
      assert.equal(server.logs.filter((l) => l.msg === 'pixvote listening').length, 3, 'a replacement process started');
      assert.equal((await server.api.get('/healthz')).status, 200);
      server.kill('SIGTERM');
      assert.equal((await server.exited).code, 0);
    } finally {
      await cleanup();
    }
  },
);

const listeningPids = (server: { logs: Array<Record<string, unknown>> }) =>
  server.logs.filter(listening).map((l) => Number(l.pid));

/** GET /healthz on a fresh connection (asked once the processes listen: it is answered, however slowly). */
function healthzOnce(base: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(`${base}/healthz`, { agent: false, headers: { connection: 'close' } }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.end();
  });
}

async function freePort(): Promise<number> {
  const probe = createNetServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as { port: number };
  await new Promise((r) => probe.close(r));
  return port;
}

/** The processes `pid` has forked (Linux lists a thread's children; the cluster primary forks from its main one). */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

test('PROCESSES=2: kill -9 every gateway process and the primary starts new ones; a crash loop exits 1', async () => {
  const { env, cleanup } = await serverEnv();
  // A fixed port: with PORT=0 the replacements of a cluster that lost every process would get a new random one.
  const server = await spawnServer({ ...env, PROCESSES: '2', PORT: String(await freePort()) });
  try {
    await server.logged(listening, 2);
    const first = listeningPids(server);
    for (const pid of first) process.kill(pid, 'SIGKILL');
    // Replacements announce themselves; then the port serves again.
    await server.logged(listening, first.length + 2);
    assert.ok(await healthzOnce(server.url), '/healthz answers again once the replacements listen');
    assert.equal(server.proc.exitCode, null, 'the primary is still running');
    assert.ok(
      server.logs.some((l) => l.msg === 'gateway process died; starting another' && typeof l.restartInMs === 'number'),
      'each restart is logged with its backoff',
    );

    // Keep killing whatever starts, as soon as it is forked (no need to wait for it to listen): each slot
    // reaches 5 deaths within 60 s, and the primary gives up with a non-zero status.
    const primary = server.proc.pid!;
    const killed = new Set(first);
    const killer = setInterval(() => {
      for (const pid of [...listeningPids(server), ...childrenOf(primary)]) {
        if (killed.has(pid)) continue;
        killed.add(pid);
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }, 50);
    try {
      const exit = await server.exited;
      assert.equal(exit.code, 1, 'the primary exits 1 on a crash loop');
      assert.ok(
        server.logs.some((l) => String(l.msg).includes('crash loop')),
        'the crash loop is logged',
      );
    } finally {
      clearInterval(killer);
    }
  } finally {
    server.kill('SIGKILL');
    await cleanup();
  }
});

/** One request on a connection of its own: the cluster primary hands each new connection to the next process. */
function onNewConnection(
  base: string,
  method: string,
  path: string,
  opts: { token?: string; json?: unknown } = {},
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const body = opts.json === undefined ? undefined : JSON.stringify(opts.json);
    const req = request(base + path, {
      method,
      agent: false,
      headers: {
        connection: 'close',
        ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString() || 'null') }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

test(
  'PROCESSES=2 without Redis: ' + 'a write through one process shows at once through the other, and limits count both',
  async () => {
    const { env, cleanup } = await serverEnv();
    delete env.REDIS_URL;
    delete env.REDIS_PREFIX;
    const server = await spawnServer({
      ...env,
      PROCESSES: '2',
      LOG_LEVEL: 'debug',
      RATE_LIMIT_GENERAL: '200/15m',
      RATE_LIMIT_VOTE: '1000/1h',
    });
    try {
      await server.logged(listening, 2);
      const user = await registerUser(server.api);
      const link = await uploadFields(server.api, user.token, {
        upload_type: 'link',
        external_url: 'https://example.com/two-processes',
      });
      assert.equal(link.status, 201);
      // A vote flipped on one connection, then read at once on the next (the next process): on a sort=new page
      // (recounted from the cache) 40 times, on a score-sorted one (dropped by the vote's scopes) 20 times.
      for (const [listing, flips] of [
        ['/api/uploads', 40],
        ['/api/uploads?sort=top', 20],
      ] as const) {
        for (let i = 0; i < flips; i++) {
          const voted = await onNewConnection(server.url, 'POST', '/api/vote', {
            token: user.token,
            json: { uploadId: link.body.id, vote: i % 2 ? 'none' : 'fucks' },
          });
          assert.equal(voted.status, 200);
          const read = await onNewConnection(server.url, 'GET', listing);
          assert.equal(read.body.uploads[0].upvotes, i % 2 ? 0 : 1, `flip ${i} shows at once on ${listing}`);
        }
      }
      const pidsOf = (route: string) =>
        new Set(server.logs.filter((l) => l.msg === 'request' && l.route === route).map((l) => l.pid));
      const voters = pidsOf('/api/vote');
      assert.ok(
        [...pidsOf('/api/uploads')].some((pid) => !voters.has(pid)),
        'reads were answered by a process no vote went through',
      );
      // The general limit (200 per IP) is one budget: 121 spent above (the upload, 60 votes, 60 reads).
      const statuses: number[] = [];
      for (let i = 0; i < 150; i++) statuses.push((await onNewConnection(server.url, 'GET', '/api/uploads')).status);
      assert.equal(statuses.filter((s) => s === 200).length, 200 - 121);
      assert.equal(statuses.filter((s) => s === 429).length, 150 - (200 - 121));
      server.kill('SIGTERM');
      assert.equal((await server.exited).code, 0);
    } finally {
      server.kill('SIGKILL');
      await cleanup();
    }
  },
);

test(
  'npm start (the README command) stops cleanly on SIGTERM and on SIGINT: the server drains and exits, ' +
    'nothing keeps serving',
  async () => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      const { env, cleanup } = await serverEnv();
      const server = await spawnServer(env, { via: 'npm-start' });
      try {
        assert.equal((await server.api.get('/healthz')).status, 200);
        server.kill(signal);
        const exit = await server.exited;
        assert.equal(exit.code, 0, `npm start exits 0 after ${signal}`);
        assert.ok(
          server.logs.some((l) => l.msg === 'closed'),
          `the server itself shut down gracefully on ${signal}`,
        );
        // An orphaned server would still answer on its port.
        const after = await server.api.get('/healthz').then(
          (r) => `answered ${r.status}`,
          (e: Error) => String((e.cause as Error | undefined)?.message ?? e.message),
        );
        assert.match(after, /ECONNREFUSED/, `nothing serves after ${signal}`);
      } finally {
        server.kill('SIGKILL');
        await cleanup();
      }
    }
  },
);
