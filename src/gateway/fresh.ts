import { gzipSync } from 'node:zlib';
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
 * Whether the client's Accept-Encoding makes `coding` acceptable (RFC 9110 12.5.3: listed, or matched by `*`, with a
 * q-value above 0), as Koa's negotiation answers it; the caller picks among the acceptable ones by its own
 * preference. The common header, a plain list without q-values or `*` (what browsers, curl --compressed, undici
 * and python-requests send), is read here without allocating a parser; any other goes to Koa. No header: none.
 */
export function takesCoding(ctx: Pick<AppContext, 'req' | 'acceptsEncodings'>, coding: 'br' | 'gzip'): boolean {
  const header = ctx.req.headers['accept-encoding'];
  if (!header) return false;
  if (header.includes(';') || header.includes('*')) return ctx.acceptsEncodings(coding) === coding;
  for (const token of header.split(',')) if (token.trim().toLowerCase() === coding) return true;
  return false;
}

/** Pages smaller than this go out as they are: gzip's header and trailer would eat what it saves. */
const GZIP_MIN_BYTES = 1024;
/** The gzip forms kept, by ETag (a content hash): ~2 KB each for a 10 KB page. */
const GZIP_KEPT = 512;
const gzipped = new Map<string, Buffer>();

/** A page's gzip form, made once per page (its ETag names its bytes) and kept for the next reads. */
function gzipOf(etag: string, body: Buffer): Buffer {
  let gz = gzipped.get(etag);
  if (!gz) {
    gz = gzipSync(body, { level: 6 });
    if (gzipped.size >= GZIP_KEPT) gzipped.delete(gzipped.keys().next().value!);
    gzipped.set(etag, gz);
  }
  return gz;
}

/**
 * sendWithEtag for a feed page, the hot read, gzipped for a client that takes it (the same weak ETag: the same
 * page in another coding). When the response holds only listed headers (listed-headers.ts), the status line, those
 * and the page's own go out in one `writeHead` and Koa's respond is skipped (Koa's body setter would set two more
 * headers one by one). For a route that sets no header after it (the headers are on the wire when it returns).
 */
export function sendPage(ctx: AppContext, body: Buffer, type: string, etag: string, cacheControl: string): void {
  const { res } = ctx;
  if (matchesEtag(ctx, etag)) {
    res.setHeader('Vary', 'Accept-Encoding');
    return sendWithEtag(ctx, body, type, etag, cacheControl);
  }
  const gzip = body.length >= GZIP_MIN_BYTES && takesCoding(ctx, 'gzip');
  const out = gzip ? gzipOf(etag, body) : body;
  if (res instanceof ListedHeadersResponse && ctx.writable) {
    ctx.status = 200;
    const own = ['Cache-Control', cacheControl, 'ETag', etag, 'Content-Type', type, 'Vary', 'Accept-Encoding'];
    if (gzip) own.push('Content-Encoding', 'gzip');
    own.push('Content-Length', `${out.length}`);
    if (res.sendListed(200, own, out)) {
      ctx.respond = false;
      return;
    }
  }
  res.setHeader('Vary', 'Accept-Encoding');
  if (gzip) res.setHeader('Content-Encoding', 'gzip');
  sendWithEtag(ctx, out, type, etag, cacheControl);
}
