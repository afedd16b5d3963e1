import { serialize } from '../../domain/feeds/feed.service.ts';
import type { AppContext } from '../context.ts';
import { sendWithEtag } from '../fresh.ts';

/**
 * ETag on every successful GET JSON response, and 304 with an empty body when the client's
 * If-None-Match matches. Bytes and streams (cached pages, images) carry their own ETag and are left alone.
 * Runs on the way back for requests conditionalGet marked, from the error mapper (errorHandler's `answered`).
 */
export function applyConditionalGet(ctx: AppContext): void {
  if (!ctx.state.conditionalGet) return;
  if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || ctx.status !== 200) return;
  const body = ctx.body;
  if (
    body === null ||
    body === undefined ||
    typeof body !== 'object' ||
    Buffer.isBuffer(body) ||
    typeof (body as { pipe?: unknown }).pipe === 'function'
  )
    return;
  // Serialized and tagged as cached pages are (one rule for every JSON ETag).
  const page = serialize(body);
  sendWithEtag(ctx, page.body, 'application/json; charset=utf-8', page.etag);
}

/**
 * ETag / 304 for what the route answered (errors never reach it: they propagate to the error mapper above). It
 * marks the request and the error mapper right above it applies it once the routes have answered, as an `await
 * next()` here would: the same point, without a second async frame on every request (app.ts).
 */
export function conditionalGet(ctx: AppContext, next: () => Promise<unknown>): Promise<unknown> {
  ctx.state.conditionalGet = true;
  return next();
}
