import { serialize } from '../../domain/feeds/feed.service.ts';
import type { AppContext } from '../context.ts';
import { sendWithEtag } from '../fresh.ts';

/**
 * ETag on every successful GET JSON response, and 304 with an empty body when the client's
 * If-None-Match matches. Bytes and streams (cached pages, images) carry their own ETag and are left alone.
 * Run by the error mapper once the routes have answered (errorHandler's `answered`, app.ts): where a layer of its
 * own right below it would have run it on the way back (`await next()`), without that layer's dispatch and async
 * frame on every request; errors never reach it (they go to the error mapper's catch).
 */
export function applyConditionalGet(ctx: AppContext): void {
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
