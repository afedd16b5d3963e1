import { toAppError } from '../middleware/error-handler.ts';
import type { UploadService } from '../../domain/uploads/upload.service.ts';
import type { CreateUpload, UploadOutcomes } from '../../domain/uploads/create-upload.ts';
import type { MediaFiles } from '../../domain/uploads/ports.ts';
import type { AppContext } from '../context.ts';
import { multipartUpload, uploadedFile } from '../middleware/multipart.ts';
import { clientSignal } from '../client-signal.ts';
import { parse } from '../validate.ts';
import { IdParam } from '../schemas/common.schemas.ts';
import {
  DuplicateNotice,
  HashCheckBody,
  HashCheckResults,
  PrivacyBody,
  ProvenanceSummary,
  UploadDeleted,
  UploadPatchBody,
  UploadFields,
  UploadForm,
  UploadRecord,
} from '../schemas/upload.schemas.ts';
import { routes } from './route.ts';

export interface UploadRouteDeps {
  createUpload: CreateUpload;
  uploads: UploadService;
  media: MediaFiles;
  /** The caller's vote on an upload, for `my_vote`. */
  myVote(uploadId: string, userId: string): Promise<'fucks' | 'does_not_fuck' | null>;
  /** Refusals before the use case runs (rate limit, body), counted with the use case's own outcomes. */
  outcomes?: Pick<UploadOutcomes, 'rejected'>;
  /** Time spent receiving (and hashing) a multipart body. */
  onReceived?: (seconds: number) => void;
}

/** Refusals before the use case ran (it counts its own outcomes), for metrics. */
const refusals =
  (deps: UploadRouteDeps) =>
  async (ctx: AppContext, next: () => Promise<unknown>): Promise<void> => {
    try {
      await next();
    } catch (e) {
      // By contract code, as the client sees it: a raw error's own code (ECONNREFUSED, 23505…) is not a reason.
      if (!ctx.state.uploadOutcomeCounted) deps.outcomes?.rejected(toAppError(e).code);
      throw e;
    }
  };

/** A shutting-down server refuses before it reads a body (the use case asks again). */
const acceptingUploads =
  (deps: UploadRouteDeps) =>
  async (_ctx: AppContext, next: () => Promise<unknown>): Promise<void> => {
    deps.createUpload.assertAccepting();
    await next();
  };

/** Before the body is read: a malformed Idempotency-Key is refused at once, a known one spends no upload point. */
const knownKey = (deps: UploadRouteDeps) => async (ctx: AppContext) => {
  const key = ctx.get('idempotency-key');
  return Boolean(key && ctx.state.principal && (await deps.createUpload.knownKey(ctx.state.principal, key)));
};

/** What an upload read answers depends on who asks (`my_vote`, what a held upload shows): cached per viewer. */
const PER_VIEWER = ['public, no-cache', 'private, no-cache'];
function perViewer(ctx: AppContext, signedIn: boolean): void {
  ctx.set('Cache-Control', signedIn ? 'private, no-cache' : 'public, no-cache');
  ctx.set('Vary', 'Authorization, Cookie');
}

export const uploadRoutes = routes<UploadRouteDeps>((route) => {
  /** `POST /api/v1/upload` and its alias: parse → one call → respond. */
  const createUpload = (path: string, operationId: string, alias: boolean) =>
    route({
      method: 'post',
      path,
      operationId,
      tag: 'uploads',
      summary: alias
        ? 'Create an upload (alias of /api/v1/upload)'
        : 'Create an upload: an image file, an image URL or a link',
      description:
        'Multipart (`upload_type=image` with the field `file`, or any type) or JSON (`image_url` and `link`). ' +
        'Files are at most 10 MiB; the image must be JPEG, PNG, GIF or WebP by its bytes. ' +
        'A duplicate (same SHA-256, or a perceptual hash within NEAR_DUPLICATE_DISTANCE) of an upload the caller ' +
        'may see answers 200 with a duplicate notice and stores nothing. ' +
        'An image (file or `image_url`) matching the blocklist (its SHA-256, or a perceptual hash within ' +
        '`BLOCKLIST_DISTANCE`) is 400 `blocked_content`, decided before person detection and encoding; nothing is ' +
        'stored. `HUMAN_POLICY=flag` accepts a person and queues it for the moderators, `hold` accepts it held ' +
        '(`moderation: held`) until approved. ' +
        'With `Idempotency-Key`, a retry from the same user within 24 h returns the first result ' +
        '(`Idempotent-Replayed: true`) and does not spend the upload limit; ' +
        'the same key with a different request is 409.',
      auth: 'required',
      scope: 'upload',
      limit: 'upload',
      idempotencyKey: true,
      body: {
        multipart: UploadForm,
        multipartEncoding: { file: { contentType: 'image/jpeg, image/png, image/gif, image/webp' } },
        json: UploadFields,
      },
      responses: {
        200: {
          description: 'A duplicate: nothing new was stored.',
          json: DuplicateNotice,
          optionalHeaders: ['Idempotent-Replayed'],
        },
        201: {
          description: 'Created.',
          json: UploadRecord,
          headers: ['Location'],
          optionalHeaders: ['Idempotent-Replayed'],
        },
      },
      errors: [
        'invalid_request',
        'unsupported_format',
        'invalid_image',
        'human_detected',
        'ai_generated',
        'blocked_content',
        'fetch_failed',
        'too_many_tags',
        'invalid_tag',
        'conflict',
        'payload_too_large',
        'busy',
        'storage_unavailable',
      ],
      before: (deps) => [refusals(deps), acceptingUploads(deps)],
      limitExempt: knownKey,
      receive: (deps) =>
        multipartUpload({ media: deps.media, ...(deps.onReceived ? { onReceived: deps.onReceived } : {}) }),
      handlerParsesBody: true,
      handler:
        (deps) =>
        async (ctx, { user }) => {
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
          const answer = await deps.createUpload.run(user, request, {
            idempotencyKey: ctx.get('idempotency-key') || null,
            signal: clientSignal(ctx),
          });
          ctx.status = answer.status;
          ctx.type = 'application/json; charset=utf-8';
          ctx.body = answer.body;
          if (answer.replayed) ctx.set('Idempotent-Replayed', 'true');
          if (answer.created) ctx.set('Location', `/api/upload/${answer.created.id}`);
        },
    });
  return [
    createUpload('/api/v1/upload', 'createUpload', false),
    createUpload('/api/upload', 'createUploadAlias', true),
    route({
      method: 'post',
      path: '/api/uploads/check',
      operationId: 'checkUploads',
      tag: 'uploads',
      summary: 'Which of these files are already here or blocked (a bulk client’s pre-check)',
      description:
        'Takes up to 1 000 SHA-256 digests and answers, in request order, what an upload of those bytes would: ' +
        '`blocked` (the blocklist holds the digest), `exists` with the `upload_id` its duplicate notice would name ' +
        "(an upload the caller may see in a listing, or its own), or `new`. Another user's private, held or " +
        'removed upload is `new`: nothing is revealed that an upload would not. Spends no upload limit.',
      auth: 'required',
      scope: 'upload',
      limit: 'general',
      body: { json: HashCheckBody },
      responses: { 200: { description: 'One result per digest, in request order.', json: HashCheckResults } },
      errors: ['invalid_request'],
      handler:
        (deps) =>
        async (ctx, { user, body }) => {
          const results = await deps.uploads.checkHashes(user, body.sha256);
          ctx.body = { results: results.map((r) => ({ sha256: r.sha256, status: r.status, upload_id: r.uploadId })) };
        },
    }),
    route({
      method: 'get',
      path: '/api/upload/:id',
      operationId: 'getUpload',
      tag: 'uploads',
      summary: 'One upload',
      description:
        'Private uploads are reachable by anyone who knows the id (private means unlisted). ' +
        'An authenticated caller also gets `my_vote`. ' +
        'A held upload is 404 to everyone but its owner and admins; a removed one is 410 `removed` to everyone but ' +
        'admins, who get its tombstone record (`moderation: removed`).',
      auth: 'optional',
      scope: 'read',
      limit: 'general',
      params: IdParam,
      responses: {
        200: { description: 'The upload record.', json: UploadRecord, cacheControl: PER_VIEWER },
      },
      errors: ['not_found', 'removed'],
      handler:
        (deps) =>
        async (ctx, { user: me, params }) => {
          const myVote = me ? await deps.myVote(params.id, me.userId) : undefined;
          perViewer(ctx, Boolean(me));
          ctx.body = await deps.uploads.get(me, params.id, myVote);
        },
    }),
    route({
      method: 'patch',
      path: '/api/upload/:id/privacy',
      operationId: 'setUploadPrivacy',
      tag: 'uploads',
      summary: 'Make an upload private or public',
      description:
        'Owner or admin. A held upload is 404 to everyone but its owner and admins; ' +
        'a removed one is 410 `removed` to everyone but admins.',
      auth: 'required',
      scope: 'manage',
      limit: 'general',
      params: IdParam,
      body: { json: PrivacyBody },
      responses: { 200: { description: 'The updated upload record.', json: UploadRecord } },
      errors: ['invalid_request', 'not_found', 'removed'],
      handler:
        (deps) =>
        async (ctx, { user, params, body }) => {
          ctx.body = await deps.uploads.setPrivacy(
            user,
            params.id,
            body.is_private,
            await deps.myVote(params.id, user.userId),
          );
        },
    }),
    route({
      method: 'get',
      path: '/api/upload/:id/provenance',
      operationId: 'getUploadProvenance',
      tag: 'uploads',
      summary: "An image's provenance: the C2PA manifest summary and IPTC marker read at upload",
      description:
        'What was read from the original bytes at upload (the re-encoded variants carry none of it): whether a ' +
        'C2PA manifest was present and validated, its generator, signer and actions, the IPTC `DigitalSourceType`, ' +
        'and the label it gives. The same visibility as `GET /api/upload/{id}`; 404 for a link, and for an image ' +
        'stored before provenance was read or under `AI_POLICY=off` (nothing on record).',
      auth: 'optional',
      scope: 'read',
      limit: 'general',
      params: IdParam,
      responses: {
        200: { description: 'The summary as read.', json: ProvenanceSummary, cacheControl: PER_VIEWER },
      },
      errors: ['not_found', 'removed'],
      handler:
        (deps) =>
        async (ctx, { user: me, params }) => {
          perViewer(ctx, Boolean(me));
          ctx.body = await deps.uploads.provenance(me, params.id);
        },
    }),
    route({
      method: 'patch',
      path: '/api/upload/:id',
      operationId: 'updateUpload',
      tag: 'uploads',
      summary: 'Label an upload as made with AI (owner)',
      description:
        'Owner or admin. `{"ai_generated": true}` adds a "Made with AI" label resting on the owner\'s word ' +
        '(`ai_label: owner`; an upload a marker labels already keeps that label); `false` removes such a label. A ' +
        'label resting on a marker in the file is never removed: `false` on it is 400 `invalid_request` (the file ' +
        'says otherwise, whoever asks). A held upload is 404 to everyone but its owner and admins; a removed one ' +
        'is 410 `removed` to everyone but admins.',
      auth: 'required',
      scope: 'manage',
      limit: 'general',
      params: IdParam,
      body: { json: UploadPatchBody },
      responses: { 200: { description: 'The updated upload record.', json: UploadRecord } },
      errors: ['invalid_request', 'forbidden', 'not_found', 'removed'],
      handler:
        (deps) =>
        async (ctx, { user, params, body }) => {
          ctx.body = await deps.uploads.setAiGenerated(
            user,
            params.id,
            body.ai_generated,
            await deps.myVote(params.id, user.userId),
          );
        },
    }),
    route({
      method: 'delete',
      path: '/api/upload/:id',
      operationId: 'deleteUpload',
      tag: 'uploads',
      summary: 'Delete an upload',
      description:
        'Owner or admin. Removes its votes, tag links and image files (unless another upload shares them). ' +
        'A second delete is 404. A held upload is 404 to everyone but its owner and admins; ' +
        'a removed one is 410 `removed` to everyone but admins.',
      auth: 'required',
      scope: 'manage',
      limit: 'general',
      params: IdParam,
      responses: { 200: { description: 'Deleted.', json: UploadDeleted } },
      errors: ['not_found', 'removed'],
      handler:
        (deps) =>
        async (ctx, { user, params }) => {
          ctx.body = await deps.uploads.remove(user, params.id);
        },
    }),
  ];
});
