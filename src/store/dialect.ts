import type { SqlBool } from 'kysely';

/**
 * The few places where SQLite and PostgreSQL differ for the hand-written queries of the repositories:
 * how dates and booleans are bound, a handful of SQL functions, and which errors are worth a retry.
 */
export interface Dialect {
  readonly name: 'sqlite' | 'postgres';
  /** A Date as this database binds it (SQLite stores epoch milliseconds, as MikroORM does). */
  date(d: Date): Date | number;
  /** A timestamp column value back as a Date. */
  readDate(v: unknown): Date;
  bool(b: boolean): SqlBool;
  readBool(v: unknown): boolean;
  /** Literal `false`, spelled so that SQLite's planner can match partial indexes (`is_private = 0`). */
  readonly falseLit: string;
  /** Literal `true`, likewise (`person_flag = 1`). */
  readonly trueLit: string;
  /** Runs fn again when the database reports a transient conflict (deadlock, serialization, busy). */
  retrying<T>(fn: () => Promise<T>): Promise<T>;
}

const RETRIES = 5;

async function retry<T>(fn: () => Promise<T>, transient: (e: unknown) => boolean): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (attempt >= RETRIES || !transient(e)) throw e;
      await new Promise((r) => setTimeout(r, 5 * attempt + Math.random() * 10));
    }
  }
}

type CodedError = { code?: unknown; errcode?: unknown };

/** The error's code: a driver's own (`40001`, `ECONNREFUSED`), or the SQLite result code's name. */
const codeOf = (e: unknown): string | undefined => {
  const err = e as CodedError & { cause?: CodedError };
  for (const x of [err, err?.cause]) {
    const c = x?.code === 'ERR_SQLITE_ERROR' ? sqliteCodeName(x.errcode) : x?.code;
    if (typeof c === 'string') return c;
  }
  return undefined;
};

/**
 * node:sqlite reports every failure as `ERR_SQLITE_ERROR` with SQLite's extended result code in `errcode`;
 * the names are SQLite's own (https://sqlite.org/rescode.html), the ones better-sqlite3 put in `code`.
 */
function sqliteCodeName(errcode: unknown): string | undefined {
  if (typeof errcode !== 'number') return undefined;
  return SQLITE_CODES[errcode] ?? ((errcode & 0xff) === 5 ? 'SQLITE_BUSY' : `SQLITE_${errcode}`);
}

const SQLITE_CODES: Record<number, string> = {
  5: 'SQLITE_BUSY',
  261: 'SQLITE_BUSY_RECOVERY',
  517: 'SQLITE_BUSY_SNAPSHOT',
  773: 'SQLITE_BUSY_TIMEOUT',
  1555: 'SQLITE_CONSTRAINT_PRIMARYKEY',
  2067: 'SQLITE_CONSTRAINT_UNIQUE',
};

export const sqliteDialect: Dialect = {
  name: 'sqlite',
  date: (d) => d.getTime(),
  readDate: (v) => (v instanceof Date ? v : new Date(typeof v === 'string' && !/^\d+$/.test(v) ? v : Number(v))),
  bool: (b) => (b ? 1 : 0),
  readBool: (v) => v === 1 || v === true || v === '1',
  falseLit: '0',
  trueLit: '1',
  // SQLITE_BUSY and its extended codes (SQLITE_BUSY_SNAPSHOT: another process committed after this
  // transaction's first read): the whole transaction runs again, on a fresh snapshot.
  retrying: (fn) => retry(fn, isDatabaseBusy),
};

export const postgresDialect: Dialect = {
  name: 'postgres',
  date: (d) => d,
  readDate: (v) => (v instanceof Date ? v : new Date(String(v))),
  bool: (b) => b,
  readBool: (v) => v === true,
  falseLit: 'false',
  trueLit: 'true',
  // 40001 serialization_failure, 40P01 deadlock_detected
  retrying: (fn) => retry(fn, (e) => codeOf(e) === '40001' || codeOf(e) === '40P01'),
};

/** True when `e` is a unique-constraint violation on either database. */
export function isUniqueViolation(e: unknown): boolean {
  const name = (e as { name?: string })?.name;
  const code = codeOf(e);
  return (
    name === 'UniqueConstraintViolationException' ||
    code === '23505' ||
    code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
  );
}

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);
const UNAVAILABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|^timeout expired$|Query read timeout|not queryable|terminating connection|the database system is (starting up|shutting down)|Connection refused/i;

/** True when SQLite answered that the database is locked by another writer for longer than the busy timeout. */
export function isDatabaseBusy(e: unknown): boolean {
  return codeOf(e)?.startsWith('SQLITE_BUSY') === true;
}

/**
 * True when `e` says the database cannot be reached (refused, dropped, timed out, shutting down) rather
 * than that a query was wrong: such requests get 503 with Retry-After, not 500.
 */
export function isDatabaseUnavailable(e: unknown): boolean {
  for (
    let err = e as { code?: unknown; message?: unknown; name?: unknown; cause?: unknown } | undefined, depth = 0;
    err && depth < 5;
    depth++
  ) {
    if (err.name === 'ConnectionException') return true;
    if (typeof err.code === 'string' && (UNAVAILABLE_CODES.has(err.code) || err.code.startsWith('08'))) return true;
    if (typeof err.message === 'string' && UNAVAILABLE_MESSAGES.test(err.message)) return true;
    if (Array.isArray((err as { errors?: unknown[] }).errors))
      return (err as { errors: unknown[] }).errors.some(isDatabaseUnavailable);
    err = err.cause as typeof err;
  }
  return false;
}
