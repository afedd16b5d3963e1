import { createHash } from 'node:crypto';
import type { AppContext } from '../context.ts';
import { matchesEtag } from '../fresh.ts';

/**
 * ETag on every successful GET JSON response, and 304 with an empty body when the client's
 * If-None-Match matches. Bytes and streams (cached pages, images) carry their own ETag and are left alone.
 */
export function applyConditionalGet(ctx: AppContext): void {
  if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || ctx.status !== 200) return;
  const body = ctx.body;
  if (body === null || body === undefined || typeof body !== 'object' || Buffer.isBuffer(body) || typeof (body as { pipe?: unknown }).pipe === 'function') return;
  const json = JSON.stringify(body);
  ctx.body = json;
  ctx.type = 'application/json; charset=utf-8';
  ctx.set('ETag', `W/"${createHash('sha1').update(json).digest('base64url')}"`);
  if (matchesEtag(ctx)) {
    ctx.status = 304;
    ctx.body = null;
  }
}
