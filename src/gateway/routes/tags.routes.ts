import Router from '@koa/router';
import type { TagService } from '../../domain/tag.service.ts';
import type { AppState } from '../context.ts';
import { requireUser } from '../middleware/authenticate.ts';
import { parse } from '../validate.ts';
import { TagsBody, TagSuggestQuery } from '../schemas/community.schemas.ts';

export function tagRoutes(deps: { tags: TagService }): Router<AppState> {
  const router = new Router<AppState>();

  router.get('/api/uploads/:id/tags', async (ctx) => {
    ctx.set('Cache-Control', 'public, no-cache');
    ctx.body = { tags: await deps.tags.list(ctx.state.principal, ctx.params.id!) };
  });

  router.post('/api/uploads/:id/tags', async (ctx) => {
    const user = requireUser(ctx);
    const { tags } = parse(TagsBody, ctx.request.body);
    ctx.body = { success: true, tags: await deps.tags.add(user, ctx.params.id!, tags) };
  });

  router.delete('/api/uploads/:id/tags/:slug', async (ctx) => {
    const user = requireUser(ctx);
    ctx.body = { success: true, tags: await deps.tags.remove(user, ctx.params.id!, ctx.params.slug!) };
  });

  router.get('/api/tags', async (ctx) => {
    const { q, limit } = parse(TagSuggestQuery, ctx.query, 'query');
    ctx.set('Cache-Control', 'public, max-age=60');
    ctx.body = { tags: await deps.tags.suggest(q, limit) };
  });

  return router;
}
