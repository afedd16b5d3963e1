/**
 * Several gateway processes sharing one PostgreSQL database, one Redis (under a prefix of their own) and one
 * DATA_DIR, started at once (they race for the migration lock): the multi-process tests' setup and teardown.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnServer, type ServerProcess } from './process.ts';
import { createTestDatabase } from './pg.ts';
import { onPostgres, TEST_REDIS_URL } from './env.ts';
import { dropRedisKeys, testRedisPrefix } from './redis.ts';

/** The skip reason of a test of several gateways on the SQLite pass (false on the PostgreSQL + Redis pass). */
export const clusterSkip =
  !onPostgres && 'several gateways share state through PostgreSQL + Redis (runs in the PostgreSQL + Redis pass)';

export interface Cluster {
  servers: ServerProcess[];
  databaseUrl: string;
  dataDir: string;
  /** SIGTERM to every process, then the database, the Redis keys and the data directory are dropped. */
  stop(): Promise<void>;
}

/** `count` gateways with `env` (WORKERS=1, HUMAN_POLICY=off unless it says otherwise) on fresh shared state. */
export async function startCluster(name: string, env: Record<string, string>, count = 3): Promise<Cluster> {
  const dataDir = await mkdtemp(join(tmpdir(), `pixvote-${name}-`));
  // Empty: the gateways race for the migration lock and one of them migrates.
  const database = await createTestDatabase({ empty: true });
  const shared = {
    DATA_DIR: dataDir,
    DATABASE_URL: database.url,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: testRedisPrefix(),
    WORKERS: '1',
    HUMAN_POLICY: 'off',
    ...env,
  };
  const servers = await Promise.all(Array.from({ length: count }, () => spawnServer(shared)));
  return {
    servers,
    databaseUrl: database.url,
    dataDir,
    async stop() {
      for (const s of servers) s.kill('SIGTERM');
      await Promise.all(servers.map((s) => s.exited));
      await database.drop();
      await dropRedisKeys(shared.REDIS_PREFIX);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
