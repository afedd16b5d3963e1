/**
 * The tus 1.0 server of the resumable-upload routes (resumable.routes.ts): @tus/server's handlers speak the
 * protocol (core, creation, creation-with-upload, termination, expiration), mounted inside the gateway's own route
 * chain (auth, scope `upload`, rate limits, Idempotency-Key) through `server.handleWeb`. Its state stays where the
 * domain keeps it: `DomainStore` adapts the domain's ResumableUploads (rows in the database, bytes in the parts
 * store on disk or S3) and `DomainLocker` its locks (Redis or the database lease), so any gateway continues any
 * upload. The checksum extension (sha256), which @tus/server leaves to the store, is the parts store's. Every 4xx
 * the library answers becomes the contract's `{"error","message"}` body with the status API.md and tus give.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { finished, type Readable } from 'node:stream';
import { Server } from '@tus/server';
import { DataStore, Metadata, Upload, type Lock, type Locker } from '@tus/utils';
import type { ResumableFields, ResumableRow, ResumableUploads } from '../domain/uploads/resumable.ts';
import { MAX_FILE_BYTES } from '../domain/uploads/limits.ts';
import { AppError, errors } from '../domain/errors.ts';
import type { Principal } from '../domain/users.ts';
import type { AppContext } from './context.ts';
import { parse } from './validate.ts';
import { UploadFields } from './schemas/upload.schemas.ts';

export const TUS_PATH = '/api/uploads/resumable';
/** The tus extensions served (OPTIONS `Tus-Extension`). */
export const TUS_EXTENSIONS = ['creation', 'creation-with-upload', 'termination', 'expiration', 'checksum'];
const OCTETS = 'application/offset+octet-stream';
const MAX_METADATA_CHARS = 16 * 1024;

/** What one request hands the store and the hooks: its caller and its checksum, and what they leave for the answer. */
interface TusCall {
  user: Principal;
  idempotencyKey: string | null;
  checksum: Buffer | null;
  fields: ResumableFields | null;
  /** The upload's lock is held (a PATCH, through domainLocker). */
  locked: boolean;
  /** The creation answers an earlier one with the same Idempotency-Key. */
  replayed: boolean;
  /** The upload as created or last read (under the lock), its offset moved on by what was written. */
  row: ResumableRow | null;
  /** An error the store or a hook threw: answered by the gateway's error mapper, not the library. */
  error: Error | null;
  /** The upload use case's answer, when this request brought the last byte. */
  result: { status: number; body: string } | null;
}
const calls = new AsyncLocalStorage<TusCall>();

function call(): TusCall {
  const c = calls.getStore();
  if (!c) throw new Error('tus: a store call outside a request');
  return c;
}

/** Upload-Metadata (as the library parsed it) → the upload's fields, checked by the direct upload's schema. */
export function fieldsOf(m: Record<string, string | null>): ResumableFields {
  const type = m.upload_type ?? 'image';
  if (type !== 'image') throw errors.invalid('upload_type must be image for a resumable upload (Upload-Metadata)');
  const f = parse(UploadFields, {
    upload_type: 'image',
    description: m.description ?? '',
    tags: m.tags ?? undefined,
    is_private: m.is_private ?? undefined,
  });
  const filename = m.filename ? m.filename.slice(0, 255) : null;
  return { description: f.description, tags: f.tags, isPrivate: f.is_private, filename };
}

/** The request's Upload-Metadata with the library's parser: `key base64,…` (empty: none). */
export function metadataOf(ctx: AppContext): Record<string, string | null> {
  const header = ctx.get('upload-metadata');
  if (!header) return {};
  if (header.length > MAX_METADATA_CHARS) throw errors.invalid('Upload-Metadata is too large');
  let parsed: Record<string, string | null>;
  try {
    parsed = Metadata.parse(header);
  } catch {
    throw errors.invalid('Upload-Metadata must be comma-separated "key base64value" pairs, each key once');
  }
  // The library decodes each value as UTF-8 with replacement: bytes that are no UTF-8 would be stored as U+FFFD, a
  // different text than the one sent (as a lone surrogate in JSON would: boundedText).
  for (const pair of header.split(',')) {
    const [key, value] = pair.split(' ');
    if (!value) continue;
    try {
      STRICT_UTF8.decode(Buffer.from(value, 'base64'));
    } catch {
      throw errors.invalid(`Upload-Metadata ${key} is not UTF-8 text once base64-decoded`);
    }
  }
  return parsed;
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Headers tus says are "a non-negative integer": `0010` is one (the library refuses it), so it gets `10`. */
const LENGTHS = new Set(['upload-length', 'upload-offset']);
const withoutLeadingZeros = (v: string) => (/^\s*0+\d+\s*$/.test(v) ? v.trim().replace(/^0+(?=\d)/, '') : v);

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

/**
 * The request body as the web stream the library reads, attached to the Node request only when read (and then a
 * chunk per read): a request answered before its body is read (413 past Upload-Length, 409) leaves the body to
 * the error mapper's bounded discard, which a stream holding it paused would stall. `detach` gives it back.
 */
function lazyBody(req: IncomingMessage): { body: ReadableStream<Uint8Array>; detach(): void } {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let settled = false;
  let cleanup: (() => void) | null = null;
  const onData = (chunk: Buffer) => {
    if (settled) return;
    controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    req.pause();
  };
  const detach = () => {
    if (!cleanup) return;
    req.off('data', onData);
    cleanup();
    cleanup = null;
  };
  const body = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
      },
      pull() {
        if (settled) return;
        if (!cleanup) {
          req.on('data', onData);
          // The end, or the connection broken (also before this first read: `finished` sees that too).
          cleanup = finished(req, { writable: false }, (e) => {
            if (settled) return;
            settled = true;
            if (e) controller.error(e);
            else controller.close();
          });
        }
        req.resume();
      },
      cancel() {
        settled = true;
        detach();
      },
    },
    { highWaterMark: 0 },
  );
  return { body, detach };
}

const isTusError = (e: unknown): e is { status_code: number; body: string } =>
  typeof e === 'object' && e !== null && typeof (e as { status_code?: unknown }).status_code === 'number';

/** The library's limit on a body without Content-Length, as our 413 (the parts store then discards the chunk). */
async function* bounded(body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  try {
    yield* body;
  } catch (e) {
    if (isTusError(e) && e.status_code === 413)
      throw errors.payloadTooLarge('the body goes past Upload-Length (Upload-Offset + bytes sent)');
    throw e;
  }
}

/** The domain's uploads as a tus DataStore: rows in the database, bytes in the parts store. */
class DomainStore extends DataStore {
  readonly #uploads: ResumableUploads;
  constructor(uploads: ResumableUploads) {
    super();
    this.#uploads = uploads;
    this.extensions = TUS_EXTENSIONS;
  }

  #upload(row: ResumableRow): Upload {
    return new Upload({
      id: row.id,
      size: row.length,
      offset: row.received,
      // The expiry is the row's (RESUMABLE_TTL after creation, or after the result was kept): the library adds
      // getExpiration() to this for Upload-Expires.
      creation_date: new Date(row.expiresAt.getTime() - this.#uploads.ttlMs).toISOString(),
    });
  }

  override async create(upload: Upload): Promise<Upload> {
    const c = call();
    const { row, replayed } = await this.#uploads.create(c.user, {
      id: upload.id,
      length: upload.size ?? 0,
      fields: c.fields ?? fieldsOf(upload.metadata ?? {}),
      idempotencyKey: c.idempotencyKey,
    });
    c.row = row;
    // A creation with the same Idempotency-Key that won the race: this one answers that upload (the library
    // builds the Location from this object's id) and writes none of its bytes.
    if (replayed) {
      upload.id = row.id;
      c.replayed = true;
    }
    return this.#upload(row);
  }

  override async getUpload(id: string): Promise<Upload> {
    const c = call();
    c.row = await this.#uploads.get(c.user, id);
    return this.#upload(c.row);
  }

  override async write(stream: Readable, id: string, offset: number): Promise<number> {
    const c = call();
    if (c.replayed && c.row) return c.row.received;
    // A PATCH holds the upload's lock already (domainLocker); the first bytes of a creation take it here, once
    // the row exists (the database lease is on the row).
    const lock = c.locked ? null : await this.#uploads.lock(id);
    try {
      const row = c.row?.id === id ? c.row : await this.#uploads.get(c.user, id);
      const received = await this.#uploads.write(c.user, row, offset, bounded(stream), c.checksum);
      c.row = { ...row, received };
      return received;
    } finally {
      await lock?.release();
    }
  }

  override async remove(id: string): Promise<void> {
    await this.#uploads.terminate(call().user, id);
  }

  override deleteExpired(): Promise<number> {
    return this.#uploads.sweep();
  }

  override getExpiration(): number {
    return this.#uploads.ttlMs;
  }
}

/** A PATCH writes under the upload's lock (ResumableUploads.lock: Redis or the database lease), 409 while held. */
function domainLocker(uploads: ResumableUploads): Locker {
  return {
    newLock(id: string): Lock {
      let held: { release(): Promise<void> } | null = null;
      return {
        async lock() {
          held = await uploads.lock(id);
          call().locked = true;
        },
        async unlock() {
          await held?.release();
          held = null;
        },
      };
    },
  };
}

/**
 * The other requests take none from the library: a creation's row does not exist yet when it asks (its first
 * bytes take the lock in DomainStore.write), HEAD reads the row, DELETE is refused by the domain while the use
 * case runs.
 */
const noLocker: Locker = { newLock: () => ({ lock: async () => {}, unlock: async () => {} }) };

/** What a 501 of the library refused, in words that name the header that asked for it. */
function unsupportedExtension(message: string): string {
  const served = `the extensions served are ${TUS_EXTENSIONS.join(', ')}`;
  if (/defer-length/.test(message))
    return `Upload-Length is sent at creation only (creation-defer-length is not supported; ${served})`;
  if (/concatenation/i.test(message)) return `Upload-Concat is not supported (concatenation: ${served})`;
  return `${message.replace(/\.$/, '')} (${served})`;
}

/** Statuses the library answers by itself, as the contract's errors. */
function contractError(status: number, text: string, method: string): AppError | Error {
  const message = text.trim() || `tus: ${status}`;
  if (method === 'PATCH' && /content-type/i.test(message))
    return Object.assign(errors.invalid(`Content-Type must be ${OCTETS}`), { status: 415 });
  switch (status) {
    case 400:
    case 403:
      return errors.invalid(message);
    case 404:
    case 410:
      return errors.notFound('no such resumable upload (unknown, expired or deleted)');
    case 409:
      return errors.conflict(`${message}: ask the upload's offset (HEAD) and resume from it`);
    case 413:
      return errors.payloadTooLarge(
        `the upload goes past its Upload-Length or the limit of 10 MiB (${MAX_FILE_BYTES} bytes)`,
      );
    case 501:
      // The library's 501s are extensions this server does not offer, asked for by a header: a client's error the
      // contract answers 400 naming that header (its 501 `not_implemented` is oEmbed's alone).
      return errors.invalid(unsupportedExtension(message));
    default:
      return new Error(`tus: ${status} ${message}`);
  }
}

/** The response headers of the library that the contract answers with (its CORS headers are the gateway's). */
const PASSED = ['location', 'upload-offset', 'upload-length', 'upload-expires', 'cache-control'];

export interface TusServer {
  /** Serves one tus request (POST, HEAD, PATCH, DELETE) of `user` on ctx, or throws the contract's error. */
  serve(ctx: AppContext, user: Principal): Promise<void>;
}

/** The tus server over the domain's resumable uploads. */
export function tusServer(uploads: ResumableUploads): TusServer {
  const server = new Server({
    path: TUS_PATH,
    datastore: new DomainStore(uploads),
    maxSize: MAX_FILE_BYTES,
    relativeLocation: true,
    namingFunction: () => randomUUID(),
    locker: (req) => (req.method === 'PATCH' ? domainLocker(uploads) : noLocker),
    async onUploadCreate(_req, upload) {
      const c = call();
      c.fields = fieldsOf(upload.metadata ?? {});
      await uploads.assertRoom(c.user);
      return {};
    },
    // The complete file goes through the upload use case (POST /api/v1/upload's); its outcome is at …/result, in
    // the creation's body when the creation brought the whole file, and a PATCH answers 204 (tus allows no other
    // success).
    async onUploadFinish(_req, upload) {
      const c = call();
      c.result = await uploads.finish(c.user, upload.id);
      return {};
    },
    onResponseError(_req, err) {
      const c = calls.getStore();
      if (c && err instanceof Error) c.error = err;
      return undefined;
    },
  });

  return {
    async serve(ctx, user) {
      const c: TusCall = {
        user,
        idempotencyKey: ctx.get('idempotency-key') || null,
        checksum: checksumOf(ctx),
        fields: null,
        locked: false,
        replayed: false,
        row: null,
        error: null,
        result: null,
      };
      const headers = new Headers();
      const raw = ctx.req.rawHeaders;
      for (let i = 0; i + 1 < raw.length; i += 2) {
        const name = raw[i]!.toLowerCase();
        // No metadata is no header (the library refuses an empty one).
        if (name === 'upload-metadata' && !raw[i + 1]) continue;
        // The Location is relative and the gateway judges proxies itself (TRUST_PROXY): the library's checks of
        // these (a proxy chain's `X-Forwarded-Proto: https, http` is a 400 there) are not the contract's.
        if (name === 'host' || name === 'connection' || name === 'forwarded' || name.startsWith('x-forwarded-'))
          continue;
        headers.append(name, LENGTHS.has(name) ? withoutLeadingZeros(raw[i + 1]!) : raw[i + 1]!);
      }
      const lazy = ctx.method === 'PATCH' || ctx.method === 'POST' ? lazyBody(ctx.req) : null;
      const request = new Request(`http://gateway${ctx.path}`, {
        method: ctx.method,
        headers,
        body: lazy?.body ?? null,
        duplex: 'half',
      });
      let response: Response;
      try {
        response = await calls.run(c, () => server.handleWeb(request));
      } finally {
        lazy?.detach();
      }
      if (c.error) throw c.error;
      if (response.status >= 400) throw contractError(response.status, await response.text(), ctx.method);
      for (const name of PASSED) {
        const v = response.headers.get(name);
        if (v !== null) ctx.set(name, v);
      }
      ctx.status = response.status;
      const row = c.row;
      if (!row) return;
      ctx.set('Upload-Length', String(row.length));
      ctx.set('Cache-Control', 'no-store');
      if (ctx.method === 'HEAD') {
        if (row.status === 'receiving') ctx.set('Upload-Expires', row.expiresAt.toUTCString());
        // HEAD has no body; the GET of the same URL answers this as JSON.
        ctx.body = { offset: row.received, length: row.length, status: row.status };
      }
      if (ctx.method === 'POST') {
        if (c.replayed) ctx.set('Idempotent-Replayed', 'true');
        ctx.set('Upload-Offset', String(row.received));
        ctx.body = resumableState(row, c.result);
      }
    },
  };
}

/**
 * A creation's JSON body: the upload's id and offset, and once the use case has run on the complete file (the
 * creation brought it all, or a replay of one that did), its answer as `GET …/result` gives it: one request for a
 * file that fits in one, as the direct upload.
 */
export function resumableState(
  row: Pick<ResumableRow, 'id' | 'received' | 'length'>,
  result: { status: number; body: string } | null | undefined,
): { id: string; offset: number; length: number; result?: { status: number; body: unknown } } {
  const state = { id: row.id, offset: row.received, length: row.length };
  return result ? { ...state, result: { status: result.status, body: JSON.parse(result.body) as unknown } } : state;
}
