import type { Logger } from 'pino';
import type { Metrics } from '../../metrics.ts';
import type { AppContext } from '../context.ts';

/** Requests slower than this are logged at info level, like failures. */
const SLOW_SECONDS = 1;

type Routed = AppContext & { routerPath?: string };

/**
 * A request's route pattern (`/api/upload/:id`, never the raw path: ids would explode the label set): the one the
 * router (or a hot route) set, else `routeOf` (for requests refused before routing: rate limited, malformed or
 * oversized body; asked only then, so a routed request pays nothing), else `unmatched`.
 */
export function routeLabel(routeOf?: (method: string, path: string) => string | undefined) {
  return (ctx: AppContext): string => (ctx as Routed).routerPath ?? routeOf?.(ctx.method, ctx.path) ?? 'unmatched';
}

/** The error code of a failed response: what the error mapper wrote, or the `error` of a body a route wrote itself. */
function errorCodeOf(ctx: AppContext): string | undefined {
  if (ctx.state.errorCode) return ctx.state.errorCode;
  const body = ctx.body as { error?: unknown } | null | undefined;
  return body && typeof body === 'object' && typeof body.error === 'string' ? body.error : undefined;
}

/**
 * Outermost, so it times the whole request and sees its final status: the request metrics by route pattern,
 * and one access-log line (at info for failures and slow requests, at debug for the rest; a failure's line
 * names its error code, route pattern, request id and, when known, user id).
 */
export function requestMetrics(opts: {
  log: Logger;
  metrics?: Metrics | undefined;
  route: (ctx: AppContext) => string;
}) {
  const { log, metrics, route: routeOf } = opts;
  return async function requestMetrics(ctx: AppContext, next: () => Promise<unknown>) {
    const started = performance.now();
    try {
      await next();
    } finally {
      const seconds = (performance.now() - started) / 1000;
      const status = ctx.status;
      const route = routeOf(ctx);
      metrics?.recordRequest(ctx.method, route, status, seconds);
      // Every request at debug; at info only what an operator acts on: failures and slow requests
      // (the rest is in /metrics — a line per feed read costs a third of a cached read's CPU).
      const level = status >= 400 || seconds >= SLOW_SECONDS ? 'info' : 'debug';
      if (log.isLevelEnabled(level)) {
        const ms = Math.round(seconds * 10_000) / 10;
        const line: Record<string, unknown> = {
          reqId: ctx.state.requestId,
          method: ctx.method,
          path: ctx.path,
          route,
          status,
          ms,
        };
        if (status >= 400) line.error = errorCodeOf(ctx);
        const userId = ctx.state.principal?.userId;
        if (userId) line.userId = userId;
        log[level](line, 'request');
      }
    }
  };
}
