/**
 * Resumable uploads, tus 1.0 (issue 49; API.md "Resumable uploads"): core, creation, creation-with-upload,
 * termination, expiration and checksum (sha256). The protocol is @tus/server's (tus-server.ts: its handlers over
 * the domain's uploads and locks), mounted in these routes, so the gateway's own chain runs around it: auth and
 * scope `upload`, the upload limit spent once at creation (after the checks that refuse it: 413, metadata,
 * RESUMABLE_MAX_OPEN), Idempotency-Key (a replay is answered here, before the library), the contract's error
 * bodies, and the operations in the OpenAPI document. OPTIONS and the Tus-Resumable check are `tusHeaders`
 * (app.ts); `GET …/{id}` (the offset as JSON) and `GET …/{id}/result` are ours.
 */
import type { ResumableUploads, ResumableRow } from '../../domain/uploads/resumable.ts';
import { assertLength } from '../../domain/uploads/resumable.ts';
import { errors } from '../../domain/errors.ts';
import type { AppContext } from '../context.ts';
import { requireUser } from '../middleware/authenticate.ts';
import {
  fieldsOf,
  metadataOf,
  resumableState,
  TUS_EXTENSIONS,
  TUS_PATH,
  tusServer,
  type TusServer,
} from '../tus-server.ts';
import { ErrorBody, IdParam } from '../schemas/common.schemas.ts';
import {
  DuplicateNotice,
  ResumablePending,
  ResumableState,
  ResumableStatusBody,
  UploadRecord,
} from '../schemas/upload.schemas.ts';
import { routes } from './route.ts';
import type { CreateUpload } from '../../domain/uploads/create-upload.ts';

export interface ResumableRouteDeps {
  resumable: ResumableUploads;
  createUpload: CreateUpload;
}

const OCTETS = 'application/offset+octet-stream';

/** One tus server per app (per domain service). */
const servers = new WeakMap<ResumableUploads, TusServer>();
function tusOf(deps: ResumableRouteDeps): TusServer {
  let s = servers.get(deps.resumable);
  if (!s) servers.set(deps.resumable, (s = tusServer(deps.resumable)));
  return s;
}

/** OPTIONS answers and the Tus-Resumable check (412 with Tus-Version), for every request under TUS_PATH. */
export function tusHeaders(ctx: AppContext, next: () => Promise<unknown>): unknown {
  if (!ctx.path.startsWith(TUS_PATH)) return next();
  ctx.set('Tus-Resumable', '1.0.0');
  if (ctx.method === 'OPTIONS') {
    ctx.set('Tus-Version', '1.0.0');
    ctx.set('Tus-Extension', TUS_EXTENSIONS.join(','));
    ctx.set('Tus-Max-Size', String(10 * 1024 * 1024));
    ctx.set('Tus-Checksum-Algorithm', 'sha256');
    ctx.status = 204;
    return undefined;
  }
  const isResult = ctx.path.endsWith('/result');
  if (!isResult && ctx.method !== 'GET' && ctx.get('tus-resumable') !== '1.0.0') {
    ctx.set('Tus-Version', '1.0.0');
    ctx.status = 412;
    ctx.body = { error: 'invalid_request', message: 'Tus-Resumable: 1.0.0 is required (the only version served)' };
    return undefined;
  }
  return next();
}

/**
 * A non-negative integer header (tus 1.0: digits, any count of them), or 400 naming it. One past what a double holds
 * exactly is still a number: past every limit (413 for a length, not 400 as if it were not one).
 */
function intHeader(ctx: AppContext, name: string): number {
  const v = ctx.get(name);
  if (!/^\d+$/.test(v)) throw errors.invalid(`${name} must be a non-negative integer`);
  const digits = v.replace(/^0+(?=\d)/, '');
  return digits.length > 15 ? Number.POSITIVE_INFINITY : Number(digits);
}

function tusState(ctx: AppContext, row: ResumableRow): void {
  ctx.set('Upload-Offset', String(row.received));
  ctx.set('Upload-Length', String(row.length));
  ctx.set('Cache-Control', 'no-store');
  if (row.status === 'receiving') ctx.set('Upload-Expires', row.expiresAt.toUTCString());
}

function assertOctets(ctx: AppContext): void {
  if (ctx.get('content-type').split(';')[0]!.trim().toLowerCase() !== OCTETS)
    throw Object.assign(errors.invalid(`Content-Type must be ${OCTETS}`), { status: 415 });
}

const key = (ctx: AppContext) => ctx.get('idempotency-key') || null;
/** Whether a creation carries its first bytes (creation-with-upload): a typed body that is not empty. */
const hasBody = (ctx: AppContext) => ctx.get('content-type') !== '' && Number(ctx.get('content-length') || 1) > 0;

/** A refusal with tus’s own status (not in the contract’s table), in the contract’s error body (`invalid_request`). */
const tusRefusal = (description: string) => ({ description, json: ErrorBody });
/** What tusHeaders answers every request under TUS_PATH but GET, OPTIONS and `…/result` without the header. */
const VERSION_REQUIRED = {
  412: tusRefusal('`Tus-Resumable: 1.0.0` is missing or names another version; `Tus-Version` lists the one served.'),
};

export const resumableRoutes = routes<ResumableRouteDeps>((route) => [
  route({
    method: 'post',
    path: TUS_PATH,
    operationId: 'createResumableUpload',
    tag: 'uploads',
    summary: 'Create a resumable upload (tus 1.0 creation, creation-with-upload)',
    description:
      'tus 1.0 (https://tus.io/protocols/resumable-upload): `Tus-Resumable: 1.0.0`, `Upload-Length` (at most ' +
      '10 MiB, else 413 before anything is stored), `Upload-Metadata` with `upload_type` (`image`), `filename`, ' +
      '`description`, `tags`, `is_private` (base64 values). Spends the upload limit once; at most ' +
      '`RESUMABLE_MAX_OPEN` open per user (429 `rate_limited`). A body of type `application/offset+octet-stream` ' +
      'is the first bytes (creation-with-upload); when it is the whole file, the 201 body carries the upload ' +
      'use case’s answer as `result` (`{"status","body"}`, what `…/result` answers). With `Idempotency-Key`, ' +
      'the same key answers the same upload ' +
      '(`Idempotent-Replayed: true`, no limit spent) and is the key of the upload the complete file creates. ' +
      'OPTIONS on this path answers `Tus-Version`, `Tus-Extension`, `Tus-Max-Size`, `Tus-Checksum-Algorithm`.',
    auth: 'required',
    scope: 'upload',
    limit: 'upload',
    idempotencyKey: true,
    responses: {
      201: {
        description: 'Created; `Location` is the upload URL.',
        json: ResumableState,
        headers: ['Resumable-Location'],
        optionalHeaders: ['Idempotent-Replayed'],
      },
      ...VERSION_REQUIRED,
      415: tusRefusal('A body (creation-with-upload) whose `Content-Type` is not `application/offset+octet-stream`.'),
    },
    errors: ['invalid_request', 'payload_too_large', 'rate_limited', 'conflict'],
    before: (deps) => [
      async (ctx, next) => {
        deps.createUpload.assertAccepting();
        const user = requireUser(ctx);
        const k = key(ctx);
        if (k && (await deps.resumable.byKey(user, k))) return next();
        if (ctx.get('upload-defer-length')) throw errors.invalid('Upload-Defer-Length is not supported');
        // Refused before the upload limit is spent (the library checks these again when it creates the upload).
        assertLength(intHeader(ctx, 'Upload-Length'));
        fieldsOf(metadataOf(ctx));
        // A first chunk of another type is refused here too, not in the handler: there the limit was spent.
        if (hasBody(ctx)) assertOctets(ctx);
        await deps.resumable.assertRoom(user);
        return next();
      },
    ],
    limitExempt: (deps) => async (ctx) => {
      const k = key(ctx);
      return Boolean(k && ctx.state.principal && (await deps.resumable.byKey(ctx.state.principal, k)));
    },
    handlerParsesBody: true,
    handler:
      (deps) =>
      async (ctx, { user }) => {
        const k = key(ctx);
        const replayed = k ? await deps.resumable.byKey(user, k) : null;
        if (replayed) {
          // The same key answers the same upload (no limit spent, no byte written: its bytes are the first
          // creation's).
          ctx.set('Idempotent-Replayed', 'true');
          tusState(ctx, replayed);
          ctx.set('Location', `${TUS_PATH}/${replayed.id}`);
          ctx.status = 201;
          ctx.body = resumableState(replayed, replayed.status === 'done' ? replayed.result : null);
          return;
        }
        await tusOf(deps).serve(ctx, user);
      },
  }),
  route({
    method: 'get',
    path: `${TUS_PATH}/:id`,
    operationId: 'getResumableUpload',
    tag: 'uploads',
    summary: 'A resumable upload’s offset (tus HEAD; GET answers the same as JSON)',
    description:
      'HEAD (tus core): `Upload-Offset`, `Upload-Length`, `Upload-Expires`, `Cache-Control: no-store`. ' +
      '404 for an unknown, deleted or expired upload, or another user’s.',
    auth: 'required',
    scope: 'upload',
    limit: 'general',
    params: IdParam,
    responses: { 200: { description: 'The offset.', json: ResumableStatusBody, cacheControl: ['no-store'] } },
    errors: ['not_found'],
    handler:
      (deps) =>
      async (ctx, { user, params }) => {
        // HEAD (which the router routes here) is the tus server's.
        if (ctx.method === 'HEAD') return tusOf(deps).serve(ctx, user);
        const row = await deps.resumable.get(user, params.id);
        tusState(ctx, row);
        ctx.body = { offset: row.received, length: row.length, status: row.status };
      },
  }),
  route({
    method: 'patch',
    path: `${TUS_PATH}/:id`,
    operationId: 'patchResumableUpload',
    tag: 'uploads',
    summary: 'Send bytes of a resumable upload (tus PATCH)',
    description:
      '`Content-Type: application/offset+octet-stream` (else 415), `Upload-Offset` equal to the upload’s (else ' +
      '409; 409 too while another request, through any gateway, is sending bytes to it), optional ' +
      '`Upload-Checksum: sha256 <base64>` (460 and the chunk discarded on a mismatch). 204 with the new ' +
      '`Upload-Offset`. The PATCH that completes the file runs the upload use case before it answers; ' +
      'its outcome is at `…/result`.',
    auth: 'required',
    scope: 'upload',
    limit: 'general',
    params: IdParam,
    responses: {
      204: { description: 'Bytes stored.' },
      ...VERSION_REQUIRED,
      415: tusRefusal('`Content-Type` is not `application/offset+octet-stream`.'),
      460: tusRefusal('`Upload-Checksum` does not match the chunk, which is discarded.'),
    },
    errors: ['invalid_request', 'not_found', 'conflict', 'payload_too_large'],
    handlerParsesBody: true,
    handler:
      (deps) =>
      async (ctx, { user }) => {
        await tusOf(deps).serve(ctx, user);
      },
  }),
  route({
    method: 'delete',
    path: `${TUS_PATH}/:id`,
    operationId: 'deleteResumableUpload',
    tag: 'uploads',
    summary: 'Abandon a resumable upload (tus termination)',
    auth: 'required',
    scope: 'upload',
    limit: 'general',
    params: IdParam,
    responses: { 204: { description: 'Deleted, with its bytes.' }, ...VERSION_REQUIRED },
    // invalid_request: the library checks every tus header a request carries, whatever its method (a malformed
    // Upload-Concat or Upload-Length on a termination is a 400 naming it, and nothing is deleted).
    errors: ['invalid_request', 'not_found', 'conflict'],
    handler:
      (deps) =>
      async (ctx, { user }) => {
        await tusOf(deps).serve(ctx, user);
      },
  }),
  route({
    method: 'get',
    path: `${TUS_PATH}/:id/result`,
    operationId: 'getResumableUploadResult',
    tag: 'uploads',
    summary: 'What a resumable upload became',
    description:
      '202 `{"status":"receiving"|"processing"}` until the upload use case has run on the complete file; then ' +
      'exactly what `POST /api/v1/upload` would have answered: 201 with the record, 200 with the duplicate notice, ' +
      'or the error body with its status.',
    auth: 'required',
    scope: 'upload',
    limit: 'general',
    params: IdParam,
    responses: {
      200: { description: 'A duplicate notice.', json: DuplicateNotice, cacheControl: ['no-store'] },
      201: { description: 'The upload record.', json: UploadRecord, cacheControl: ['no-store'] },
      202: { description: 'Not complete yet.', json: ResumablePending, cacheControl: ['no-store'] },
    },
    errors: ['not_found', 'invalid_image', 'unsupported_format', 'blocked_content', 'human_detected', 'ai_generated'],
    handler:
      (deps) =>
      async (ctx, { user, params }) => {
        const r = await deps.resumable.result(user, params.id);
        ctx.status = r.status;
        ctx.set('Cache-Control', 'no-store');
        ctx.body = JSON.parse(r.body) as object;
      },
  }),
]);
