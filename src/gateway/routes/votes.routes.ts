import Router from '@koa/router';
import type { VoteService } from '../../domain/votes/vote.service.ts';
import type { Limiter } from '../../domain/rate-limit.ts';
import type { AppState } from '../context.ts';
import { requireUser } from '../middleware/authenticate.ts';
import { userRateLimit } from '../middleware/rate-limit.ts';
import { parse } from '../validate.ts';
import { VoteBody } from '../schemas/community.schemas.ts';

export function voteRoutes(deps: { votes: VoteService; voteLimiter: Limiter }): Router<AppState> {
  const router = new Router<AppState>();
  router.post('/api/vote', userRateLimit(deps.voteLimiter), async (ctx) => {
    const { uploadId, vote } = parse(VoteBody, ctx.request.body);
    ctx.body = await deps.votes.vote(requireUser(ctx), uploadId, vote);
  });
  return router;
}
