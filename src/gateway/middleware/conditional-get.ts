import { serialize } from '../../domain/feeds/feed.service.ts';
import type { AppContext } from '../context.ts';
import { sendWithEtag } from '../fresh.ts';

/**
 * ETag on every successful GET JSON response, and 304 with an empty body when the client's
 * If-None-Match matches. Bytes and streams (cached pages, images) carry their own ETag and are left alone.
 */
function applyConditionalGet(ctx: AppContext): void {
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

/** ETag / 304 for what the route answered (errors never reach it: they propagate to the error mapper above). */
export async function conditionalGet(ctx: AppContext, next: () => Promise<unknown>): Promise<void> {
  await next();
  applyConditionalGet(ctx);
}
