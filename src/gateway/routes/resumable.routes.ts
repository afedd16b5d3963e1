/**
 * Resumable uploads, tus 1.0 (issue 49; API.md "Resumable uploads"): core, creation, creation-with-upload,
 * termination, expiration and checksum (sha256). Implemented here rather than with @tus/server: its handlers own
 * the response (status, body and the error text), take their state from a store of their own and run outside the
 * gateway's middleware, where this contract needs the gateway's auth and scopes, the upload limit spent once at
 * creation, the contract's error bodies, Idempotency-Key, a bound per user and the state in the database; the
 * protocol subset is a few headers. OPTIONS and the Tus-Resumable check are `tusHeaders` (app.ts).
 */
import type { ResumableUploads, ResumableRow } from '../../domain/uploads/resumable.ts';
import { assertLength } from '../../domain/uploads/resumable.ts';
import { errors } from '../../domain/errors.ts';
import type { AppContext } from '../context.ts';
import { requireUser } from '../middleware/authenticate.ts';
import { parse } from '../validate.ts';
import { IdParam } from '../schemas/common.schemas.ts';
import {
  DuplicateNotice,
  ResumablePending,
  ResumableState,
  ResumableStatusBody,
  UploadFields,
  UploadRecord,
} from '../schemas/upload.schemas.ts';
import { routes } from './route.ts';
import type { CreateUpload } from '../../domain/uploads/create-upload.ts';

export interface ResumableRouteDeps {
  resumable: ResumableUploads;
  createUpload: CreateUpload;
}

export const TUS_PATH = '/api/uploads/resumable';
const OCTETS = 'application/offset+octet-stream';
const MAX_METADATA_CHARS = 16 * 1024;

/** OPTIONS answers and the Tus-Resumable check (412 with Tus-Version), for every request under TUS_PATH. */
export function tusHeaders(ctx: AppContext, next: () => Promise<unknown>): unknown {
  if (!ctx.path.startsWith(TUS_PATH)) return next();
  ctx.set('Tus-Resumable', '1.0.0');
  if (ctx.method === 'OPTIONS') {
    ctx.set('Tus-Version', '1.0.0');
    ctx.set('Tus-Extension', 'creation,creation-with-upload,termination,expiration,checksum');
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

/** A non-negative integer header, or 400 naming it. */
function intHeader(ctx: AppContext, name: string): number {
  const v = ctx.get(name);
  if (!/^\d{1,15}$/.test(v)) throw errors.invalid(`${name} must be a non-negative integer`);
  return Number(v);
}

/** Upload-Metadata (`key base64,key base64`) → the upload's fields, checked by the direct upload's schema. */
function metadataOf(ctx: AppContext) {
  const header = ctx.get('upload-metadata');
  if (header.length > MAX_METADATA_CHARS) throw errors.invalid('Upload-Metadata is too large');
  const m: Record<string, string> = {};
  for (const pair of header.split(',')) {
    const [key, value, extra] = pair.trim().split(' ');
    if (!key) continue;
    if (extra !== undefined || !/^[A-Za-z0-9_.-]+$/.test(key) || (value && !/^[A-Za-z0-9+/]*={0,2}$/.test(value)))
      throw errors.invalid('Upload-Metadata must be comma-separated "key base64value" pairs');
    m[key] = value ? Buffer.from(value, 'base64').toString('utf8') : '';
  }
  const type = m.upload_type ?? 'image';
  if (type !== 'image') throw errors.invalid('upload_type must be image for a resumable upload (Upload-Metadata)');
  const f = parse(UploadFields, {
    upload_type: 'image',
    description: m.description,
    tags: m.tags,
    is_private: m.is_private,
  });
  const filename = m.filename ? m.filename.slice(0, 255) : null;
  return { description: f.description, tags: f.tags, isPrivate: f.is_private, filename };
}

/** Upload-Checksum `sha256 <base64>` → the digest; another algorithm is 400. */
function checksumOf(ctx: AppContext): Buffer | null {
  const header = ctx.get('upload-checksum');
  if (!header) return null;
  const [algo, value] = header.trim().split(' ');
  if (algo !== 'sha256') throw errors.invalid('Upload-Checksum: only sha256 is supported (Tus-Checksum-Algorithm)');
  const digest = Buffer.from(value ?? '', 'base64');
  if (digest.length !== 32) throw errors.invalid('Upload-Checksum: the sha256 value must be 32 bytes in base64');
  return digest;
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
      'is the first bytes (creation-with-upload). With `Idempotency-Key`, the same key answers the same upload ' +
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
    },
    errors: ['invalid_request', 'payload_too_large', 'rate_limited', 'conflict'],
    before: (deps) => [
      async (ctx, next) => {
        deps.createUpload.assertAccepting();
        const user = requireUser(ctx);
        const k = key(ctx);
        if (k && (await deps.resumable.byKey(user, k))) return next();
        if (ctx.get('upload-defer-length')) throw errors.invalid('Upload-Defer-Length is not supported');
        assertLength(intHeader(ctx, 'upload-length'));
        metadataOf(ctx);
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
        const length = intHeader(ctx, 'upload-length');
        const hasBody = ctx.get('content-type') !== '' && Number(ctx.get('content-length') || 1) > 0;
        if (hasBody) assertOctets(ctx);
        const checksum = checksumOf(ctx);
        const created = await deps.resumable.create(user, {
          length,
          fields: metadataOf(ctx),
          idempotencyKey: key(ctx),
        });
        let row = created.row;
        if (hasBody && !created.replayed && length > 0)
          row = await deps.resumable.append(user, row.id, 0, ctx.req, checksum);
        if (created.replayed) ctx.set('Idempotent-Replayed', 'true');
        tusState(ctx, row);
        ctx.set('Location', `${TUS_PATH}/${row.id}`);
        ctx.status = 201;
        ctx.body = { id: row.id, offset: row.received, length: row.length };
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
    responses: { 204: { description: 'Bytes stored.' } },
    errors: ['invalid_request', 'not_found', 'conflict', 'payload_too_large'],
    handlerParsesBody: true,
    handler:
      (deps) =>
      async (ctx, { user, params }) => {
        assertOctets(ctx);
        const offset = intHeader(ctx, 'upload-offset');
        const checksum = checksumOf(ctx);
        const row = await deps.resumable.append(user, params.id, offset, ctx.req, checksum);
        tusState(ctx, row);
        ctx.status = 204;
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
    responses: { 204: { description: 'Deleted, with its bytes.' } },
    errors: ['not_found', 'conflict'],
    handler:
      (deps) =>
      async (ctx, { user, params }) => {
        await deps.resumable.terminate(user, params.id);
        ctx.status = 204;
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
