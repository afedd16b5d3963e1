/**
 * The container's start command, run in the checkout as the image runs it: the Dockerfile's CMD argv and runtime
 * ENV, a fresh DATA_DIR, PORT=0, on SQLite and (second pass) PostgreSQL + Redis. It serves, its HEALTHCHECK probe
 * passes against it and fails once it is gone, and SIGTERM to it (PID 1 in the container) drains it to exit 0.
 * The built image itself, its files and its user are checked by scripts/container-check.sh (a step of .ci/run).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnServer } from '../support/process.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres, TEST_REDIS_URL } from '../support/env.ts';
import { dropRedisKeys, testRedisPrefix } from '../support/redis.ts';
import { dockerfile, envOf, execForm, ROOT, startArgv } from '../support/start-command.ts';

const instructions = dockerfile();
const runtime = Math.max(...instructions.map((i) => i.stage));
const last = (keyword: string) => instructions.filter((i) => i.keyword === keyword && i.stage === runtime).at(-1)!;

/**
 * Runs the HEALTHCHECK probe to its end (it ends by itself: an answer, or a refused connection). No budget of its
 * own (Docker's 5 s is the container's business): on a busy machine a probe is slower, not failed.
 */
async function probe(argv: string[], port: number): Promise<number | null> {
  const [, ...args] = argv;
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port) },
    stdio: 'ignore',
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  return code;
}

test("the Dockerfile's CMD (npm start's node command line) serves /healthz; the HEALTHCHECK probe agrees", async () => {
  const cmd = execForm(last('CMD').args)!;
  assert.deepEqual(cmd, startArgv(), 'the image runs what npm start runs');
  const healthcheck = execForm(last('HEALTHCHECK').args.replace(/^.*?\bCMD\s+/, ''))!;
  assert.equal(healthcheck[0], 'node');

  const dataDir = await mkdtemp(join(tmpdir(), 'pixvote-container-'));
  const database = onPostgres ? await createTestDatabase() : null;
  const redisPrefix = testRedisPrefix();
  const env: Record<string, string> = {
    ...envOf(instructions, runtime), // NODE_ENV=production, MALLOC_ARENA_MAX=2, …
    DATA_DIR: dataDir,
    PORT: '0',
    JWT_SECRET: 'container-start-test-secret-0123456789abcdef',
    ...(database ? { DATABASE_URL: database.url, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: redisPrefix } : {}),
  };
  assert.equal(env.NODE_ENV, 'production');
  const server = await spawnServer(env, { argv: cmd });
  try {
    const health = await server.api.get('/healthz');
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, { status: 'ok' });
    const port = Number(new URL(server.url).port);
    assert.equal(await probe(healthcheck, port), 0, 'HEALTHCHECK passes against the running server');

    server.kill('SIGTERM');
    const exit = await server.exited;
    assert.equal(exit.code, 0, 'SIGTERM drains the server to exit 0');
    assert.ok(
      server.logs.some((l) => l.msg === 'closed'),
      'a graceful shutdown',
    );
    assert.equal(await probe(healthcheck, port), 1, 'HEALTHCHECK fails once nothing serves');
  } finally {
    server.kill('SIGKILL');
    await server.exited;
    await database?.drop();
    if (database) await dropRedisKeys(redisPrefix);
    await rm(dataDir, { recursive: true, force: true });
  }
});
