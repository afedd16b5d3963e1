/**
 * The HTTP server around a composed app, and its graceful shutdown: on SIGTERM/SIGINT stop accepting
 * connections, refuse new uploads with 503 busy, let in-flight requests finish within SHUTDOWN_GRACE_MS,
 * then close the worker pool, the database and Redis, and exit 0.
 */
import { randomUUID } from 'node:crypto';
import {
  createServer,
  maxHeaderSize,
  STATUS_CODES,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import { flushLogs } from './logger.ts';
import type { ErrorCode } from './domain/errors.ts';
import { SECURITY_HEADERS } from './gateway/security-headers.ts';
import { declaredOversize } from './gateway/limits.ts';
import { ListedHeadersResponse } from './gateway/listed-headers.ts';
import { capConnectionsPerAddress, isRefusedConnection } from './gateway/connection-cap.ts';

/**
 * What `listen` serves and shuts down: the composed application (main.ts's `compose()` returns it), as
 * far as serving needs it. Declared here, not imported from main.ts, so that the two import no cycle.
 */

/**
 * The "listening" line's account of Redis: `connected`, `not configured`, or (REDIS_URL set but Redis not answering
 * at start) that the in-process limits and caches serve until it answers (ioredis keeps reconnecting).
 */
export function redisInUse(redis: { status: string } | null): string {
  if (!redis) return 'not configured';
  return redis.status === 'ready'
    ? 'connected'
    : `configured but ${redis.status}: in-process limits and caches serve until it answers`;
}

export interface Servable {
  config: Pick<Config, 'port' | 'host' | 'dataDir' | 'shutdownGraceMs' | 'maxConnectionsPerIp' | 'trustProxy'>;
  log: Logger;
  metrics: { connectionsRefused: { inc(): void } };
  app: { callback(): Handler };
  db: { dialect: { name: string } };
  redis: { status: string } | null;
  /** Starts a graceful shutdown: /readyz turns 503 and new uploads are refused with 503 busy. */
  drain(): void;
  /** Releases every resource. Idempotent. */
  close(): Promise<void>;
}

export interface Running {
  server: Server;
  /** Begins the graceful shutdown; resolves when every resource is closed. */
  shutdown(reason: string): Promise<void>;
}

export interface HttpServerOptions {
  /** Slow-loris guard: a whole request (headers and body) must arrive within this; 408 after. */
  requestTimeoutMs?: number;
  /** The headers within this; 408 after. */
  headersTimeoutMs?: number;
  /** How often those two are checked (Node's default is 30 s). */
  timeoutCheckMs?: number;
  log?: Logger;
  /** MAX_CONNECTIONS_PER_IP: open connections one client address may hold (0 or unset: no cap). */
  maxConnectionsPerIp?: number;
  /** Called on each connection the cap refuses. */
  onConnectionRefused?: () => void;
}

/** The server options of a composed app, as `npm start` runs it (the tests start theirs with these too). */
export function serverOptions(composed: Pick<Servable, 'config' | 'log' | 'metrics'>): HttpServerOptions {
  return {
    log: composed.log,
    maxConnectionsPerIp: composed.config.maxConnectionsPerIp,
    onConnectionRefused: () => composed.metrics.connectionsRefused.inc(),
  };
}

/**
 * The HTTP server around the app, as `npm start` and the tests run it: its timeouts, and the contract's error
 * body for what fails below the app (Node's parser, the timeouts), and 413 before `100 Continue` to an
 * `Expect: 100-continue` request whose declared body is too large.
 */
/** Koa's `app.callback()`: it answers every failure itself (ctx.onerror), so its promise never rejects. */
type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void> | void;

export function createHttpServer(handler: Handler, opts: HttpServerOptions = {}): Server {
  const requestTimeout = opts.requestTimeoutMs ?? 60_000;
  const headersTimeout = Math.min(opts.headersTimeoutMs ?? 20_000, requestTimeout);
  const server = createServer(
    {
      requestTimeout,
      headersTimeout,
      connectionsCheckingInterval: opts.timeoutCheckMs ?? 5_000,
      // Early headers kept as a list: a cached page writes every header in one writeHead (listed-headers.ts).
      ServerResponse: ListedHeadersResponse,
    },
    // A request parsed from a connection the cap refused (sent before its refusal was written) is not served.
    (req, res) => (isRefusedConnection(req.socket) ? req.socket.destroy() : void handler(req, res)),
  );
  capConnectionsPerAddress(server, {
    max: opts.maxConnectionsPerIp ?? 0,
    log: opts.log,
    onRefused: opts.onConnectionRefused,
  });
  // A client that half-closes (FIN after its request: "nothing more from me") still reads the answer. Node's
  // default ends the connection at once, so an upload sent in full and then half-closed was answered nothing
  // and, its connection closed, cancelled. With this Node ends the connection after the pending response
  // (a body cut short by the FIN is still a parse error: clientError below). Not in the typings.
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  server.on('connection', (socket: Socket) => socket.once('end', () => probeHalfClosed(socket)));
  const limits = { requestTimeout, headersTimeout, maxHeaderSize };
  server.on('clientError', (err: ClientError, socket: Duplex) => answerClientError(err, socket, limits, opts.log));
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    // Without this listener Node sends 100 Continue itself; a client told to continue sends the body we refuse.
    if (!declaredOversize(req)) res.writeContinue();
    server.emit('request', req, res);
  });
  return server;
}

/** How often a connection half-closed while its request is in flight is probed (see probeHalfClosed). */
export const HALF_CLOSE_PROBE_MS = 100;

/**
 * A FIN while a request is in flight is either a half-close (the client still reads) or a client gone for good
 * (it closed its socket: its FIN looks the same). Only writing tells them apart: a closed socket answers data
 * with a reset, which the next write sees (EPIPE), and the connection closes, cancelling the request (its
 * client signal aborts) as any disconnect does. So until the response starts, `102 Processing` is written
 * every HALF_CLOSE_PROBE_MS (the first after one interval): an interim response every HTTP/1.1 client parses
 * and ignores (RFC 9110 15.2); never to an HTTP/1.0 client, which may not get one (its half-close is simply
 * answered, a close that looks like one is not detected).
 */
function probeHalfClosed(socket: Socket): void {
  const res = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (!res || socket.destroyed || res.headersSent || res.req.httpVersion === '1.0') return;
  let timer: NodeJS.Timeout | undefined;
  const probe = () => {
    if (res.headersSent || res.writableEnded || socket.destroyed || !socket.writable) return;
    res.writeProcessing();
    timer = setTimeout(probe, HALF_CLOSE_PROBE_MS).unref();
  };
  res.once('close', () => clearTimeout(timer));
  // Not at once: a quick answer needs no probe (a half-closing client then sees no interim response at all).
  timer = setTimeout(probe, HALF_CLOSE_PROBE_MS).unref();
}

type ClientError = Error & { code?: string; reason?: string };

/**
 * Node's 'clientError': a request the parser refused (malformed, headers too large, bytes after a body that
 * do not start a request) or one that did not arrive in time. Answered with the contract's body, an
 * `X-Request-Id` (the request's own when one was already being served) and `Connection: close`, wherever
 * a response can still be written; the connection is closed either way.
 */
function answerClientError(
  err: ClientError,
  socket: Duplex,
  limits: { requestTimeout: number; headersTimeout: number; maxHeaderSize: number },
  log?: Logger,
): void {
  // Node's own handler looks here too: the response of a request already on this connection, if any.
  const pending = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage ?? null;
  if (err.code === 'ECONNRESET' || !socket.writable || pending?.headersSent) {
    socket.destroy();
    return;
  }
  const id = (pending?.getHeader('x-request-id') as string | undefined) ?? randomUUID();
  const [status, code, message] = describeClientError(err, pending?.req ?? null, limits);
  log?.info({ reqId: id, status, code: err.code, reason: err.reason }, 'request refused by the HTTP parser');
  const body = JSON.stringify({ error: code, message });
  const headers = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${id}`,
    'Cache-Control: no-store',
    ...SECURITY_HEADERS.map(([name, value]) => `${name}: ${value}`),
    'Connection: close',
  ];
  socket.write(`${headers.join('\r\n')}\r\n\r\n${body}`);
  socket.destroy();
}

function describeClientError(
  err: ClientError,
  pending: IncomingMessage | null,
  limits: { requestTimeout: number; headersTimeout: number; maxHeaderSize: number },
): [number, ErrorCode, string] {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [
        408,
        'invalid_request',
        `the request did not arrive in time: its headers must arrive within ${limits.headersTimeout / 1000} s, ` +
          `all of it within ${limits.requestTimeout / 1000} s`,
      ];
    case 'HPE_HEADER_OVERFLOW':
      return [
        431,
        'invalid_request',
        `request headers are too large: the limit is ${limits.maxHeaderSize / 1024} KiB in total`,
      ];
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return [413, 'payload_too_large', 'chunk extensions of the request body are too large'];
  }
  if (pending?.complete) {
    // The request was read to its declared end, and what followed on the connection is not a request.
    const declared = pending.headers['content-length'];
    return [
      400,
      'invalid_request',
      'the connection carried bytes after the request body that are not an HTTP request: ' +
        `a body must be exactly its Content-Length${declared ? ` (${declared} bytes)` : ''}`,
    ];
  }
  return [400, 'invalid_request', `malformed HTTP request${err.reason ? `: ${err.reason}` : ''}`];
}

export async function listen(composed: Servable): Promise<Running> {
  const { config, log } = composed;
  const server = createHttpServer(composed.app.callback(), serverOptions(composed));
  if (config.trustProxy && config.maxConnectionsPerIp > 0) {
    log.info(
      { maxConnectionsPerIp: config.maxConnectionsPerIp },
      'TRUST_PROXY=true: MAX_CONNECTIONS_PER_IP counts the connections of each socket peer, i.e. of the proxy ' +
        'for every client behind it; raise it to what the proxy opens, or set 0 and cap connections at the proxy',
    );
  }
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
    {
      address: server.address(),
      database: composed.db.dialect.name,
      // What is really in use: a configured Redis that refused at start serves nothing until it answers.
      redis: redisInUse(composed.redis),
      dataDir: config.dataDir,
    },
    'pixvote listening',
  );

  let done: Promise<void> | null = null;
  const shutdown = (reason: string) =>
    (done ??= (async () => {
      log.info(
        { reason, inFlight },
        'shutting down: no new connections, new uploads refused, in-flight requests finishing',
      );
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
export function exitOnSignals(running: Running, log: Logger): void {
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
