/**
 * API.md Moderation: reports (any user), the queue, actions, blocklist and bans (admins), the modlog (everyone).
 * Every admin route answers 401 without a user and 403 `forbidden` to one who is not an admin.
 */
import Router from '@koa/router';
import { errors } from '../../domain/errors.ts';
import type { ModerationService } from '../../domain/moderation/moderation.service.ts';
import { queuePage } from '../../domain/moderation/queue.ts';
import type { VoteRingService } from '../../domain/moderation/vote-rings.service.ts';
import type { Limiter } from '../../domain/rate-limit.ts';
import type { Principal } from '../../domain/users.ts';
import type { AppContext, AppState } from '../context.ts';
import { requireUser } from '../middleware/authenticate.ts';
import { userRateLimit } from '../middleware/rate-limit.ts';
import { parse } from '../validate.ts';
import {
  BanBody,
  BlocklistBody,
  BlocklistQuery,
  JobsQuery,
  ModerationBody,
  PageQuery,
  QueueQuery,
  ReportBody,
  UsersQuery,
} from '../schemas/moderation.schemas.ts';
import { VoteRingBody } from '../schemas/vote-ring.schemas.ts';

function requireAdmin(ctx: AppContext): Principal {
  const user = requireUser(ctx);
  if (!user.isAdmin) throw errors.forbidden('only admins (the moderators) may use this route');
  return user;
}

export function moderationRoutes(deps: {
  moderation: ModerationService;
  voteRings: VoteRingService;
  reportLimiter: Limiter;
}): Router<AppState> {
  const router = new Router<AppState>();
  const { moderation, voteRings } = deps;

  router.post('/api/upload/:id/report', userRateLimit(deps.reportLimiter), async (ctx) => {
    const body = parse(ReportBody, ctx.request.body);
    const { created, report } = await moderation.report(requireUser(ctx), ctx.params.id!, {
      reason: body.reason,
      note: body.note ?? null,
    });
    ctx.status = created ? 201 : 200;
    ctx.body = report;
  });

  router.get('/api/admin/moderation', async (ctx) => {
    requireAdmin(ctx);
    const q = parse(QueueQuery, ctx.query, 'query');
    const page = await queuePage(q.status, q, {
      rings: voteRings,
      uploads: (status, offset, limit) => moderation.queueItems(status, offset, limit),
    });
    ctx.set('Cache-Control', 'private, no-store');
    ctx.body = { items: page.items, page: q.page, limit: q.limit, has_more: page.has_more };
  });

  router.post('/api/admin/uploads/:id/moderation', async (ctx) => {
    const admin = requireAdmin(ctx);
    const body = parse(ModerationBody, ctx.request.body);
    ctx.body = await moderation.act(admin, ctx.params.id!, body);
  });

  router.post('/api/admin/vote-rings/:id', async (ctx) => {
    const admin = requireAdmin(ctx);
    const body = parse(VoteRingBody, ctx.request.body);
    ctx.body = await voteRings.act(admin, ctx.params.id!, body);
  });

  router.get('/api/admin/blocklist', async (ctx) => {
    requireAdmin(ctx);
    const q = parse(PageQuery, ctx.query, 'query');
    const page = await moderation.blocklist(q);
    ctx.set('Cache-Control', 'private, no-store');
    ctx.body = { entries: page.entries, page: q.page, limit: q.limit, has_more: page.has_more };
  });

  router.post('/api/admin/blocklist', async (ctx) => {
    const admin = requireAdmin(ctx);
    const { dry_run } = parse(BlocklistQuery, ctx.query, 'query');
    const { entries } = parse(BlocklistBody, ctx.request.body);
    ctx.body = await moderation.addToBlocklist(
      admin,
      entries.map((e) => ({ sha256: e.sha256 ?? null, phash: e.phash ?? null, reason: e.reason ?? '' })),
      { dryRun: dry_run },
    );
  });

  router.delete('/api/admin/blocklist/:id', async (ctx) => {
    ctx.body = await moderation.removeFromBlocklist(requireAdmin(ctx), ctx.params.id!);
  });

  router.get('/api/admin/users', async (ctx) => {
    requireAdmin(ctx);
    const q = parse(UsersQuery, ctx.query, 'query');
    const page = await moderation.users(q.q?.trim() || null, q);
    ctx.set('Cache-Control', 'private, no-store');
    ctx.body = { users: page.users, page: q.page, limit: q.limit, has_more: page.has_more };
  });

  router.post('/api/admin/users/:id/ban', async (ctx) => {
    const admin = requireAdmin(ctx);
    const body = parse(BanBody, ctx.request.body);
    ctx.body = await moderation.ban(admin, ctx.params.id!, {
      reason: body.reason,
      until: body.until ? new Date(body.until) : null,
      removeUploads: body.remove_uploads,
    });
  });

  router.delete('/api/admin/users/:id/ban', async (ctx) => {
    ctx.body = await moderation.unban(requireAdmin(ctx), ctx.params.id!);
  });

  router.get('/api/admin/jobs', async (ctx) => {
    requireAdmin(ctx);
    const q = parse(JobsQuery, ctx.query, 'query');
    const page = await moderation.jobs(q.status ?? null, q);
    ctx.set('Cache-Control', 'private, no-store');
    ctx.body = { jobs: page.jobs, page: q.page, limit: q.limit, has_more: page.has_more };
  });

  router.get('/api/admin/jobs/:id', async (ctx) => {
    requireAdmin(ctx);
    ctx.set('Cache-Control', 'private, no-store');
    ctx.body = await moderation.job(ctx.params.id!);
  });

  router.get('/api/modlog', async (ctx) => {
    const q = parse(PageQuery, ctx.query, 'query');
    const page = await moderation.modlog(ctx.state.principal, q);
    // Admins see who acted: not for shared caches.
    ctx.set('Cache-Control', ctx.state.principal ? 'private, no-cache' : 'public, no-cache');
    ctx.set('Vary', 'Authorization, Cookie');
    ctx.body = { entries: page.entries, page: q.page, limit: q.limit, has_more: page.has_more };
  });

  return router;
}
