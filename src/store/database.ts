/**
 * Opens the database the configuration names (SQLite in DATA_DIR by default, PostgreSQL for
 * `DATABASE_URL=postgres://…`), applies the migrations and exposes what the repositories need.
 * This folder is the only place that imports MikroORM.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { MikroORM } from '@mikro-orm/core';
import type { SqlEntityManager } from '@mikro-orm/sql';
import { Migrator } from '@mikro-orm/migrations';
import { Kysely, PostgresDialect, type CompiledQuery } from 'kysely';
import type { PostgreSqlConnection } from '@mikro-orm/postgresql';
import type { Pool, PoolClient } from 'pg';
import type { DB } from './database-types.ts';
import { ALL_ENTITIES } from './entities/index.ts';
import { MIGRATIONS } from './migrations/index.ts';
import { isDatabaseUnavailable, postgresDialect, sqliteDialect, type Dialect } from './dialect.ts';
import { nodeSqliteDialect } from './node-sqlite-dialect.ts';
import { readerKysely, SqliteReaders } from './sqlite-readers.ts';

export interface DatabaseOptions {
  /** `postgres://…`, or null for SQLite at `sqlitePath`. */
  databaseUrl: string | null;
  sqlitePath: string;
  /** PostgreSQL pool size per process. */
  poolSize?: number;
  /**
   * SQLite: threads that run `read()`'s queries, each on a read-only connection (sqlite-readers.ts); 0 (the
   * default): `read()` runs on the main connection, on the event loop (the CLI's commands, one-off scripts).
   */
  sqliteReaders?: number;
  /**
   * PostgreSQL: connections of a pool of their own that run `read()`'s queries; when all are busy a long read waits
   * for one, so at most this many run at once per process (each deep listing is a backend busy on the CPU the
   * gateway needs too). 0 (the default): `read()` shares the main pool.
   */
  pgReaders?: number;
  /**
   * PostgreSQL: how long a query may run before the client gives up on it (default 10 s: a dropped server fails a
   * request fast). 0: no limit, for bulk loads (the benchmarks' seeds, where one insert can outlast 10 s on a busy
   * machine).
   */
  queryTimeoutMs?: number;
  debug?: boolean;
}

export interface Database {
  readonly dialect: Dialect;
  readonly orm: MikroORM;
  /** A fresh EntityManager: one per unit of work, never shared between requests. */
  em(): SqlEntityManager;
  /** Query builder bound to `em` (and to its transaction, when inside one), typed by database-types.ts. */
  db(em?: SqlEntityManager): Kysely<DB>;
  /**
   * Query builder for reads outside any transaction that may be long (listings, counts, the moderation queue): on
   * SQLite with `sqliteReaders`, run on reader threads so that the event loop only awaits them; on PostgreSQL with
   * `pgReaders`, on that many connections of their own, so that no more run at once; else as `db()`.
   * Sees every write committed before the query is sent.
   */
  read(): Kysely<DB>;
  /**
   * PostgreSQL only (null on SQLite): statements prepared once per connection and planned once (PostgreSQL's generic
   * plan), on LOOKUP_CONNECTIONS connections of their own. For short, frequent reads whose planning is most of their
   * cost: the near-duplicate check (bench/README.md, Growth). Kysely sends every statement unnamed, planned anew.
   */
  readonly prepared: PreparedStatements | null;
  /**
   * SQLite: the database file, for work that runs on a thread of its own with its own connection (the blocklist
   * import's steps: blocklist-import.ts); null on PostgreSQL.
   */
  readonly sqliteFile: string | null;
  /** Runs `fn` in one transaction; retried on serialization failures/deadlocks on PostgreSQL. */
  transaction<T>(fn: (em: SqlEntityManager, db: Kysely<DB>) => Promise<T>): Promise<T>;
  ping(): Promise<void>;
  /** /readyz: the database answers (its dialect said). */
  check(): Promise<{ dialect: string }>;
  /**
   * Work of a repository's own that uses the connections in the background (the blocklist copy's rebuild): `stop`
   * runs first in close(), before any pool ends, and should end that work (close() waits for it, within the same
   * CLOSE_GRACE_MS). A pool's end waits for every connection checked out: work still running at close would hold it.
   */
  onClose(stop: () => Promise<void>): void;
  /** Ends the pools (once: a later call waits for the first). */
  close(): Promise<void>;
}

/** Runs a compiled statement as a named, prepared one: the same `sql` text, the same name, planned once. */
export interface PreparedStatements {
  query<R>(compiled: CompiledQuery<R>): Promise<R[]>;
}

/** How long close() waits for the connections in use to come back before it releases them itself (Checkouts). */
const CLOSE_GRACE_MS = 5000;

/**
 * The clients of `pg` pools that are checked out and not given back. A pool's `end()` waits for every one: a client
 * its holder never releases holds up close() and the process for good. That happened once in the test suite on a
 * loaded machine (2026-12-02: a connection acquired, never used, never released; the test's close() waited 14
 * minutes); caught once more, it was the blocklist copy's background rebuild (blocklist-cache.ts) in flight at
 * close, why its statement never ran not found. That rebuild is now stopped and awaited first (Database.onClose);
 * this is the backstop for any other holder. After CLOSE_GRACE_MS of close() they are released with an error:
 * removed from their pool, their connections ended, and close() ends. A holder that releases one later gets pg's
 * double-release error; by then the database is closed under it anyway.
 */
class Checkouts {
  readonly #out = new Set<PoolClient>();

  watch(pool: Pool): void {
    pool.on('acquire', (client) => this.#out.add(client));
    pool.on('release', (_err, client) => this.#out.delete(client));
    pool.on('remove', (client) => this.#out.delete(client));
  }

  releaseAll(): void {
    for (const client of [...this.#out]) {
      this.#out.delete(client);
      try {
        client.release(new Error('the database was closed while this connection was in use'));
      } catch {
        // Released meanwhile.
      }
    }
  }
}

/** The prepared statements' connections: a near-duplicate check takes ~1 ms, and one runs per upload. */
const LOOKUP_CONNECTIONS = 2;

export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  const common = {
    entities: ALL_ENTITIES,
    extensions: [Migrator],
    debug: opts.debug ?? false,
    allowGlobalContext: false,
    discovery: { warnWhenNoEntities: false },
    migrations: {
      migrationsList: MIGRATIONS,
      snapshot: false,
      snapshotOnMigrate: false,
      silent: true,
      transactional: true,
      allOrNothing: true,
      tableName: 'schema_migrations',
    },
  };
  let orm: MikroORM;
  let dialect: Dialect;
  if (opts.databaseUrl) {
    const { MikroORM: PgORM } = await import('@mikro-orm/postgresql');
    orm = await PgORM.init({
      ...common,
      clientUrl: opts.databaseUrl,
      pool: { min: 0, max: opts.poolSize ?? 10 },
      // Keep the pool from hanging forever when PostgreSQL goes away: fail fast, let the caller answer 503.
      driverOptions: {
        connectionTimeoutMillis: 3000,
        query_timeout: opts.queryTimeoutMs ?? 10_000,
        idleTimeoutMillis: 30000,
        keepAlive: true,
      },
    });
    dialect = postgresDialect;
  } else {
    mkdirSync(join(opts.sqlitePath, '..'), { recursive: true });
    const { MikroORM: SqliteORM } = await import('@mikro-orm/core');
    const { SqliteDriver } = await import('@mikro-orm/sql');
    orm = await SqliteORM.init({
      ...common,
      driver: SqliteDriver,
      dbName: opts.sqlitePath,
      // node:sqlite (see node-sqlite.ts): each connection MikroORM opens is set up before it is used.
      driverOptions: () => nodeSqliteDialect(opts.sqlitePath),
    });
    dialect = sqliteDialect;
  }
  try {
    await migrate(orm, opts.databaseUrl);
  } catch (e) {
    await orm.close(true).catch(() => {});
    throw e;
  }

  const rootEm = orm.em as SqlEntityManager;
  // After the migrations: the readers open a file that exists, in WAL mode, with today's schema.
  const readers =
    !opts.databaseUrl && (opts.sqliteReaders ?? 0) > 0
      ? new SqliteReaders({ path: opts.sqlitePath, threads: opts.sqliteReaders! })
      : null;
  // PostgreSQL: every pool's clients checked out and not given back, released when close() outlasts its grace.
  const checkouts = new Checkouts();
  if (opts.databaseUrl)
    checkouts.watch(await (orm.em.getConnection() as unknown as PostgreSqlConnection).getNativeClient());
  const pgReader =
    opts.databaseUrl && (opts.pgReaders ?? 0) > 0 ? await postgresReader(orm, opts.pgReaders!, checkouts) : null;
  const reader = readers ? readerKysely(readers) : pgReader;
  const prepared = opts.databaseUrl ? await postgresPrepared(orm, checkouts) : null;
  // One read on every thread now: a reader that cannot open the file fails the start, not the first listing.
  await readers?.ready().catch(async (e: unknown) => {
    await readers.close().catch(() => {});
    await orm.close(true).catch(() => {});
    throw e;
  });
  const stops: (() => Promise<void>)[] = [];
  /** close()'s work, once: a second call waits for the first. */
  let closed: Promise<void> | undefined;
  const database: Database = {
    dialect,
    orm,
    em: () => rootEm.fork(),
    db: (em) => (em ?? rootEm.fork()).getKysely<DB>(),
    read: () => reader ?? rootEm.fork().getKysely<DB>(),
    prepared,
    sqliteFile: opts.databaseUrl ? null : opts.sqlitePath,
    transaction: (fn) => dialect.retrying(() => rootEm.fork().transactional((em) => fn(em, em.getKysely<DB>()))),
    async ping() {
      await rootEm
        .fork()
        .getKysely()
        .selectNoFrom((eb) => eb.val(1).as('ok'))
        .execute();
    },
    async check() {
      await database.ping();
      return { dialect: dialect.name };
    },
    onClose(stop) {
      stops.push(stop);
    },
    close() {
      closed ??= (async () => {
        const grace = setTimeout(() => checkouts.releaseAll(), CLOSE_GRACE_MS);
        try {
          // Background work first, while its connections still answer; then the pools.
          await Promise.all(stops.splice(0).map((stop) => stop().catch(() => {})));
          await readers?.close();
          await pgReader?.destroy();
          await prepared?.close();
        } finally {
          await orm.close(true).finally(() => clearTimeout(grace));
        }
      })();
      return closed;
    },
  };
  return database;
}

type PgOverrides = Parameters<PostgreSqlConnection['mapOptions']>[0];

/**
 * Options for a `pg` client or pool of its own, as MikroORM sets up its connections: type parsers, and the
 * `driverOptions` above (the 3 s connection timeout, the 10 s query timeout), which `mapOptions` alone leaves out.
 */
export function postgresOptions(orm: MikroORM, overrides: PgOverrides) {
  const driverOptions: PgOverrides = orm.config.get('driverOptions');
  return (orm.em.getConnection() as unknown as PostgreSqlConnection).mapOptions({ ...driverOptions, ...overrides });
}

/**
 * A Kysely over a pool of `size` connections of its own, set up as MikroORM sets up its own (type parsers, timeouts):
 * the long reads wait here for one of them instead of taking the main pool's, which stays free for writes.
 */
async function postgresReader(orm: MikroORM, size: number, checkouts: Checkouts): Promise<Kysely<DB>> {
  return new Kysely<DB>({ dialect: new PostgresDialect({ pool: await postgresPool(orm, size, checkouts) }) });
}

/** A `pg` pool of `size` connections of its own (none opened until used), set up as MikroORM's (postgresOptions). */
async function postgresPool(orm: MikroORM, size: number, checkouts: Checkouts) {
  const { default: pg } = await import('pg');
  const pool = new pg.Pool(postgresOptions(orm, { min: 0, max: size }));
  // A connection the server drops reports an 'error' event: the query in flight rejects on its own.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  checkouts.watch(pool);
  return pool;
}

/**
 * PreparedStatements on a pool of LOOKUP_CONNECTIONS connections set up as MikroORM's (timeouts: a statement
 * waiting 3 s for a connection fails as unavailable, 503 `busy`). Each statement's name is a digest of its text, so
 * each text is parsed once per connection (callers pass a fixed set of texts, parameters apart); PostgreSQL plans it
 * generically after five runs when that costs no more.
 */
async function postgresPrepared(
  orm: MikroORM,
  checkouts: Checkouts,
): Promise<PreparedStatements & { close(): Promise<void> }> {
  const pool = await postgresPool(orm, LOOKUP_CONNECTIONS, checkouts);
  return {
    async query<R>(compiled: CompiledQuery<R>) {
      const name = `pv_${createHash('sha1').update(compiled.sql).digest('hex').slice(0, 20)}`;
      const { rows } = await pool.query({ name, text: compiled.sql, values: [...compiled.parameters] });
      return rows as R[];
    },
    close: () => pool.end(),
  };
}

/**
 * `openDatabase`, retried while the database does not answer yet (PostgreSQL still starting, a compose or
 * systemd start order): backoff from 250 ms doubling to 5 s, for at most `waitMs`; any other error (bad
 * credentials, a failing migration) fails at once.
 */
export async function openDatabaseWhenReachable(
  opts: DatabaseOptions,
  wait: {
    waitMs: number;
    onRetry?: (info: { attempt: number; delayMs: number; remainingMs: number; err: string }) => void;
  },
): Promise<Database> {
  const deadline = Date.now() + wait.waitMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await openDatabase(opts);
    } catch (e) {
      const remainingMs = deadline - Date.now();
      if (!isDatabaseUnavailable(e) || remainingMs <= 0) throw e;
      const delayMs = Math.min(5000, 250 * 2 ** (attempt - 1), remainingMs);
      wait.onRetry?.({ attempt, delayMs, remainingMs, err: (e as Error).message });
      await new Promise((r) => setTimeout(r, delayMs));
    }
  }
}

/**
 * Applies pending migrations. On PostgreSQL several gateways may start at once (hosts behind a load
 * balancer): a session-level advisory lock, held on its own connection, lets one migrate at a time.
 */
async function migrate(orm: MikroORM, databaseUrl: string | null): Promise<void> {
  if (!databaseUrl) {
    await orm.migrator.up();
    return;
  }
  const { default: pg } = await import('pg');
  const lock = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5000 });
  await lock.connect();
  try {
    await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await orm.migrator.up();
  } finally {
    await lock.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => {});
    await lock.end();
  }
}

/** Arbitrary, fixed: identifies pixvote's migration lock among other advisory locks. */
const MIGRATION_LOCK_KEY = 7_202_611;
