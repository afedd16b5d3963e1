import type { FeedService } from '../../domain/feeds/feed.service.ts';
import { renderAtom } from '../atom-feed.ts';
import { matchesEtag, sendPage } from '../fresh.ts';
import {
  AtomFeedQuery,
  FeedPage,
  FeedQuery,
  OwnUploadsPage,
  OwnUploadsQuery,
  Profile,
  RecentItems,
  RecentQuery,
} from '../schemas/community.schemas.ts';
import type { UploadView } from '../../domain/uploads/upload.types.ts';
import type { AppContext } from '../context.ts';
import { requestOrigin } from '../request-origin.ts';
import { FEED_PAGE_SIZE } from '../web-limits.ts';
import { routes } from './route.ts';

const JSON_TYPE = 'application/json; charset=utf-8';
const ATOM_TYPE = 'application/atom+xml; charset=utf-8';
const ATOM_CACHE = 'public, max-age=120';
const FEED_CACHE = 'public, max-age=120';

/**
 * RFC 9110 13.2.2: If-None-Match when the request has one, else If-Modified-Since against the feed's
 * Last-Modified (the ETag and Last-Modified headers are already set).
 */
function notModified(ctx: AppContext, lastModified: Date | null): boolean {
  if (ctx.req.headers['if-none-match']) return matchesEtag(ctx);
  const since = Date.parse(ctx.req.headers['if-modified-since'] ?? '');
  return lastModified !== null && !Number.isNaN(since) && lastModified.getTime() <= since;
}

// Hot reads: found by exact path (hot-routes.ts).
export const feedRoutes = routes<{ feeds: FeedService }>((route) => [
  route({
    method: 'get',
    path: '/api/uploads',
    operationId: 'listUploads',
    tag: 'feeds',
    summary: 'Public uploads, paginated, filtered and sorted',
    description:
      'Public uploads only, for everyone (owners find their private ones in /api/profile). ' +
      'Default order: newest first. Pages by number (`page`, for the first 10 000 rows) or by `cursor`: each page ' +
      "answers `next_cursor`, and `cursor=<next_cursor>` reads the next page from the order's index however deep it " +
      'is. In a ranked sort (`top`, `hot`, `best`) a traversal by cursor never shows an upload twice: an upload ' +
      'whose votes moved it after the first page is skipped from then on.',
    auth: 'none',
    limit: 'general',
    query: FeedQuery,
    responses: { 200: { description: 'One page.', json: FeedPage, cacheControl: ['public, max-age=120'] } },
    errors: ['invalid_request', 'invalid_cursor', 'page_too_deep'],
    hot: true,
    handler:
      (deps) =>
      (ctx, { query }) => {
        // A page this process holds is sent at once (no async frame); any other is looked up, or built.
        const hit = deps.feeds.cachedPage(query);
        if (hit) return sendPage(ctx, hit.body, JSON_TYPE, hit.etag, FEED_CACHE);
        return deps.feeds.list(query).then((page) => sendPage(ctx, page.body, JSON_TYPE, page.etag, FEED_CACHE));
      },
  }),
  route({
    method: 'get',
    path: '/feed.atom',
    operationId: 'atomFeed',
    tag: 'feeds',
    summary: "A listing's first page as an Atom feed",
    description:
      'The filters of `GET /api/uploads` (`sort`, `tag`, `user`, `type`); the first page the web front end shows ' +
      `for them (${FEED_PAGE_SIZE} public uploads) as an Atom 1.0 document (RFC 4287) for feed readers. ` +
      "`Last-Modified` is the newest entry's time; `If-None-Match` or `If-Modified-Since` → 304.",
    auth: 'none',
    limit: 'general',
    internal: true,
    query: AtomFeedQuery,
    responses: {
      200: {
        description: 'The feed.',
        other: { 'application/atom+xml': { type: 'string' } },
        headers: ['ETag'],
        optionalHeaders: ['Last-Modified'],
        cacheControl: [ATOM_CACHE],
      },
    },
    errors: ['invalid_request'],
    hot: true,
    handler:
      (deps) =>
      async (ctx, { query }) => {
        const page = await deps.feeds.list({ ...query, page: 1, limit: FEED_PAGE_SIZE });
        const { uploads } = JSON.parse(page.body.toString('utf8')) as { uploads: UploadView[] };
        // The request's scheme and host (X-Forwarded-Proto/-Host with TRUST_PROXY), as the client named us.
        const origin = requestOrigin(ctx);
        const self = `${origin}${ctx.path}${ctx.querystring ? `?${ctx.querystring}` : ''}`;
        const feed = renderAtom({ origin, self, listing: query, uploads, now: new Date() });
        const { res } = ctx;
        res.setHeader('Cache-Control', ATOM_CACHE);
        res.setHeader('ETag', feed.etag);
        if (feed.lastModified) res.setHeader('Last-Modified', feed.lastModified.toUTCString());
        ctx.status = 200;
        if (notModified(ctx, feed.lastModified)) {
          ctx.status = 304;
          return;
        }
        res.setHeader('Content-Type', ATOM_TYPE);
        ctx.body = feed.xml;
      },
  }),
  route({
    method: 'get',
    path: '/api/items-recent',
    operationId: 'recentItems',
    tag: 'feeds',
    summary: 'The newest public uploads',
    auth: 'none',
    limit: 'general',
    query: RecentQuery,
    responses: { 200: { description: 'Newest first.', json: RecentItems, cacheControl: ['public, max-age=300'] } },
    errors: ['invalid_request'],
    hot: true,
    handler:
      (deps) =>
      async (ctx, { query }) => {
        const page = await deps.feeds.recent(query.limit);
        sendPage(ctx, page.body, JSON_TYPE, page.etag, 'public, max-age=300');
      },
  }),
  route({
    method: 'get',
    path: '/api/profile',
    operationId: 'profile',
    tag: 'feeds',
    summary: "The caller's profile: user, stats and own uploads",
    auth: 'required',
    scope: 'read',
    limit: 'general',
    responses: {
      200: { description: 'The profile.', json: Profile, cacheControl: ['private, max-age=30'], headers: ['Vary'] },
    },
    hot: true,
    handler:
      (deps) =>
      async (ctx, { user }) => {
        const profile = await deps.feeds.profile(user);
        ctx.set('Cache-Control', 'private, max-age=30');
        ctx.set('Vary', 'Authorization, Cookie');
        ctx.body = profile;
      },
  }),
  route({
    method: 'get',
    path: '/api/profile/uploads',
    operationId: 'ownUploads',
    tag: 'feeds',
    summary: "The caller's own uploads, a page at a time",
    description:
      'Private ones included, removed ones not, newest first. The profile answers the first page and its ' +
      '`next_cursor`; this answers the pages after it (`cursor`), or the first page at another `limit`.',
    auth: 'required',
    scope: 'read',
    limit: 'general',
    query: OwnUploadsQuery,
    responses: {
      200: {
        description: 'One page.',
        json: OwnUploadsPage,
        cacheControl: ['private, max-age=30'],
        headers: ['Vary'],
      },
    },
    errors: ['invalid_request', 'invalid_cursor'],
    handler:
      (deps) =>
      async (ctx, { user, query }) => {
        const page = await deps.feeds.ownUploads(user, query.limit, query.cursor);
        ctx.set('Cache-Control', 'private, max-age=30');
        ctx.set('Vary', 'Authorization, Cookie');
        ctx.body = page;
      },
  }),
]);
