/** The database the configuration names, for the gateway processes and the cluster primary alike. */
import { join } from 'node:path';
import type { Logger } from 'pino';
import { maskPassword, type Config } from './config.ts';
import { openDatabaseWhenReachable, type Database } from './store/database.ts';
import { isDatabaseUnavailable } from './store/dialect.ts';
import { pathProblem, reasonOf } from './path-problem.ts';

/** A start-up failure already said in one line for the operator (which variable, and why): no stack trace. */
export class StartupError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StartupError';
  }
}

/** The SQLite file of DATA_DIR when DATABASE_URL is unset. */
export const sqlitePathOf = (dataDir: string): string => join(dataDir, 'app.db');

/**
 * The configured database, waited for up to DATABASE_WAIT_MS while it does not answer yet (each retry logged).
 * A database it cannot open is a StartupError naming DATABASE_URL (password masked) or DATA_DIR, and why.
 */
export async function openConfiguredDatabase(config: Config, log: Logger): Promise<Database> {
  const sqlitePath = sqlitePathOf(config.dataDir);
  const started = Date.now();
  try {
    return await openDatabaseWhenReachable(
      { databaseUrl: config.databaseUrl, sqlitePath, sqliteReaders: config.sqliteReaders, pgReaders: config.pgReaders },
      {
        waitMs: config.databaseWaitMs,
        onRetry: ({ attempt, delayMs, remainingMs, err }) =>
          log.warn(
            { attempt, retryInMs: delayMs, givingUpInMs: remainingMs, err },
            'the database does not answer yet; retrying',
          ),
      },
    );
  } catch (e) {
    throw new StartupError(
      config.databaseUrl
        ? describePostgresFailure(e, config.databaseUrl, config.databaseWaitMs, Date.now() - started)
        : describeSqliteFailure(e, config.dataDir, sqlitePath),
      { cause: e },
    );
  }
}

/** Every error in `e`'s chain: causes, and the attempts of an AggregateError (one per address of a host). */
function chain(e: unknown): Array<{ code?: unknown; message?: unknown }> {
  const seen: Array<{ code?: unknown; message?: unknown }> = [];
  const walk = (x: unknown, depth: number) => {
    if (!x || typeof x !== 'object' || depth > 5) return;
    seen.push(x);
    const errors = (x as { errors?: unknown }).errors;
    if (Array.isArray(errors)) for (const inner of errors) walk(inner, depth + 1);
    walk((x as { cause?: unknown }).cause, depth + 1);
  };
  walk(e, 0);
  return seen;
}

/**
 * `DATABASE_URL=postgres://app:***@db:5432/pixvote: connection refused by db:5432 (ECONNREFUSED: nothing listens
 * there); gave up after 60.2 s of retries (DATABASE_WAIT_MS=60000)`, or unknown host, timed out, or what
 * PostgreSQL answered.
 */
export function describePostgresFailure(e: unknown, databaseUrl: string, waitMs: number, tookMs: number): string {
  let where = 'the server';
  let host = '';
  let password = '';
  try {
    const u = new URL(databaseUrl);
    host = decodeURIComponent(u.hostname) || 'localhost';
    where = `${host}:${u.port || '5432'}`;
    password = decodeURIComponent(u.password);
  } catch {
    // validated as a URL by the config; keep the generic wording
  }
  const codes = chain(e).map((x) => (typeof x.code === 'string' ? x.code : ''));
  const messages = chain(e)
    .map((x) => (typeof x.message === 'string' ? x.message : ''))
    .filter(Boolean);
  const has = (...list: string[]) => codes.find((c) => list.includes(c));
  let why: string;
  const code = has('ENOTFOUND', 'EAI_AGAIN', 'ECONNREFUSED', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH');
  if (code === 'ENOTFOUND') why = `unknown host "${host}" (${code}: no such name in DNS or /etc/hosts)`;
  else if (code === 'EAI_AGAIN') why = `the host name "${host}" could not be resolved (${code}: DNS did not answer)`;
  else if (code === 'ECONNREFUSED') why = `connection refused by ${where} (${code}: nothing listens there)`;
  else if (code === 'ETIMEDOUT' || messages.some((m) => /timeout|timed out/i.test(m)))
    why = `timed out connecting to ${where}${code ? ` (${code})` : ''}`;
  else if (code) why = `cannot reach ${where} (${code})`;
  else if (messages.some((m) => /^Connection terminated/.test(m)))
    why = `the connection to ${where} was closed before PostgreSQL answered (${messages[0]})`;
  else why = messages[0] ?? String(e);
  if (isDatabaseUnavailable(e))
    why +=
      waitMs > 0
        ? `; gave up after ${seconds(tookMs)} of retries (DATABASE_WAIT_MS=${waitMs})`
        : '; not retried (DATABASE_WAIT_MS=0)';
  // Never the password, whatever a driver put in its message.
  if (password.length >= 3) why = why.split(password).join('***');
  return `DATABASE_URL=${maskPassword(databaseUrl)}: ${oneLine(why)}`;
}

/**
 * `DATA_DIR=/srv/pixvote/data: cannot open the SQLite database /srv/pixvote/data/app.db: /srv/pixvote/data is not
 * writable by this user (uid 1000, EACCES)`: what in the path stops it, when that can be found, else SQLite's reason.
 */
export function describeSqliteFailure(e: unknown, dataDir: string, sqlitePath: string): string {
  const why = pathProblem(sqlitePath) ?? reasonOf(e);
  return `DATA_DIR=${dataDir}: cannot open the SQLite database ${sqlitePath}: ${oneLine(why)}`;
}

/**
 * A file-system error on a path inside DATA_DIR (the media directories, a staging area), said as
 * `DATA_DIR=…: cannot create …: why`; null for any other error.
 */
export function describeDataDirFailure(e: unknown, dataDir: string): string | null {
  const { path } = (e ?? {}) as NodeJS.ErrnoException;
  if (typeof path !== 'string' || (path !== dataDir && !path.startsWith(`${dataDir}/`))) return null;
  return `DATA_DIR=${dataDir}: cannot create ${path}: ${oneLine(pathProblem(join(path, 'x')) ?? reasonOf(e))}`;
}

/** A message on one line: a start-up failure is one line of the log, whatever a driver's message holds. */
export const oneLine = (s: string) => s.replace(/\s*\n\s*/g, ' ');
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
