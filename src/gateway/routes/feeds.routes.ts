import type { FeedService } from '../../domain/feeds/feed.service.ts';
import { sendWithEtag } from '../fresh.ts';
import {
  FeedPage,
  FeedQuery,
  OwnUploadsPage,
  OwnUploadsQuery,
  Profile,
  RecentItems,
  RecentQuery,
} from '../schemas/community.schemas.ts';
import { routes } from './route.ts';

const JSON_TYPE = 'application/json; charset=utf-8';

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
      async (ctx, { query }) => {
        const page = await deps.feeds.list(query);
        sendWithEtag(ctx, page.body, JSON_TYPE, page.etag, 'public, max-age=120');
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
        sendWithEtag(ctx, page.body, JSON_TYPE, page.etag, 'public, max-age=300');
      },
  }),
  route({
    method: 'get',
    path: '/api/profile',
    operationId: 'profile',
    tag: 'feeds',
    summary: "The caller's profile: user, stats and own uploads",
    auth: 'required',
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
