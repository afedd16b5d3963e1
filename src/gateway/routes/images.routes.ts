import { errors } from '../../domain/errors.ts';
import type { UploadService } from '../../domain/uploads/upload.service.ts';
import type { ByteRange, MediaFiles } from '../../domain/uploads/ports.ts';
import { matchesEtag } from '../fresh.ts';
import { IdParam } from '../schemas/common.schemas.ts';
import { ImageQuery } from '../schemas/upload.schemas.ts';
import { routes } from './route.ts';

/** Lifetime of a presigned URL given by MEDIA_REDIRECT=true. */
export const PRESIGNED_SECONDS = 300;

/**
 * `GET /api/image/{id}?size=thumb|medium|full`: the stored WebP variant. Variants never change once
 * written, so they are cacheable for a year and their ETag is their name. The original is never served.
 * The bytes stream from the store (disk or object storage), whole or the one range asked (206); with
 * `redirect` (MEDIA_REDIRECT=true, object storage) the answer is a 302 to a short-lived presigned URL instead.
 */
export const imageRoutes = routes<{ uploads: UploadService; media: MediaFiles; redirect?: boolean }>((route) => [
  route({
    method: 'get',
    path: '/api/image/:id',
    operationId: 'getImage',
    tag: 'uploads',
    summary: 'The image of an upload, as WebP',
    description:
      'Variants: thumb ≤ 320 px, medium ≤ 1024 px, full ≤ 2048 px on the long side; ' +
      'animation kept, EXIF/GPS stripped, orientation applied. The original bytes are never served. ' +
      "Private uploads are served too. A held upload's image is 404 to everyone but its owner and admins " +
      '(send the credential); a removed upload has no image files left: 410 `removed`.',
    auth: 'optional',
    scope: 'read',
    limit: 'media',
    params: IdParam,
    query: ImageQuery,
    responses: {
      200: {
        description: 'The variant.',
        other: { 'image/webp': { type: 'string', contentMediaType: 'image/webp' } },
        headers: ['ETag', 'Content-Security-Policy', 'X-Content-Type-Options'],
        cacheControl: ['public, max-age=31536000, immutable', 'private, no-store'],
      },
      206: {
        description: 'One range of the variant (`Range: bytes=…`; a range outside it is ignored: 200).',
        other: { 'image/webp': { type: 'string', contentMediaType: 'image/webp' } },
        headers: ['ETag', 'Content-Security-Policy', 'X-Content-Type-Options'],
        cacheControl: ['public, max-age=31536000, immutable', 'private, no-store'],
      },
      302: {
        description:
          'With object storage and `MEDIA_REDIRECT=true`: a short-lived presigned URL of the variant in the store.',
        headers: ['Presigned-Location'],
        cacheControl: ['private, no-store'],
      },
    },
    errors: ['invalid_request', 'not_found', 'removed', 'storage_unavailable'],
    handler: (deps) => {
      const presign = deps.redirect ? deps.media.presign?.bind(deps.media) : undefined;
      return async (ctx, { user, params, query: { size } }) => {
        const { mediaKey: key, listed } = await deps.uploads.imageKey(user, params.id);
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
        const missing = () => errors.notFound(`image ${params.id} has no ${size} variant`);
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
      };
    },
  }),
]);

/**
 * One range of `Range: bytes=…` (the unit in any case: RFC 9110 compares range units case-insensitively); anything
 * else (several ranges, other units, nonsense) is ignored: 200 whole. Positions past any file's size are held at
 * Number.MAX_SAFE_INTEGER, so that they stay whole numbers when written again (an object store's Range header:
 * `1e+23` is no position, and the store answered the whole image where the disk answered the range).
 */
export function parseRange(header: string): ByteRange | undefined {
  const m = /^bytes=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m || (!m[1] && !m[2])) return undefined;
  const position = (digits: string) => Math.min(Number(digits), Number.MAX_SAFE_INTEGER);
  if (!m[1]) return { suffix: position(m[2]!) };
  const start = position(m[1]);
  if (!m[2]) return { start };
  const end = position(m[2]);
  return end < start ? undefined : { start, end };
}
