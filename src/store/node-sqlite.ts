/**
 * SQLite through Node's own `node:sqlite` (no native addon to install: nothing to compile, no binary to
 * download, whatever npm and whichever install scripts it runs). A Kysely dialect MikroORM's generic
 * `SqliteDriver` takes as `driverOptions`; each connection it opens is set up here, before anything runs on it
 * (WAL, durability, foreign keys, the busy wait, memory-mapped reads, sqlite-vec, the `hamming64` and `phash_chunk`
 * functions), so a reconnect gets the same connection as the first.
 */
import { createRequire } from 'node:module';
import type { DatabaseSync } from 'node:sqlite';
import { HASH_HEX, bitsOf, hammingHex } from './similarity/hamming.ts';

type NodeSqlite = typeof import('node:sqlite');

let loaded: NodeSqlite | undefined;

/**
 * `node:sqlite`, loaded once. Node 22 announces it with an ExperimentalWarning on every first load (it is a
 * release candidate there, unflagged since 22.13); that one line is dropped, every other warning still shows.
 */
export function nodeSqlite(): NodeSqlite {
  if (loaded) return loaded;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- put back below; always called on process
  const emit = process.emitWarning;
  process.emitWarning = (warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === 'string' ? warning : warning.message;
    if (/^SQLite is an experimental feature/.test(text)) return;
    Reflect.apply(emit, process, [warning, ...rest]);
  };
  try {
    loaded = createRequire(import.meta.url)('node:sqlite') as NodeSqlite;
  } finally {
    process.emitWarning = emit;
  }
  return loaded;
}

/** Opens `path` and sets the connection up (see the module comment). */
export async function openSqlite(path: string): Promise<DatabaseSync> {
  const { DatabaseSync } = nodeSqlite();
  const db = new DatabaseSync(path, { allowExtension: true, timeout: BUSY_TIMEOUT_MS });
  try {
    const { load } = await import('sqlite-vec');
    load(db);
    db.enableLoadExtension(false);
    db.exec('pragma journal_mode = WAL');
    // WAL + NORMAL is durable across process crashes (only a power loss can drop the last commits).
    db.exec('pragma synchronous = NORMAL');
    db.exec('pragma foreign_keys = ON');
    db.exec(`pragma busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.exec(`pragma mmap_size = ${MMAP_BYTES}`);
    addHashFunctions(db);
  } catch (e) {
    db.close();
    throw e;
  }
  return db;
}

const BUSY_TIMEOUT_MS = 10_000;

/**
 * Reads of the database file go through a memory map of up to this many bytes (the most SQLite's build allows,
 * `SQLITE_MAX_MMAP_SIZE`; a larger file is read past it as before): a page already in the OS's cache is read
 * where it lies instead of copied by a `pread` into the connection's 2 MB page cache. Writes still go through the
 * WAL with `write`, so a full disk is still an error, not a signal. At 1M uploads (a 3 GB file) without it the
 * listings read up to 1.44× their time at 12k and the near-duplicate check 1.69×; with it at most 1.13× and 1.25×,
 * and every read as fast or faster at p50 at both sizes (bench/README.md, "SQLite reads through a memory map").
 */
const MMAP_BYTES = 0x7fff0000;

/** Hamming distance of two 16-hex-digit hashes, for multi-index hashing on SQLite (PostgreSQL has bit_count). */
function addHashFunctions(db: DatabaseSync): void {
  db.function('hamming64', { deterministic: true }, (a, b) =>
    typeof a === 'string' && typeof b === 'string' ? hammingHex(a, b) : null,
  );
  // `width` bits of the hash from bit `shift` up: the chunk columns' values (migration m021).
  db.function('phash_chunk', { deterministic: true }, (hash, shift, width) =>
    typeof hash === 'string' && HASH_HEX.test(hash) ? bitsOf(hash, Number(shift), Number(width)) : null,
  );
}

/**
 * Opens `path` read-only, for a reader thread (sqlite-readers.ts): WAL lets it read while the main connection
 * writes, each statement seeing every transaction committed before it began. No extension is loaded (listings
 * read plain tables); `hamming64` and `phash_chunk` are there for a query that uses them. The database must exist
 * and be in WAL mode already (the main connection made it so).
 */
export function openSqliteReader(path: string): DatabaseSync {
  const { DatabaseSync } = nodeSqlite();
  const db = new DatabaseSync(path, { readOnly: true, timeout: BUSY_TIMEOUT_MS });
  try {
    db.exec('pragma query_only = ON');
    db.exec(`pragma mmap_size = ${MMAP_BYTES}`);
    addHashFunctions(db);
  } catch (e) {
    db.close();
    throw e;
  }
  return db;
}

/**
 * A connection's statements, each prepared once and kept (most recently used last; past `size` the least recently
 * used goes: `in (?, ?, …)` lists make many shapes). Reusing one is safe: node:sqlite resets a statement after
 * each `all`/`run`, so a kept statement holds no read transaction open. Kysely asks for a statement by its text on
 * every query: without this, each query was parsed and planned anew (the blocklist check and every primary-key
 * read among them; bench/README.md, Blocklist).
 */
export function keptStatements<T>(prepare: (sql: string) => T, size: number): (sql: string) => T {
  const kept = new Map<string, T>();
  return (sql) => {
    let stmt = kept.get(sql);
    if (stmt !== undefined) kept.delete(sql);
    else {
      stmt = prepare(sql);
      if (kept.size >= size) kept.delete(kept.keys().next().value!);
    }
    kept.set(sql, stmt);
    return stmt;
  };
}

/** Statements kept per connection (the main one, each import thread's, each reader thread's). */
export const KEPT_STATEMENTS = 256;
