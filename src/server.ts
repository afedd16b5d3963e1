/**
 * The HTTP server around a composed app, and its graceful shutdown: on SIGTERM/SIGINT stop accepting
 * connections, refuse new uploads with 503 busy, let in-flight requests finish within SHUTDOWN_GRACE_MS,
 * then close the worker pool, the database and Redis, and exit 0.
 */
import { createServer, type Server } from 'node:http';
import type { Composed } from './main.ts';
import { flushLogs } from './logger.ts';

export interface Running {
  server: Server;
  /** Begins the graceful shutdown; resolves when every resource is closed. */
  shutdown(reason: string): Promise<void>;
}

export async function listen(composed: Composed): Promise<Running> {
  const { config, log } = composed;
  const server = createServer(composed.app.callback());
  // Slow-loris guard: a whole request (headers and body) must arrive within 60 s.
  server.requestTimeout = 60_000;
  server.headersTimeout = 20_000;
  let inFlight = 0;
  let idle: (() => void) | null = null;
  server.on('request', (_req, res) => {
    inFlight++;
    res.once('close', () => {
      if (--inFlight === 0) idle?.();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  log.info(
    { address: server.address(), database: composed.db.dialect.name, redis: Boolean(composed.redis), dataDir: config.dataDir },
    'pixvote listening',
  );

  let done: Promise<void> | null = null;
  const shutdown = (reason: string) =>
    (done ??= (async () => {
      log.info({ reason, inFlight }, 'shutting down: no new connections, new uploads refused, in-flight requests finishing');
      composed.drain();
      server.close();
      server.closeIdleConnections();
      if (inFlight > 0) {
        await new Promise<void>((resolve) => {
          idle = resolve;
          setTimeout(resolve, config.shutdownGraceMs).unref();
        });
      }
      if (inFlight > 0) log.warn({ inFlight }, 'grace period over; closing the remaining connections');
      server.closeAllConnections();
      await composed.close();
      log.info('closed');
    })());
  return { server, shutdown };
}

/** Wires SIGTERM and SIGINT to a graceful shutdown followed by exit 0 (1 if closing failed). */
export function exitOnSignals(running: Running, log: Composed['log']): void {
  const onSignal = (signal: string) => {
    running.shutdown(signal).then(
      () => flushLogs(log).then(() => process.exit(0)),
      (err) => {
        log.error({ err }, 'shutdown failed');
        void flushLogs(log).then(() => process.exit(1));
      },
    );
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
}
