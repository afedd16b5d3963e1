import { AppError, errors, type ErrorCode } from '../../domain/errors.ts';
import type { AppContext } from '../context.ts';
import { MAX_FILE_BYTES } from '../../domain/uploads/limits.ts';
import { JSON_LIMIT_BYTES } from '../limits.ts';
import { discardBody } from './discard-body.ts';
import { errorPageHtml, wantsErrorPage } from '../error-page.ts';

export interface ErrorOptions {
  onError?: (code: ErrorCode, ctx: AppContext) => void;
  /** Maps infrastructure errors (the database is unreachable…) onto the contract's codes. */
  classify?: (err: unknown) => AppError | null;
  /** The route pattern of the request, for the log (known for requests refused before routing too). */
  route?: (ctx: AppContext) => string;
  /** Error pages for browsers asking for a page (error-page.ts): the pages' CSP and headers, the stylesheet. */
  page?: { csp: string; headers: ReadonlyArray<readonly [string, string]>; stylesheet: () => string | null };
  /**
   * Runs when the middleware below has answered without throwing, before the 404/405 check (what it throws is
   * mapped as anything else): the ETag / 304 of JSON answers (conditional-get.ts).
   */
  answered?: (ctx: AppContext) => void;
}

/** What an error's log line says about its request: request id, route pattern, error code and user, when known. */
function requestFields(ctx: AppContext, code: ErrorCode, opts: ErrorOptions): Record<string, unknown> {
  const route = opts.route?.(ctx) ?? (ctx as AppContext & { routerPath?: string }).routerPath ?? 'unmatched';
  const userId = ctx.state.principal?.userId;
  return { reqId: ctx.state.requestId, route, error: code, ...(userId ? { userId } : {}) };
}

/**
 * The one place that writes error bodies: `{error, message}` for every non-2xx.
 * AppErrors pass through; errors of body parsers (co-body, formidable) are mapped by their status;
 * anything else is a 500 whose details stay in the log, keyed by the request id.
 */
function writeError(ctx: AppContext, err: unknown, opts: ErrorOptions = {}): void {
  const appError = err instanceof AppError ? err : (opts.classify?.(err) ?? toAppError(err));
  if (appError.code === 'busy' && !(err instanceof AppError)) {
    const fields = requestFields(ctx, appError.code, opts);
    ctx.state.log?.warn({ ...fields, err: (err as Error).message }, 'dependency unavailable');
  }
  if (appError.code === 'internal') {
    ctx.state.log?.error({ ...requestFields(ctx, appError.code, opts), err }, 'unhandled error');
  }
  ctx.state.errorCode = appError.code;
  opts.onError?.(appError.code, ctx);
  // Headers set for a success that never happened (ETag, caching) must not survive.
  for (const h of ['etag', 'cache-control', 'last-modified', 'content-disposition']) ctx.remove(h);
  ctx.status = appError.status;
  for (const [k, v] of Object.entries(appError.headers)) ctx.set(k, v);
  if (appError.status === 413) ctx.set('Connection', 'close');
  // A body a parser began and then left (formidable stops reading at the 21st field, or at a malformed part): Node
  // reads the rest of a body nobody touched before the connection's next request, but not of one read from and
  // paused, so the connection would wait on it, and a client's next request there with it, until a timeout reset
  // it. The connection closes after this answer, and the rest is read first (bounded: errorHandler).
  else if (!ctx.req.complete && ctx.req.readableFlowing !== null) ctx.set('Connection', 'close');
  ctx.set('Cache-Control', 'no-store');
  if (opts.page && wantsErrorPage(ctx.method, ctx.path, ctx.get('accept'))) {
    ctx.set('Content-Security-Policy', opts.page.csp);
    for (const [name, value] of opts.page.headers) ctx.set(name, value);
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = errorPageHtml(appError, opts.page.stylesheet(), ctx.state.requestId);
    return;
  }
  ctx.body = { error: appError.code, message: appError.message };
}

/**
 * Throws 404 not_found for a request no route answered, and 405 method_not_allowed (with `Allow`) for a known
 * path called with a method none of its routes serves: the router's allowedMethods() answers those with a bare
 * 405 (or 501 for a method the router does not know at all) and the `Allow` header; this gives them the
 * contract's body. OPTIONS, which no route serves, is one of those methods: the router would answer it 200 with
 * an empty body. Without an `Allow` (no route at that path) it is a 404 like any unknown path.
 */
function notFoundUnlessAnswered(ctx: AppContext): void {
  const status = ctx.status;
  const bareOptions = ctx.method === 'OPTIONS' && status === 200 && ctx.body === '';
  if (!bareOptions && ((status !== 404 && status !== 405 && status !== 501) || ctx.body !== undefined)) return;
  const allow = status === 404 ? '' : ctx.response.get('Allow');
  if (allow) throw errors.methodNotAllowed(`${ctx.method} is not served on ${ctx.path}; it serves ${allow}`, allow);
  throw errors.notFound(`no route for ${ctx.method} ${ctx.path}`);
}

/**
 * The error mapper: the contract's error body for anything thrown below, a JSON 404 for unknown routes, a 405
 * with `Allow` for a known path's other methods. Then, a response on a closing connection (shutting down, or a
 * 413) to a request whose body is still arriving reads the rest first (bounded), or the client, still writing,
 * meets a reset instead of reading the answer; not a body refused for its declared size: reading it is what
 * that refusal is for not doing.
 */
export function errorHandler(opts: ErrorOptions = {}) {
  const answered = opts.answered;
  return async function errorHandler(ctx: AppContext, next: () => Promise<unknown>) {
    try {
      await next();
      answered?.(ctx);
      notFoundUnlessAnswered(ctx);
    } catch (err) {
      writeError(ctx, err, opts);
    }
    if (!ctx.state.bodyRefusedUnread && !ctx.req.complete && ctx.res.getHeader('Connection') === 'close')
      await discardBody(ctx.req);
  };
}

/** Maps what third-party middleware throws onto the contract's codes; never exposes internals. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const e = err as {
    status?: number;
    statusCode?: number;
    httpCode?: number;
    type?: string;
    code?: unknown;
    message?: string;
  };
  const status = e?.httpCode ?? e?.status ?? e?.statusCode;
  if (status === 413) {
    if (e.type === 'entity.too.large')
      return errors.payloadTooLarge(`JSON body exceeds the limit of 1 MiB (${JSON_LIMIT_BYTES} bytes)`);
    return errors.payloadTooLarge(`request body exceeds the limit: file up to 10 MiB (${MAX_FILE_BYTES} bytes)`);
  }
  if (status === 400 || status === 415 || status === 422) {
    if (e.type === 'entity.parse.failed' || err instanceof SyntaxError) return errors.invalid('malformed JSON body');
    if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported') {
      return errors.invalid('unsupported body encoding: send UTF-8 JSON');
    }
    if (e.type === 'request.size.invalid' || e.type === 'request.aborted')
      return errors.invalid('request body was cut short');
    return errors.invalid('malformed request body');
  }
  return new AppError('internal', 'internal error; the request id identifies it in the server log');
}
