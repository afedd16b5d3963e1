import Router from '@koa/router';
import { open } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { errors } from '../../domain/errors.ts';
import { toAppError } from '../middleware/error-handler.ts';
import { parseTagList } from '../../domain/tags.ts';
import type { UploadService } from '../../domain/uploads/upload.service.ts';
import type { CreateResult, UploadType, UploadView } from '../../domain/uploads/upload.types.ts';
import type { Limiter } from '../../domain/rate-limit.ts';
import type { MediaFiles } from '../../domain/uploads/ports.ts';
import type { AppContext, AppState } from '../context.ts';
import { requireUser } from '../middleware/authenticate.ts';
import { userRateLimit } from '../middleware/rate-limit.ts';
import { multipartUpload, uploadedFile } from '../middleware/multipart.ts';
import { clientSignal } from '../client-signal.ts';
import { parse } from '../validate.ts';
import { PrivacyBody, UploadFields } from '../schemas/upload.schemas.ts';
import { validateIdempotencyKey, type IdempotencyService } from '../../domain/idempotency.ts';

type Outcome = { accepted: UploadType } | { rejected: string };

export interface UploadRouteDeps {
  /** During a graceful shutdown new uploads are refused (503 busy) while in-flight ones finish. */
  isShuttingDown: () => boolean;
  uploads: UploadService;
  media: MediaFiles;
  uploadLimiter: Limiter;
  idempotency: IdempotencyService;
  /** The caller's vote on an upload, for `my_vote`. */
  myVote(uploadId: string, userId: string): Promise<'fucks' | 'does_not_fuck' | null>;
  /** Outcome of every upload request, for metrics: accepted (by type) or rejected (by reason). */
  onOutcome?: (outcome: Outcome) => void;
  /** Time spent receiving (and hashing) a multipart body. */
  onReceived?: (seconds: number) => void;
}

/** Reads a temp file into an ArrayBuffer of its own, so it can be moved (not copied) to a worker. */
async function readWhole(path: string, size: number): Promise<ArrayBuffer> {
  const buf = new ArrayBuffer(size);
  const fh = await open(path, 'r');
  try {
    let off = 0;
    while (off < size) {
      const { bytesRead } = await fh.read(new Uint8Array(buf, off), 0, size - off, off);
      if (bytesRead === 0) break;
      off += bytesRead;
    }
  } finally {
    await fh.close();
  }
  return buf;
}

const asResponse = (result: CreateResult) =>
  result.kind === 'duplicate' ? { status: 200, body: result.notice } : { status: 201, body: result.upload };

const fingerprint = (fields: UploadFields, tags: string[], fileSha256: string | null) =>
  createHash('sha256')
    .update(JSON.stringify([fields.upload_type, fields.description, tags, fields.is_private, fields.image_url ?? null, fields.external_url ?? null, fileSha256]))
    .digest('hex');

export function uploadRoutes(deps: UploadRouteDeps): Router<AppState> {
  const router = new Router<AppState>();

  const create = async (ctx: AppContext) => {
    const user = requireUser(ctx);
    const fields = parse(UploadFields, ctx.request.body ?? {});
    const tags = parseTagList(fields.tags);
    const common = { description: fields.description, tags, isPrivate: fields.is_private };
    const signal = clientSignal(ctx);
    const file = fields.upload_type === 'image' ? uploadedFile(ctx) : null;
    // `work` aborts when the client goes, or when an Idempotency-Key claim this request held cannot be kept.
    const run = async (work: AbortSignal): Promise<CreateResult> => {
      if (fields.upload_type === 'image') {
        if (!file) throw errors.invalid('file is required when upload_type=image (multipart field "file")');
        // Read from the temp file only if the bytes are processed (not for an exact duplicate).
        const bytes = () => readWhole(file.path, file.size);
        return deps.uploads.createImage(user, { ...common, bytes, sha256: file.sha256, originalName: file.originalName, sourceUrl: null }, work);
      }
      if (fields.upload_type === 'image_url') {
        if (!fields.image_url) throw errors.invalid('image_url is required when upload_type=image_url');
        return deps.uploads.createFromUrl(user, { ...common, imageUrl: fields.image_url }, work);
      }
      if (!fields.external_url) throw errors.invalid('external_url is required when upload_type=link');
      return deps.uploads.createLink(user, { ...common, externalUrl: fields.external_url });
    };
    // The answer is serialized once; a replay comes back from the idempotency store as that text.
    let created = null as Pick<UploadView, 'id' | 'upload_type'> | null;
    const respond = async (work: AbortSignal) => {
      const result = await run(work);
      if (result.kind === 'created') created = result.upload;
      const r = asResponse(result);
      return { status: r.status, body: JSON.stringify(r.body) };
    };
    const key = ctx.get('idempotency-key');
    const response = key
      ? await deps.idempotency.run(user.userId, validateIdempotencyKey(key), fingerprint(fields, tags, file?.sha256 ?? null), respond, signal)
      : await respond(signal);
    if (response.status === 201) created ??= JSON.parse(response.body) as UploadView;
    ctx.status = response.status;
    if ('replayed' in response && response.replayed) ctx.set('Idempotent-Replayed', 'true');
    ctx.type = 'application/json; charset=utf-8';
    ctx.body = response.body;
    if (created) ctx.set('Location', `/api/upload/${created.id}`);
    // A replay stored nothing new: it was counted when it first ran.
    if (!('replayed' in response && response.replayed)) deps.onOutcome?.(created ? { accepted: created.upload_type } : { rejected: 'duplicate' });
  };
  /** Before the body is read: a malformed Idempotency-Key is refused at once, a known one spends no upload point. */
  const knownKey = async (ctx: AppContext) => {
    const key = ctx.get('idempotency-key');
    return Boolean(key && ctx.state.principal && (await deps.idempotency.known(ctx.state.principal.userId, validateIdempotencyKey(key))));
  };
  /** Refusals anywhere in the chain, for metrics (an accepted upload or duplicate is counted by `create`). */
  const outcome = async (_ctx: AppContext, next: () => Promise<unknown>) => {
    try {
      await next();
    } catch (e) {
      // By contract code, as the client sees it: a raw error's own code (ECONNREFUSED, 23505…) is not a reason.
      deps.onOutcome?.({ rejected: toAppError(e).code });
      throw e;
    }
  };
  const acceptingUploads = async (_ctx: AppContext, next: () => Promise<unknown>) => {
    if (deps.isShuttingDown()) throw errors.busy('the server is shutting down; retry (another instance will take it)', 5);
    await next();
  };
  const chain = [
    outcome,
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
    ctx.body = await deps.uploads.get(ctx.params.id!, myVote);
  });

  router.patch('/api/upload/:id/privacy', async (ctx) => {
    const user = requireUser(ctx);
    const { is_private } = parse(PrivacyBody, ctx.request.body);
    ctx.body = await deps.uploads.setPrivacy(user, ctx.params.id!, is_private, await deps.myVote(ctx.params.id!, user.userId));
  });

  router.delete('/api/upload/:id', async (ctx) => {
    ctx.body = await deps.uploads.remove(requireUser(ctx), ctx.params.id!);
  });

  return router;
}
