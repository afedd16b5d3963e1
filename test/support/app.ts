/**
 * Starts the real application (the same compose() as `npm start`) on an ephemeral port, on the
 * database this run targets, with its own DATA_DIR, Redis key prefix and PostgreSQL database.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../src/config.ts';
import type { Clock } from '../../src/domain/clock.ts';
import { compose, type Composed } from '../../src/main.ts';
import { createHttpServer, serverOptions, type HttpServerOptions } from '../../src/server.ts';
import { createTestDatabase } from './pg.ts';
import { TEST_REDIS_URL, onPostgres } from './env.ts';
import { dropRedisKeys, testRedisPrefix } from './redis.ts';
import { client, type Client } from './http.ts';

export interface TestApp {
  url: string;
  config: Config;
  composed: Composed;
  api: Client;
  server: Server;
  close(): Promise<void>;
}

/** Cheap password hashing for fixtures: the same path as production (the hash's format, the hashing pool, the decoy),
 * at N = 2⁴. The suite registers and logs in thousands of users: at 2¹⁰ (~1.7 ms a hash) they were a quarter of
 * votes.test.ts's CPU (8.0 → 6.1 s). One test proves the production cost separately. */
export const TEST_SCRYPT = { N: 2 ** 4, r: 8, p: 1 };

export async function startApp(
  env: Record<string, string> = {},
  opts: {
    productionScrypt?: boolean;
    sharedDataDir?: string;
    databaseUrl?: string;
    http?: HttpServerOptions;
    log?: Logger;
    /** The app's clock (votes, cursors, sessions…): a test that moves time passes its own. */
    clock?: Clock;
  } = {},
): Promise<TestApp> {
  const dataDir = opts.sharedDataDir ?? (await mkdtemp(join(tmpdir(), 'pixvote-test-')));
  const database = onPostgres && !opts.databaseUrl ? await createTestDatabase() : null;
  // A start that fails (a config error a test expects, say) leaves nothing behind either.
  const discard = async () => {
    await database?.drop();
    if (!opts.sharedDataDir) await rm(dataDir, { recursive: true, force: true });
  };
  let config: Config;
  let composed: Awaited<ReturnType<typeof compose>>;
  try {
    config = loadConfig({
      LOG_LEVEL: 'silent',
      DATA_DIR: dataDir,
      WORKERS: '1',
      HUMAN_POLICY: 'off',
      // Generous defaults so unrelated tests never trip a limit; limit tests set their own.
      RATE_LIMIT_AUTH: '1000/15m',
      RATE_LIMIT_GENERAL: '100000/15m',
      RATE_LIMIT_MEDIA: '100000/15m',
      RATE_LIMIT_UPLOAD: '1000/1h',
      RATE_LIMIT_VOTE: '100000/1h',
      MAX_CONNECTIONS_PER_IP: '1000',
      ...(opts.databaseUrl ? { DATABASE_URL: opts.databaseUrl } : database ? { DATABASE_URL: database.url } : {}),
      ...(onPostgres ? { REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: testRedisPrefix() } : {}),
      ...env,
    });
    // `log`: a test that reads the log lines passes its own logger.
    composed = await compose(config, {
      ...(opts.productionScrypt ? {} : { scrypt: TEST_SCRYPT }),
      ...(opts.log ? { log: opts.log } : {}),
      ...(opts.clock ? { clock: opts.clock } : {}),
    });
  } catch (e) {
    await discard();
    throw e;
  }
  // The server `npm start` runs (timeouts, answers to what fails below the app), not a bare one.
  const server = createHttpServer(composed.app.callback(), { ...serverOptions(composed), ...opts.http });
  // The server and the test's client share this process's event loop: a test that keeps the loop busy for a few
  // seconds (generating large fixtures on a loaded machine) lets both keep-alive timers expire together, the
  // client then writes its next request on a socket whose expired server timer fires next (ECONNRESET). The
  // client keeps an idle socket for the server's advertised timeout less 2 s: with 60 s instead of Node's 5 s,
  // no test idles a connection that long.
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    config,
    composed,
    api: client(url),
    server,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await composed.close();
      await database?.drop();
      // The app keeps some keys for good (the feed generation): a test's keys go with it.
      const { redisUrl, redisPrefix } = config;
      if (redisUrl && redisPrefix.startsWith('pvtest:')) await dropRedisKeys(redisPrefix, redisUrl);
      if (!opts.sharedDataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * The metrics as they are now, read from the registry itself: `GET /metrics` may answer a rendering up to a
 * second old (probes share one rendering per second), which is right for scrapers and wrong for a test
 * counting what one request just did.
 */
export function currentMetrics(app: TestApp): Promise<string> {
  return app.composed.metrics.registry.metrics();
}

/** How many times each pipeline stage has run (its duration histogram's count): what an upload cost the workers. */
export async function stageRuns(app: TestApp): Promise<{ decode: number; phash: number; encode: number }> {
  const text = await currentMetrics(app);
  const count = (stage: string) =>
    Number(
      new RegExp(`^pixvote_pipeline_stage_duration_seconds_count\\{stage="${stage}"\\} (\\d+)$`, 'm').exec(text)?.[1] ??
        0,
    );
  return { decode: count('decode'), phash: count('phash'), encode: count('encode') };
}
