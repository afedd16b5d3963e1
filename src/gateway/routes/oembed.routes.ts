/**
 * `GET /api/oembed` (issue 30, "Shared links unfurl"): oEmbed 1.0 for an upload page, which names this endpoint
 * in its head (`<link rel="alternate" type="application/json+oembed">`, src/gateway/upload-page.ts). Only a
 * public, visible upload is described: a private, held, removed or missing one is 404, as is any URL that is
 * not an upload page of this service.
 */
import { AppError, errors } from '../../domain/errors.ts';
import type { UploadService } from '../../domain/uploads/upload.service.ts';
import { requestOrigin } from '../request-origin.ts';
import { OEmbedQuery, OEmbedResponse } from '../schemas/oembed.schemas.ts';
import { OEMBED_CACHE_AGE, oembedOf, unfurlable } from '../upload-page.ts';
import { routes } from './route.ts';

const UPLOAD_PAGE = /^\/uploads\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\/?$/i;
const CACHE = `public, max-age=${OEMBED_CACHE_AGE}`;

/** The upload id a page URL of this service names, or null. Any scheme: a proxy may end TLS before us. */
function uploadIdOf(url: string, host: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.host !== host) return null;
  return UPLOAD_PAGE.exec(u.pathname)?.[1] ?? null;
}

export const oembedRoutes = routes<{ uploads: UploadService }>((route) => [
  route({
    method: 'get',
    path: '/api/oembed',
    operationId: 'getOEmbed',
    tag: 'uploads',
    summary: 'oEmbed 1.0 for an upload page',
    description:
      'The oEmbed answer (https://oembed.com) for `url`, an upload page of this service: `photo` for an image ' +
      '(the largest variant within `maxwidth` × `maxheight`), `link` for a link. A URL that is not an upload ' +
      'page of this host, and a private, held, removed or missing upload, are 404: nothing is described that ' +
      'the page itself does not describe to a stranger. `format` other than `json` is 501, as oEmbed says.',
    auth: 'none',
    limit: 'general',
    query: OEmbedQuery,
    responses: {
      200: { description: 'The oEmbed answer.', json: OEmbedResponse, cacheControl: [CACHE] },
    },
    // not_implemented: a `format` other than `json` (oEmbed 2.3.4).
    errors: ['invalid_request', 'not_found', 'not_implemented'],
    handler:
      (deps) =>
      async (ctx, { query }) => {
        if (query.format !== undefined && query.format !== 'json')
          throw errors.notImplemented(`format ${query.format} is not implemented: only json`);
        const id = uploadIdOf(query.url, ctx.host);
        if (!id) throw errors.notFound('url is not an upload page of this service');
        const nothing = () => errors.notFound(`no public upload at ${query.url}`);
        let u;
        try {
          u = await deps.uploads.get(null, id);
        } catch (e) {
          if (e instanceof AppError && (e.code === 'not_found' || e.code === 'removed')) throw nothing();
          throw e;
        }
        if (!unfurlable(u)) throw nothing();
        ctx.set('Cache-Control', CACHE);
        ctx.body = oembedOf(u, requestOrigin(ctx), { maxWidth: query.maxwidth, maxHeight: query.maxheight });
      },
  }),
]);
