/**
 * SQLite reads off the event loop. node:sqlite runs every statement synchronously, on the thread that calls it: on
 * the gateway's one connection a deep listing (10 000 index rows, the moderation queue's grouping, a heavy user's
 * counts) holds the event loop for as long as it runs, and 16 clients asking for such pages kept `/healthz` waiting
 * for hundreds of milliseconds. Here a small pool of worker threads each holds a read-only connection to the same
 * file (WAL: readers never wait for the writer, nor it for them) and runs the statements the gateway sends; the event
 * loop only awaits their rows. Writes, and every read inside a transaction, stay on the main connection.
 *
 * A read sent after a write committed sees it: each statement here is its own read transaction, begun when the
 * thread runs it, so after every commit that finished before it was sent.
 *
 * `readerKysely` is a Kysely over the pool with the SQLite dialect's compiler: the same queries as on the main
 * connection, compiled on the event loop (cheap), executed on a reader thread.
 */
import {
  CompiledQuery,
  Kysely,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
} from 'kysely';
import { Piscina } from 'piscina';
import { errors } from '../domain/errors.ts';
import type { DB } from './database-types.ts';
import type { ReadTask } from './sqlite-reader.worker.ts';

// `.ts` when run from src/, `.js` when run from the compiled dist/.
const WORKER_FILE = new URL(
  `./sqlite-reader.worker${import.meta.url.slice(import.meta.url.lastIndexOf('.'))}`,
  import.meta.url,
);

export interface SqliteReadersOptions {
  path: string;
  threads: number;
  /** Reads waiting for a thread past which a new one is refused with 503 `busy` (default 256 per thread). */
  maxQueue?: number;
}

export class SqliteReaders {
  readonly #piscina: Piscina;
  readonly #path: string;
  readonly #maxQueue: number;
  /** One read on each thread, sent at once: settled when every thread has loaded its module and opened the file. */
  readonly #started: Promise<unknown>;
  #closed = false;

  constructor(opts: SqliteReadersOptions) {
    this.#path = opts.path;
    this.#maxQueue = opts.maxQueue ?? 256 * opts.threads;
    this.#piscina = new Piscina({
      filename: WORKER_FILE.href,
      minThreads: opts.threads,
      maxThreads: opts.threads,
      maxQueue: this.#maxQueue,
      idleTimeout: 2 ** 31 - 1,
      // A listing's rows are small; this only bounds a runaway statement's JavaScript side.
      resourceLimits: { maxOldGenerationSizeMb: 256 },
    });
    // One task per thread (each takes one at a time, so each gets one).
    const task: ReadTask = { path: this.#path, sql: 'select 1 as ok', params: [] };
    this.#started = Promise.all(Array.from({ length: opts.threads }, () => this.#piscina.run(task)));
    this.#started.catch(() => {}); // awaited by ready() and close()
  }

  /** Resolves once every thread has read the file; rejects with the first that could not (a start fails on it). */
  async ready(): Promise<void> {
    await this.#started;
  }

  /** The rows of one statement that returns rows, run on a reader thread. */
  async all<R>(sql: string, params: readonly unknown[]): Promise<R[]> {
    if (this.#closed) throw new Error('the SQLite readers are closed');
    const task: ReadTask = { path: this.#path, sql, params };
    try {
      return (await this.#piscina.run(task)) as R[];
    } catch (e) {
      if (/queue is at limit/i.test((e as Error).message))
        throw errors.busy(`database reads are saturated (${this.#maxQueue} waiting); retry shortly`, 1);
      throw e;
    }
  }

  stats(): { threads: number; queueSize: number; completed: number } {
    return {
      threads: this.#piscina.threads.length,
      queueSize: this.#piscina.queueSize,
      completed: this.#piscina.completed,
    };
  }

  /** The pool's threads, by id (tests: none is left after close). */
  threadIds(): number[] {
    return this.#piscina.threads.map((t) => t.threadId);
  }

  /**
   * Finishes the reads under way and queued, then stops the threads (their connections close with them). It first
   * waits for the start-up reads, so that no thread is terminated while still loading its modules: the likely cause
   * of one CI run's abort (V8's "IsGraphAsync must be used on an instantiated module", Node 22.23) in a start that
   * failed right after the database opened.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#started.catch(() => {});
    await this.#piscina.close();
  }
}

/** A Kysely whose queries run on `readers`: reads only, outside any transaction. */
export function readerKysely(readers: SqliteReaders): Kysely<DB> {
  const connection: DatabaseConnection = {
    async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
      return { rows: await readers.all<R>(query.sql, query.parameters) };
    },
    // eslint-disable-next-line require-yield -- a generator that refuses before its first row
    async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
      throw new Error('the SQLite readers do not stream; use execute()');
    },
  };
  const noTransactions = () => Promise.reject(new Error('the SQLite readers run no transaction; use transaction()'));
  const driver: Driver = {
    init: async () => {},
    acquireConnection: async () => connection,
    beginTransaction: noTransactions,
    commitTransaction: noTransactions,
    rollbackTransaction: noTransactions,
    releaseConnection: async () => {},
    // The pool is closed by its owner (Database.close), not by this Kysely.
    destroy: async () => {},
  };
  return new Kysely<DB>({
    dialect: {
      createAdapter: () => new SqliteAdapter(),
      createDriver: () => driver,
      createIntrospector: (db) => new SqliteIntrospector(db),
      createQueryCompiler: () => new SqliteQueryCompiler(),
    },
  });
}
