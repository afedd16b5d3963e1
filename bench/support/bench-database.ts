/**
 * Throw-away databases for benchmarks: a temp DATA_DIR with its SQLite file, or a fresh PostgreSQL database
 * (`pv_bench_*`, dropped afterwards) plus a Redis key prefix (deleted afterwards).
 * BENCH_DATABASE_URL and BENCH_REDIS_URL override the defaults of the development and CI machines.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { postgresUnreachable, redisUnreachable } from '../../test/support/services.ts';
import { Redis } from 'ioredis';
import { openDatabase, type Database } from '../../src/store/database.ts';

export const BENCH_PG_URL =
  process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const BENCH_REDIS_URL = process.env.BENCH_REDIS_URL ?? process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export type DbKind = 'sqlite' | 'postgres';

export interface BenchDatabase {
  kind: DbKind;
  /** DATA_DIR of the app: media files, and the SQLite file on SQLite. */
  dataDir: string;
  databaseUrl: string | null;
  /** DATA_DIR, and DATABASE_URL + REDIS_URL + REDIS_PREFIX on PostgreSQL. */
  env: Record<string, string>;
  open(): Promise<Database>;
  /** Removes everything it made: the data directory, its Redis keys, its database. */
  dispose(): Promise<void>;
  /** As dispose(), but a PostgreSQL database stays (bench:scale --keep), to be measured again with --large-url. */
  keep(): Promise<void>;
}

/** Null when PostgreSQL and Redis answer; otherwise why not. */
export async function postgresUnavailable(): Promise<string | null> {
  return (await postgresUnreachable(BENCH_PG_URL)) ?? (await redisUnreachable(BENCH_REDIS_URL));
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: BENCH_PG_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A PostgreSQL database seeded earlier (bench:scale --keep), used as it is and never dropped. */
export async function existingBenchDatabase(databaseUrl: string): Promise<BenchDatabase> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'pixvote-bench-'));
  const prefix = `pvbench:${randomBytes(4).toString('hex')}:`;
  const release = releaser(dataDir, prefix);
  return {
    kind: 'postgres',
    dataDir,
    databaseUrl,
    env: { DATA_DIR: dataDir, DATABASE_URL: databaseUrl, REDIS_URL: BENCH_REDIS_URL, REDIS_PREFIX: prefix },
    open: () => openDatabase({ databaseUrl, sqlitePath: path.join(dataDir, 'app.db'), queryTimeoutMs: 0 }),
    dispose: release,
    keep: release,
  };
}

export async function createBenchDatabase(kind: DbKind): Promise<BenchDatabase> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'pixvote-bench-'));
  const sqlitePath = path.join(dataDir, 'app.db');
  if (kind === 'sqlite') {
    return {
      kind,
      dataDir,
      databaseUrl: null,
      env: { DATA_DIR: dataDir },
      open: () => openDatabase({ databaseUrl: null, sqlitePath }),
      dispose: releaser(dataDir),
      keep: releaser(dataDir),
    };
  }
  const name = `pv_bench_${process.pid}_${randomBytes(4).toString('hex')}`;
  await admin((c) => c.query(`create database ${name}`));
  const url = new URL(BENCH_PG_URL);
  url.pathname = `/${name}`;
  const prefix = `pvbench:${randomBytes(4).toString('hex')}:`;
  const release = releaser(dataDir, prefix);
  return {
    kind,
    dataDir,
    databaseUrl: url.toString(),
    env: { DATA_DIR: dataDir, DATABASE_URL: url.toString(), REDIS_URL: BENCH_REDIS_URL, REDIS_PREFIX: prefix },
    // No query timeout: a seed's 10k-row insert can outlast the app's 10 s on a busy machine.
    open: () => openDatabase({ databaseUrl: url.toString(), sqlitePath, queryTimeoutMs: 0 }),
    async dispose() {
      await admin((c) => c.query(`drop database if exists ${name} with (force)`));
      await release();
    },
    keep: release,
  };
}

/** Removes what a bench database leaves beside its database: the data directory, and its Redis keys if any. */
function releaser(dataDir: string, redisPrefix?: string): () => Promise<void> {
  return async () => {
    if (redisPrefix) await deleteRedisPrefix(redisPrefix);
    await rm(dataDir, { recursive: true, force: true });
  };
}

async function deleteRedisPrefix(prefix: string): Promise<void> {
  const r = new Redis(BENCH_REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length) await r.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
}
