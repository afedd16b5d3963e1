/**
 * Idempotency-Key claims as leases, through real server processes: a process killed while it holds a key
 * blocks a retry only for a lease (seconds, not minutes), and a live holder keeps its key however long the
 * work takes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnServer, type ServerProcess } from '../support/process.ts';
import { registerUser } from '../support/users.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres, TEST_REDIS_URL } from '../support/env.ts';
import { dropRedisKeys, testRedisPrefix } from '../support/redis.ts';
import type { Client } from '../support/http.ts';
import { openDatabase } from '../../src/store/database.ts';
import { IDEMPOTENCY_LEASE_MS } from '../../src/domain/idempotency.ts';

/** An image server on loopback whose answers the test holds back: `hold` decides per request. */
async function imageServer(jpeg: Buffer) {
  const held: ServerResponse[] = [];
  let arrived!: () => void;
  const s = {
    hits: 0,
    /** null: answer at once; a number: answer after that many ms; 'never': keep the request open. */
    hold: null as number | 'never' | null,
    /** Resolves when the first request for the image arrives. */
    arrived: new Promise<void>((r) => (arrived = r)),
    url: '',
    close: () => {
      for (const r of held) r.destroy();
      server.closeAllConnections();
      server.close();
    },
  };
  const server = createServer((_req, res) => {
    s.hits++;
    arrived();
    const answer = () => {
      res.writeHead(200, { 'content-type': 'image/jpeg' });
      res.end(jpeg);
    };
    if (s.hold === 'never') held.push(res);
    else if (s.hold === null) answer();
    else setTimeout(answer, s.hold);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  s.url = `http://127.0.0.1:${(server.address() as { port: number }).port}/photo.jpg`;
  return s;
}

interface Scenario {
  images: Awaited<ReturnType<typeof imageServer>>;
  /** Starts a server process on this scenario's DATA_DIR and database (again after a crash). */
  start(): Promise<ServerProcess>;
  /** Stops the server with SIGTERM (it drains and exits 0) and lists the upload rows it left. */
  stop(): Promise<string[]>;
}

/** One data directory, database and image server for `fn`, all removed afterwards. */
async function scenario(seed: number, fn: (t: Scenario) => Promise<void>) {
  const dataDir = await mkdtemp(join(tmpdir(), 'pixvote-idem-lease-'));
  const database = onPostgres ? await createTestDatabase() : null;
  const images = await imageServer(await photoJpeg({ width: 640, height: 480, seed }));
  const env = {
    DATA_DIR: dataDir,
    WORKERS: '1',
    HUMAN_POLICY: 'off',
    FETCH_ALLOW_PRIVATE: 'true',
    FETCH_TIMEOUT_MS: '120000',
    RATE_LIMIT_AUTH: '1000/15m',
    RATE_LIMIT_UPLOAD: '1000/1h',
    ...(database
      ? {
          DATABASE_URL: database.url,
          REDIS_URL: TEST_REDIS_URL,
          REDIS_PREFIX: testRedisPrefix(),
        }
      : {}),
  };
  let server: ServerProcess | null = null;
  const uploadRows = async () => {
    const db = await openDatabase({ databaseUrl: database?.url ?? null, sqlitePath: join(dataDir, 'app.db') });
    try {
      return (await db.db().selectFrom('uploads').select('id').execute()).map((r) => r.id);
    } finally {
      await db.close();
    }
  };
  try {
    await fn({
      images,
      start: async () => (server = await spawnServer(env)),
      stop: async () => {
        server!.kill('SIGTERM');
        assert.equal((await server!.exited).code, 0);
        return uploadRows();
      },
    });
  } finally {
    const last = server as ServerProcess | null;
    if (last && last.proc.exitCode === null && last.proc.signalCode === null) last.kill('SIGKILL');
    await last?.exited;
    images.close();
    await database?.drop();
    if (env.REDIS_PREFIX) await dropRedisKeys(env.REDIS_PREFIX);
    await rm(dataDir, { recursive: true, force: true });
  }
}

function sendWithKey(api: Client, token: string, imageUrl: string, key: string) {
  const form = new FormData();
  form.append('upload_type', 'image_url');
  form.append('image_url', imageUrl);
  return api.post('/api/v1/upload', undefined, { token, raw: form, headers: { 'idempotency-key': key } });
}

test(
  'a process killed while it holds an Idempotency-Key: after a restart, ' +
    'a retry with that key waits until the dead claim lapses, then proceeds (201), and only once',
  async () => {
    await scenario(1313, async ({ images, start, stop }) => {
      let server = await start();
      const user = await registerUser(server.api);
      // The first attempt holds the key while its image fetch hangs; then its process dies.
      images.hold = 'never';
      void sendWithKey(server.api, user.token, images.url, 'crash-1').catch(() => {});
      await images.arrived; // the upload holds the key: it claims it before fetching
      server.kill('SIGKILL');
      await server.exited;
      images.hold = null;

      server = await start();
      // The client retries at once: the server waits until the dead process's claim lapses, then takes it over.
      const retry = await sendWithKey(server.api, user.token, images.url, 'crash-1');
      assert.equal(retry.status, 201, retry.text);
      assert.equal(
        retry.headers.get('idempotent-replayed'),
        null,
        'the retry ran: the first attempt had recorded nothing',
      );
      assert.equal(retry.body.source_url, images.url);

      const again = await sendWithKey(server.api, user.token, images.url, 'crash-1');
      assert.equal(again.status, 201);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(again.body.id, retry.body.id);
      assert.equal(images.hits, 2, 'the image was fetched by the dead attempt and the retry, not by the replay');
      assert.deepEqual(await stop(), [retry.body.id], 'one upload for the key');
    });
  },
);

test(
  'two live requests with one key whose work outlasts the lease: the holder keeps the key, ' +
    'one upload is created and the other request gets its answer',
  async () => {
    await scenario(1314, async ({ images, start, stop }) => {
      const server = await start();
      const user = await registerUser(server.api);
      // The image answers only after more than a lease: the holder must renew its claim meanwhile.
      // (Without renewals the waiting second request would take the key over a lease after the claim, 2 s before
      // the first one's answer, and fetch the image again.)
      images.hold = IDEMPOTENCY_LEASE_MS + 2000;
      const first = sendWithKey(server.api, user.token, images.url, 'live-1');
      await images.arrived; // the first request holds the key: it claims it before fetching
      const second = sendWithKey(server.api, user.token, images.url, 'live-1');
      const replies = await Promise.all([first, second]);
      assert.deepEqual(
        replies.map((r) => r.status),
        [201, 201],
        replies.map((r) => r.text).join('\n'),
      );
      assert.equal(replies[0].body.id, replies[1].body.id, 'both answers name the one upload');
      assert.deepEqual(
        replies.map((r) => r.headers.get('idempotent-replayed')),
        [null, 'true'],
        "the second request waited for the first one's answer",
      );
      assert.equal(images.hits, 1, 'the work ran once');
      assert.deepEqual(await stop(), [replies[0].body.id]);
    });
  },
);
