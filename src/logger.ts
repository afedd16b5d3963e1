import { pino, type Logger } from 'pino';

/** Log lines are written in batches of this many bytes, or at least every FLUSH_MS. */
const BATCH_BYTES = 8192;
const FLUSH_MS = 200;

/**
 * JSON logs to stdout. Lines are buffered and written in batches (a syscall per access-log line was a large
 * share of a request's CPU: bench/README.md, "Gateway CPU"), and flushed at least every 200 ms, so a quiet
 * server's lines still show at once; `flushLogs` writes out the rest before exiting. Credentials are never
 * logged: no log call is given a body, a header or a token.
 */
export function createLogger(level: string): Logger {
  const destination = pino.destination({ dest: 1, sync: false, minLength: BATCH_BYTES });
  setInterval(() => destination.flush(), FLUSH_MS).unref();
  return pino({ level, base: { pid: process.pid } }, destination);
}

/** Writes out what is still buffered (before process.exit). */
export function flushLogs(log: Logger): Promise<void> {
  return new Promise((resolve) => log.flush(() => resolve()));
}
