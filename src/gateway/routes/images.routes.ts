import Router from '@koa/router';
import { errors } from '../../domain/errors.ts';
import type { UploadService } from '../../domain/uploads/upload.service.ts';
import type { MediaFiles } from '../../domain/uploads/ports.ts';
import type { AppState } from '../context.ts';
import { matchesEtag } from '../fresh.ts';
import { parse } from '../validate.ts';
import { ImageQuery } from '../schemas/upload.schemas.ts';

/**
 * `GET /api/image/{id}?size=thumb|medium|full`: the stored WebP variant. Variants never change once
 * written, so they are cacheable for a year and their ETag is their name. The original is never served.
 */
export function imageRoutes(deps: { uploads: UploadService; media: MediaFiles }): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/api/image/:id', async (ctx) => {
    const { size } = parse(ImageQuery, ctx.query, 'query');
    const { mediaKey: key, listed } = await deps.uploads.imageKey(ctx.state.principal, ctx.params.id!);
    const file = await deps.media.open(key, size);
    if (!file) throw errors.notFound(`image ${ctx.params.id} has no ${size} variant`);
    ctx.status = 200;
    ctx.set('ETag', `"${key}.${size}"`);
    // A held upload's image is for its owner and admins only: no shared cache may keep it.
    ctx.set('Cache-Control', listed ? 'public, max-age=31536000, immutable' : 'private, no-store');
    ctx.set('Content-Security-Policy', "default-src 'none'");
    ctx.set('Cross-Origin-Resource-Policy', 'cross-origin');
    if (matchesEtag(ctx)) {
      await file.handle.close();
      ctx.status = 304;
      return;
    }
    // HEAD: no stream (Koa would not read it); an empty body first, since Koa turns a null body into a 204
    // and drops Content-Type and Content-Length, then the status and headers of the GET.
    if (ctx.method === 'HEAD') {
      await file.handle.close();
      ctx.body = null;
    } else {
      ctx.body = file.handle.createReadStream();
    }
    ctx.status = 200;
    ctx.type = 'image/webp';
    ctx.length = file.size;
  });
  return router;
}
