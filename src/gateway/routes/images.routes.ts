import Router from '@koa/router';
import { errors } from '../../domain/errors.ts';
import type { UploadService } from '../../domain/uploads/upload.service.ts';
import type { ByteRange, MediaFiles } from '../../domain/uploads/ports.ts';
import type { AppState } from '../context.ts';
import { matchesEtag } from '../fresh.ts';
import { parse } from '../validate.ts';
import { ImageQuery } from '../schemas/upload.schemas.ts';

/** Lifetime of a presigned URL given by MEDIA_REDIRECT=true. */
export const PRESIGNED_SECONDS = 300;

/**
 * `GET /api/image/{id}?size=thumb|medium|full`: the stored WebP variant. Variants never change once
 * written, so they are cacheable for a year and their ETag is their name. The original is never served.
 * The bytes stream from the store (disk or object storage), whole or the one range asked (206); with
 * `redirect` (MEDIA_REDIRECT=true, object storage) the answer is a 302 to a short-lived presigned URL instead.
 */
export function imageRoutes(deps: { uploads: UploadService; media: MediaFiles; redirect?: boolean }): Router<AppState> {
  const router = new Router<AppState>();
  const presign = deps.redirect ? deps.media.presign?.bind(deps.media) : undefined;
  router.get('/api/image/:id', async (ctx) => {
    const { size } = parse(ImageQuery, ctx.query, 'query');
    const { mediaKey: key, listed } = await deps.uploads.imageKey(ctx.state.principal, ctx.params.id!);
    if (presign) {
      // The URL expires: no cache may keep the redirect past it.
      ctx.set('Cache-Control', 'private, no-store');
      ctx.set('Location', await presign(key, size, PRESIGNED_SECONDS));
      ctx.status = 302;
      ctx.body = '';
      return;
    }
    ctx.set('ETag', `"${key}.${size}"`);
    // A held upload's image is for its owner and admins only: no shared cache may keep it.
    ctx.set('Cache-Control', listed ? 'public, max-age=31536000, immutable' : 'private, no-store');
    ctx.set('Content-Security-Policy', "default-src 'none'");
    ctx.set('Cross-Origin-Resource-Policy', 'cross-origin');
    ctx.set('Accept-Ranges', 'bytes');
    const missing = () => errors.notFound(`image ${ctx.params.id} has no ${size} variant`);
    ctx.status = 200;
    const range = ctx.method === 'GET' ? parseRange(ctx.get('Range')) : undefined;
    // 304 and HEAD need no bytes: the size is enough (still a 404 when the variant is gone).
    if (matchesEtag(ctx) || ctx.method === 'HEAD') {
      const found = await deps.media.stat(key, size);
      if (!found) throw missing();
      if (matchesEtag(ctx)) {
        ctx.status = 304;
        return;
      }
      // HEAD: an empty body first, since Koa turns a null body into a 204 and drops Content-Type and
      // Content-Length, then the status and headers of the GET.
      ctx.body = null;
      ctx.status = 200;
      ctx.type = 'image/webp';
      ctx.length = found.size;
      return;
    }
    let file = await deps.media.read(key, size, range);
    // A range outside the image is ignored (RFC 9110 14.2 lets a server do so): the whole image, 200.
    if (file && 'unsatisfiable' in file) file = await deps.media.read(key, size);
    if (!file || 'unsatisfiable' in file) throw missing();
    ctx.body = file.body;
    ctx.type = 'image/webp';
    if (file.range) {
      ctx.status = 206;
      ctx.set('Content-Range', `bytes ${file.range.start}-${file.range.end}/${file.size}`);
      ctx.length = file.range.end - file.range.start + 1;
    } else {
      ctx.status = 200;
      ctx.length = file.size;
    }
  });
  return router;
}

/** One range of `Range: bytes=…`; anything else (several ranges, other units, nonsense) is ignored: 200 whole. */
export function parseRange(header: string): ByteRange | undefined {
  const m = /^bytes=\s*(\d*)\s*-\s*(\d*)\s*$/.exec(header);
  if (!m || (!m[1] && !m[2])) return undefined;
  if (!m[1]) return { suffix: Number(m[2]) };
  const start = Number(m[1]);
  if (!m[2]) return { start };
  const end = Number(m[2]);
  return end < start ? undefined : { start, end };
}
