import type { AppContext } from './context.ts';

/**
 * True when the request's If-None-Match names the response's ETag (weak comparison, RFC 9110 13.1.2).
 * Unlike Koa's ctx.fresh this ignores `Cache-Control: no-cache` on the request: fetch() adds it to every
 * request with a hand-set If-None-Match, and validating with the origin is exactly what such a request asks for.
 */
export function matchesEtag(ctx: AppContext): boolean {
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return false;
  const header = ctx.req.headers['if-none-match'];
  if (!header) return false;
  const etag = ctx.res.getHeader('ETag');
  if (typeof etag !== 'string' || !etag) return false;
  if (header.trim() === '*') return true;
  const bare = (t: string) => t.trim().replace(/^W\//, '');
  const want = bare(etag);
  return header.split(',').some((t) => bare(t) === want);
}
