import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { Metrics } from '../../metrics.ts';
import type { AppContext } from '../context.ts';
import { notFoundUnlessAnswered, writeError, type ErrorOptions } from './error-handler.ts';
import { applyConditionalGet } from './conditional-get.ts';
import { HSTS_HEADER, SECURITY_HEADERS } from '../security-headers.ts';

/** How much of a refused request's body is read (and dropped) so the client can read the refusal. */
const DISCARD_MAX_BYTES = 128 * 1024 * 1024;
const DISCARD_MAX_MS = 10_000;

function discardBody(req: IncomingMessage): Promise<void> {
  return new Promise((resolve) => {
    let bytes = 0;
    const done = () => {
      clearTimeout(timer);
      req.off('data', onData).off('end', done).off('error', done).off('close', done);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      if ((bytes += chunk.length) > DISCARD_MAX_BYTES) done();
    };
    const timer = setTimeout(done, DISCARD_MAX_MS);
    req.on('data', onData).once('end', done).once('error', done).once('close', done);
    req.resume();
  });
}

/** Requests slower than this are logged at info level, like failures. */
const SLOW_SECONDS = 1;

/** A client-sent id is echoed only when it is short and plain; anything else gets a fresh UUID. */
const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

type Routed = AppContext & { _matchedRoute?: string };

/** The error code of a failed response: what the error mapper wrote, or the `error` of a body a route wrote itself. */
function errorCodeOf(ctx: AppContext): string | undefined {
  if (ctx.state.errorCode) return ctx.state.errorCode;
  const body = ctx.body as { error?: unknown } | null | undefined;
  return body && typeof body === 'object' && typeof body.error === 'string' ? body.error : undefined;
}

/**
 * What every request gets and leaves behind, in one layer (each middleware layer costs a few
 * microseconds, and these all wrap the whole request): its id (echoed as X-Request-Id), the security
 * headers, `Connection: close` while draining, the error mapper (the contract's error body for anything
 * thrown, a JSON 404 for unknown routes, a 405 with `Allow` for a known path's other methods), the ETag / 304
 * of GET JSON responses, the request metrics by route pattern (never the raw path: ids would explode the label
 * set), and one access-log line (at info for failures and slow requests, at debug for the rest; a failure's
 * line names its error code, route pattern, request id and, when known, user id).
 *
 * `routeOf` names the route pattern of a request refused before the router ran (rate limited, malformed or
 * oversized body): it is asked only for requests the router did not label, so a routed request pays nothing.
 */
export function envelope(opts: {
  log: Logger;
  metrics?: Metrics | undefined;
  isShuttingDown: () => boolean;
  errors?: ErrorOptions;
  routeOf?: (method: string, path: string) => string | undefined;
}) {
  const { log, metrics, routeOf } = opts;
  const routeLabel = (ctx: AppContext): string =>
    (ctx as Routed)._matchedRoute ?? routeOf?.(ctx.method, ctx.path) ?? 'unmatched';
  const errorOptions: ErrorOptions = { ...opts.errors, route: routeLabel };
  return async function envelope(ctx: AppContext, next: () => Promise<unknown>) {
    const started = performance.now();
    const sent = ctx.req.headers['x-request-id'];
    const id = typeof sent === 'string' && SANE_ID.test(sent) ? sent : randomUUID();
    ctx.state.requestId = id;
    ctx.state.log = log;
    const res = ctx.res;
    res.setHeader('X-Request-Id', id);
    for (const [name, value] of SECURITY_HEADERS) res.setHeader(name, value);
    if (ctx.secure) res.setHeader(HSTS_HEADER[0], HSTS_HEADER[1]);
    // While shutting down, keep-alive connections are not reused: clients reconnect elsewhere.
    if (opts.isShuttingDown()) res.setHeader('Connection', 'close');
    try {
      await next();
      notFoundUnlessAnswered(ctx);
      applyConditionalGet(ctx);
    } catch (err) {
      writeError(ctx, err, errorOptions);
    } finally {
      // A response on a closing connection (shutting down) to a request whose body is still arriving: read
      // the rest first (bounded), or the client, still writing, meets a reset instead of reading the answer.
      // Not a body refused for its declared size: reading it is what the refusal is for not doing.
      if (!ctx.state.bodyRefusedUnread && !ctx.req.complete && res.getHeader('Connection') === 'close')
        await discardBody(ctx.req);
      const seconds = (performance.now() - started) / 1000;
      const status = ctx.status;
      const route = routeLabel(ctx);
      metrics?.recordRequest(ctx.method, route, status, seconds);
      // Every request at debug; at info only what an operator acts on: failures and slow requests
      // (the rest is in /metrics — a line per feed read costs a third of a cached read's CPU).
      const level = status >= 400 || seconds >= SLOW_SECONDS ? 'info' : 'debug';
      if (log.isLevelEnabled(level)) {
        const ms = Math.round(seconds * 10_000) / 10;
        const line: Record<string, unknown> = { reqId: id, method: ctx.method, path: ctx.path, route, status, ms };
        if (status >= 400) line.error = errorCodeOf(ctx);
        const userId = ctx.state.principal?.userId;
        if (userId) line.userId = userId;
        log[level](line, 'request');
      }
    }
  };
}
