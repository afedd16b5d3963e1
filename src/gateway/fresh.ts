import type { AppContext } from './context.ts';
import { ListedHeadersResponse } from './listed-headers.ts';

/**
 * True when the request's If-None-Match names the response's ETag (`sent`, else the one set; weak comparison,
 * RFC 9110 13.1.2).
 * Unlike Koa's ctx.fresh this ignores `Cache-Control: no-cache` on the request: fetch() adds it to every
 * request with a hand-set If-None-Match, and validating with the origin is exactly what such a request asks for.
 */
export function matchesEtag(ctx: AppContext, sent?: string): boolean {
  const header = ctx.req.headers['if-none-match'];
  if (!header) return false;
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return false;
  const etag = sent ?? ctx.res.getHeader('ETag');
  if (typeof etag !== 'string' || !etag) return false;
  if (header.trim() === '*') return true;
  const bare = (t: string) => t.trim().replace(/^W\//, '');
  const want = bare(etag);
  return header.split(',').some((t) => bare(t) === want);
}

/**
 * Sends bytes prepared ahead (a cached page, the API document, an asset) with their ETag (and Cache-Control
 * when given; otherwise the route's own stays),
 * or 304 with no body when the client has them. Headers go straight to the response: this runs for every
 * cached feed read.
 */
export function sendWithEtag(
  ctx: AppContext,
  body: Buffer | string,
  type: string,
  etag: string,
  cacheControl?: string,
): void {
  const { res } = ctx;
  if (cacheControl) res.setHeader('Cache-Control', cacheControl);
  res.setHeader('ETag', etag);
  ctx.status = 200;
  if (matchesEtag(ctx, etag)) {
    ctx.status = 304;
    return;
  }
  res.setHeader('Content-Type', type);
  ctx.body = body;
}

/**
 * sendWithEtag for a feed page, the hot read: when the response holds only listed headers (listed-headers.ts), the
 * status line, those and the page's own four go out in one `writeHead` and Koa's respond is skipped (Koa's body
 * setter would set two more headers one by one). For a route that sets no header after it (the headers are on
 * the wire when it returns).
 */
export function sendPage(ctx: AppContext, body: Buffer, type: string, etag: string, cacheControl: string): void {
  const { res } = ctx;
  if (res instanceof ListedHeadersResponse && ctx.writable && !matchesEtag(ctx, etag)) {
    ctx.status = 200;
    const own = ['Cache-Control', cacheControl, 'ETag', etag, 'Content-Type', type, 'Content-Length', `${body.length}`];
    if (res.sendListed(200, own, body)) {
      ctx.respond = false;
      return;
    }
  }
  sendWithEtag(ctx, body, type, etag, cacheControl);
}
