import Router from '@koa/router';
import { toAppError } from '../middleware/error-handler.ts';
import type { UploadService } from '../../domain/uploads/upload.service.ts';
import type { CreateUpload, UploadOutcomes } from '../../domain/uploads/create-upload.ts';
import type { Limiter } from '../../domain/rate-limit.ts';
import type { MediaFiles } from '../../domain/uploads/ports.ts';
import type { AppContext, AppState } from '../context.ts';
import { requireUser } from '../middleware/authenticate.ts';
import { userRateLimit } from '../middleware/rate-limit.ts';
import { multipartUpload, uploadedFile } from '../middleware/multipart.ts';
import { clientSignal } from '../client-signal.ts';
import { parse } from '../validate.ts';
import { PrivacyBody, UploadFields } from '../schemas/upload.schemas.ts';

export interface UploadRouteDeps {
  createUpload: CreateUpload;
  uploads: UploadService;
  media: MediaFiles;
  uploadLimiter: Limiter;
  /** The caller's vote on an upload, for `my_vote`. */
  myVote(uploadId: string, userId: string): Promise<'fucks' | 'does_not_fuck' | null>;
  /** Refusals before the use case runs (rate limit, body), counted with the use case's own outcomes. */
  outcomes?: Pick<UploadOutcomes, 'rejected'>;
  /** Time spent receiving (and hashing) a multipart body. */
  onReceived?: (seconds: number) => void;
}

export function uploadRoutes(deps: UploadRouteDeps): Router<AppState> {
  const router = new Router<AppState>();
  const { createUpload } = deps;

  /** Parse → one call → respond. */
  const create = async (ctx: AppContext) => {
    const user = requireUser(ctx);
    const fields = parse(UploadFields, ctx.request.body ?? {});
    const request = {
      uploadType: fields.upload_type,
      description: fields.description,
      tags: fields.tags,
      isPrivate: fields.is_private,
      file: fields.upload_type === 'image' ? uploadedFile(ctx) : null,
      imageUrl: fields.image_url,
      externalUrl: fields.external_url,
    };
    ctx.state.uploadOutcomeCounted = true;
    const answer = await createUpload.run(user, request, {
      idempotencyKey: ctx.get('idempotency-key') || null,
      signal: clientSignal(ctx),
    });
    ctx.status = answer.status;
    ctx.type = 'application/json; charset=utf-8';
    ctx.body = answer.body;
    if (answer.replayed) ctx.set('Idempotent-Replayed', 'true');
    if (answer.created) ctx.set('Location', `/api/upload/${answer.created.id}`);
  };
  /** Before the body is read: a malformed Idempotency-Key is refused at once, a known one spends no upload point. */
  const knownKey = async (ctx: AppContext) => {
    const key = ctx.get('idempotency-key');
    return Boolean(key && ctx.state.principal && (await createUpload.knownKey(ctx.state.principal, key)));
  };
  /** Refusals before the use case ran (it counts its own outcomes), for metrics. */
  const refusals = async (ctx: AppContext, next: () => Promise<unknown>) => {
    try {
      await next();
    } catch (e) {
      // By contract code, as the client sees it: a raw error's own code (ECONNREFUSED, 23505…) is not a reason.
      if (!ctx.state.uploadOutcomeCounted) deps.outcomes?.rejected(toAppError(e).code);
      throw e;
    }
  };
  /** A shutting-down server refuses before it reads a body (the use case asks again). */
  const acceptingUploads = async (_ctx: AppContext, next: () => Promise<unknown>) => {
    createUpload.assertAccepting();
    await next();
  };
  const chain = [
    refusals,
    acceptingUploads,
    userRateLimit(deps.uploadLimiter, { exempt: knownKey }),
    multipartUpload({ media: deps.media, ...(deps.onReceived ? { onReceived: deps.onReceived } : {}) }),
    create,
  ] as const;
  router.post('/api/v1/upload', ...chain);
  router.post('/api/upload', ...chain);

  router.get('/api/upload/:id', async (ctx) => {
    const me = ctx.state.principal;
    const myVote = me ? await deps.myVote(ctx.params.id!, me.userId) : undefined;
    ctx.set('Cache-Control', me ? 'private, no-cache' : 'public, no-cache');
    // `my_vote` depends on who asks.
    ctx.set('Vary', 'Authorization, Cookie');
    ctx.body = await deps.uploads.get(me, ctx.params.id!, myVote);
  });

  router.patch('/api/upload/:id/privacy', async (ctx) => {
    const user = requireUser(ctx);
    const { is_private } = parse(PrivacyBody, ctx.request.body);
    ctx.body = await deps.uploads.setPrivacy(
      user,
      ctx.params.id!,
      is_private,
      await deps.myVote(ctx.params.id!, user.userId),
    );
  });

  router.delete('/api/upload/:id', async (ctx) => {
    ctx.body = await deps.uploads.remove(requireUser(ctx), ctx.params.id!);
  });

  return router;
}
