import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { AppContext } from '../context.ts';
import { listHeader } from '../listed-headers.ts';
import { HSTS_HEADER, SECURITY_HEADERS } from '../security-headers.ts';

/** A client-sent id is echoed only when it is short and plain; anything else gets a fresh UUID. */
const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * What every response carries whatever happens below: the request id (echoed as X-Request-Id, and the process
 * logger on `ctx.state`), the security headers, and `Connection: close` while draining (keep-alive connections
 * are not reused: clients reconnect elsewhere). Synchronous (no async frame): set before anything can fail.
 */
export function requestHeaders(opts: { log: Logger; isShuttingDown: () => boolean }) {
  const { log, isShuttingDown } = opts;
  return function requestHeaders(ctx: AppContext, next: () => Promise<unknown>) {
    const sent = ctx.req.headers['x-request-id'];
    const id = typeof sent === 'string' && SANE_ID.test(sent) ? sent : randomUUID();
    ctx.state.requestId = id;
    ctx.state.log = log;
    // Listed on the response (listed-headers.ts; Koa's ctx.set costs more than the header itself): a cached page
    // writes them with its own in one writeHead, anything else sets them first as setHeader would have here.
    const res = ctx.res;
    listHeader(res, 'X-Request-Id', id);
    for (let i = 0; i < SECURITY_HEADERS.length; i++) listHeader(res, SECURITY_HEADERS[i]![0], SECURITY_HEADERS[i]![1]);
    if (ctx.secure) listHeader(res, HSTS_HEADER[0], HSTS_HEADER[1]);
    if (isShuttingDown()) listHeader(res, 'Connection', 'close');
    return next();
  };
}
