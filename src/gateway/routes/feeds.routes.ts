import { LRUCache } from 'lru-cache';
import type { z } from 'zod';
import type { FeedService } from '../../domain/feeds/feed.service.ts';
import { requireUser } from '../middleware/authenticate.ts';
import { sendWithEtag } from '../fresh.ts';
import { parse } from '../validate.ts';
import { FeedQuery, RecentQuery } from '../schemas/community.schemas.ts';
import { HotRoutes } from '../hot-routes.ts';

type FeedQueryValue = z.output<typeof FeedQuery>;

const JSON_TYPE = 'application/json; charset=utf-8';

export function feedRoutes(deps: { feeds: FeedService }): HotRoutes {
  // Hot reads: found by exact path (hot-routes.ts).
  const router = new HotRoutes();
  // The same few query strings arrive again and again: validate each once.
  const queries = new LRUCache<string, FeedQueryValue>({ max: 1000 });

  router.get('/api/uploads', async (ctx) => {
    let q = queries.get(ctx.querystring);
    if (!q) queries.set(ctx.querystring, (q = parse(FeedQuery, ctx.query, 'query')));
    const page = await deps.feeds.list(q);
    sendWithEtag(ctx, page.body, JSON_TYPE, page.etag, 'public, max-age=120');
  });

  router.get('/api/items-recent', async (ctx) => {
    const { limit } = parse(RecentQuery, ctx.query, 'query');
    const page = await deps.feeds.recent(limit);
    sendWithEtag(ctx, page.body, JSON_TYPE, page.etag, 'public, max-age=300');
  });

  router.get('/api/profile', async (ctx) => {
    const profile = await deps.feeds.profile(requireUser(ctx));
    ctx.set('Cache-Control', 'private, max-age=30');
    ctx.set('Vary', 'Authorization, Cookie');
    ctx.body = profile;
  });

  return router;
}
