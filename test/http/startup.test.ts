/**
 * Start-up when PostgreSQL is not up yet (a compose or systemd start order): the server waits for it,
 * retrying with backoff for DATABASE_WAIT_MS, instead of exiting at once.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, createServer, type Server } from 'node:net';
import { once } from 'node:events';
import { spawnServer } from '../support/process.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres } from '../support/env.ts';

const pgOnly = { skip: !onPostgres && 'PostgreSQL only (PostgreSQL + Redis pass)' };

/** A port nothing listens on yet; `open()` later forwards it to the real PostgreSQL. */
async function lateDatabase(realUrl: string): Promise<{ url: string; open(): Promise<void>; close(): void }> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as { port: number };
  await new Promise((r) => probe.close(r));
  const real = new URL(realUrl);
  const url = new URL(realUrl);
  url.host = `127.0.0.1:${port}`;
  let proxy: Server | null = null;
  return {
    url: url.toString(),
    async open() {
      proxy = createServer((client) => {
        const upstream = connect(Number(real.port || 5432), real.hostname);
        client.pipe(upstream).pipe(client);
        client.on('error', () => upstream.destroy());
        upstream.on('error', () => client.destroy());
      }).listen(port, '127.0.0.1');
      await once(proxy, 'listening');
    },
    close() {
      proxy?.close();
    },
  };
}

test(
  'PostgreSQL not up yet at start: the server retries (logged, with backoff) and serves once it answers',
  pgOnly,
  async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'pixvote-start-'));
    const database = await createTestDatabase();
    const late = await lateDatabase(database.url);
    try {
      // Let it find the database down twice (as its log says), then bring the database up.
      let retried = 0;
      let downTwice!: () => void;
      const seenTwice = new Promise<void>((r) => (downTwice = r));
      const onLog = (l: Record<string, unknown>) => {
        if (l.msg === 'the database does not answer yet; retrying' && ++retried === 2) downTwice();
      };
      const starting = spawnServer(
        { DATA_DIR: dataDir, DATABASE_URL: late.url, DATABASE_WAIT_MS: '60000', HUMAN_POLICY: 'off', WORKERS: '1' },
        { onLog },
      );
      await Promise.race([seenTwice, starting]); // (a server that exits instead fails the test here)
      await late.open();
      const server = await starting;
      try {
        const retries = server.logs.filter((l) => l.msg === 'the database does not answer yet; retrying');
        assert.ok(retries.length >= 2, `retried while the database was down (${retries.length} retries logged)`);
        assert.ok(
          retries.every((l, i) => i === 0 || Number(l.retryInMs) >= Number(retries[i - 1]!.retryInMs)),
          'the delay between retries grows',
        );
        assert.equal((await server.api.get('/readyz')).status, 200);
        server.kill('SIGTERM');
        assert.equal((await server.exited).code, 0);
      } finally {
        server.kill('SIGKILL');
      }
    } finally {
      late.close();
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  },
);

test(
  'a database that never answers: start-up gives up after DATABASE_WAIT_MS with one clear line and exit 1',
  pgOnly,
  async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'pixvote-start-'));
    const late = await lateDatabase('postgres://postgres@127.0.0.1:5432/test');
    try {
      const started = Date.now();
      const failure = await spawnServer({
        DATA_DIR: dataDir,
        DATABASE_URL: late.url,
        DATABASE_WAIT_MS: '2000',
        HUMAN_POLICY: 'off',
        WORKERS: '1',
      }).then(
        () => null,
        (e: Error) => e.message,
      );
      assert.ok(failure, 'the server did not start');
      assert.match(failure, /exited \(1\)/);
      assert.match(failure, /failed to start: .*ECONNREFUSED/);
      assert.ok(Date.now() - started >= 2000, 'it kept trying for DATABASE_WAIT_MS first');
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  },
);

test(
  'REDIS_URL refused at start: the "listening" line says the in-process fallbacks serve, not that Redis is in use',
  { skip: onPostgres && 'needs no database: the SQLite pass runs it' },
  async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'pixvote-start-'));
    const probe = createServer().listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const { port } = probe.address() as { port: number };
    await new Promise((r) => probe.close(r));
    try {
      const server = await spawnServer({
        DATA_DIR: dataDir,
        REDIS_URL: `redis://127.0.0.1:${port}`,
        HUMAN_POLICY: 'off',
        WORKERS: '1',
      });
      try {
        const listening = server.logs.find((l) => l.msg === 'pixvote listening');
        assert.ok(listening, 'logged "pixvote listening"');
        assert.notEqual(listening.redis, true);
        assert.match(String(listening.redis), /^configured but \w+: in-process limits and caches serve/);
        assert.equal((await server.api.get('/readyz')).body.status, 'degraded');
      } finally {
        server.kill('SIGKILL');
        await server.exited;
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  },
);
