/**
 * Resumable uploads (tus 1.0, issue 49; API.md "Resumable uploads"): the state of each in the database (any
 * gateway continues any upload), the bytes in a partial file (ResumableParts), and, when the last byte arrives,
 * the very same use case as `POST /api/v1/upload` (CreateUpload.run): its answer — the record, the duplicate
 * notice or the error body with its status — is kept as the upload's result. No rule of the pipeline is repeated
 * here; this file only decides offsets, ownership, the open-upload bound and expiry.
 */
import { createHash, randomUUID } from 'node:crypto';
import { AppError, errors } from '../errors.ts';
import type { Clock } from '../clock.ts';
import type { Principal } from '../users.ts';
import { validateIdempotencyKey } from '../idempotency.ts';
import type { CreateUpload } from './create-upload.ts';
import { MAX_FILE_BYTES } from './limits.ts';

export type ResumableStatus = 'receiving' | 'processing' | 'done';

/** The upload's fields as sent in Upload-Metadata (already checked by the gateway's schema). */
export interface ResumableFields {
  description: string;
  tags: string | undefined;
  isPrivate: boolean;
  filename: string | null;
}

export interface ResumableRow {
  id: string;
  userId: string;
  length: number;
  received: number;
  fields: ResumableFields;
  idempotencyKey: string | null;
  status: ResumableStatus;
  result: { status: number; body: string } | null;
  expiresAt: Date;
  leaseUntil: Date | null;
}

/** Where the rows are kept (src/store/repositories/resumable.repository.ts). */
export interface ResumableStore {
  insert(row: ResumableRow & { createdAt: Date }): Promise<{ ok: true } | { ok: false; existing: ResumableRow }>;
  find(id: string): Promise<ResumableRow | null>;
  findByKey(userId: string, key: string): Promise<ResumableRow | null>;
  /** Uploads of this user still receiving and not expired at `now`. */
  countOpen(userId: string, now: Date): Promise<number>;
  /** Takes the upload's lease (none held, or lapsed) while it is in `status`; false when another holds it. */
  lease(id: string, status: ResumableStatus, now: Date, until: Date): Promise<boolean>;
  /** Moves a held lease on (a long PATCH still receiving), only while it is still `held` (ours): false otherwise. */
  renew(id: string, held: Date, until: Date): Promise<boolean>;
  /** Drops the lease if it still is `held` (ours). */
  release(id: string, held: Date): Promise<void>;
  /** Records the offset the bytes reached (only where `received` still is `from`). */
  advance(id: string, from: number, to: number): Promise<boolean>;
  setStatus(id: string, status: ResumableStatus, leaseUntil: Date | null): Promise<void>;
  /** Done: the result kept, the offset at the length (the whole file was received, stored or not). */
  finish(id: string, result: { status: number; body: string }, expiresAt: Date): Promise<void>;
  delete(id: string): Promise<void>;
  /** Rows past their expiry at `now` (not those a live lease holds), at most `limit`. */
  expired(now: Date, limit: number): Promise<ResumableRow[]>;
  /** Of these ids, those that have a row (the partial data of the others is an orphan). */
  existing(ids: string[]): Promise<Set<string>>;
  /** Uploads still receiving and not expired at `now`, and the bytes they hold (/metrics). */
  held(now: Date): Promise<{ open: number; bytes: number }>;
}

/**
 * Who may write an upload's bytes now: one request at a time, across every gateway. `acquire` resolves null when
 * another holds it. The database lease (`leaseLocks`) is the default; with Redis configured the lock is a Redis key
 * (src/store/resumable-locks.ts), one database write fewer per PATCH, with the database lease as its fallback.
 */
export interface ResumableLocks {
  acquire(id: string, ttlMs: number): Promise<ResumableLock | null>;
}
export interface ResumableLock {
  /** Moves the lock on by its ttl (a long PATCH still receiving). */
  renew(): Promise<void>;
  /** Lets it go (only if still ours): after the offset was recorded, or when nothing was written. */
  release(): Promise<void>;
}

/** The lock as the database lease on the row (`lease_until`): any gateway on the same database. */
export function leaseLocks(store: ResumableStore, clock: Clock): ResumableLocks {
  return {
    async acquire(id, ttlMs) {
      const now = clock.now();
      let until = new Date(now.getTime() + ttlMs);
      if (!(await store.lease(id, 'receiving', now, until))) return null;
      return {
        renew: async () => {
          const next = new Date(clock.now().getTime() + ttlMs);
          if (await store.renew(id, until, next)) until = next;
        },
        release: () => store.release(id, until),
      };
    },
  };
}

/**
 * The bytes received so far: files under DATA_DIR (src/store/resumable-parts.ts), or an S3 multipart upload in the
 * media store's bucket when MEDIA_STORE is S3 (src/store/s3-resumable-parts.ts), so that gateways sharing no disk
 * continue any upload.
 */
export interface ResumableParts {
  /**
   * Writes `body` at `offset` (what lay past `offset` is cut first: bytes never acknowledged), at most `max`
   * bytes (more: 413). With `checksum` (sha256 of the chunk), a mismatch removes the chunk again (460). Resolves
   * the bytes written; a body that breaks off keeps what arrived (without a checksum), so the client resumes there.
   */
  append(
    id: string,
    offset: number,
    body: AsyncIterable<Uint8Array>,
    max: number,
    checksum: Buffer | null,
  ): Promise<{ written: number; broken: boolean }>;
  /** The whole file's SHA-256 (hex) and a reader of its bytes. */
  source(id: string, length: number): Promise<{ sha256: string; read(): Promise<ArrayBuffer> }>;
  remove(id: string): Promise<void>;
  /** The ids of partial data last written before `before`, a page at a time (the orphan sweep checks their rows). */
  written(before: Date): AsyncIterable<string[]>;
}

export interface ResumableCounts {
  opened(): void;
  completed(): void;
  expired(n: number): void;
  /** Partial data with no row (its user deleted, or a crash) removed by the sweep. */
  orphans(n: number): void;
}

export interface ResumableDeps {
  store: ResumableStore;
  parts: ResumableParts;
  createUpload: CreateUpload;
  clock: Clock;
  maxOpen: number;
  ttlMs: number;
  /** Default: the database lease (leaseLocks). */
  locks?: ResumableLocks;
  /** Partial data with no row is removed once this old (MEDIA_SWEEP_GRACE). Default 1 h. */
  orphanGraceMs?: number;
  counts?: ResumableCounts;
}

/**
 * How long a PATCH holds an upload unless renewed (every LEASE_MS / 3 while its bytes arrive): a gateway killed
 * mid-transfer blocks the upload no longer than this, then any gateway continues it.
 */
export const LEASE_MS = 30_000;
/** The use case's own limit on one upload's processing is far below this. */
const PROCESSING_LEASE_MS = 600_000;

/**
 * Reads a PATCH's body (or a creation's), at most `max` bytes, handing each chunk to `each` with the number of bytes
 * before it. A body that goes past `max` is refused (413 payload_too_large, naming what was left to send); one that
 * breaks off (the connection lost) is not an error: what arrived is `size`, and `broken` says the end never came
 * (without a checksum it is kept and the client resumes after it). The one reading of a body the disk and object
 * store parts and the whole-file path share.
 */
export async function readBody(
  body: AsyncIterable<Uint8Array>,
  max: number,
  each: (chunk: Uint8Array, at: number) => unknown,
): Promise<{ size: number; broken: boolean }> {
  let size = 0;
  try {
    for await (const chunk of body) {
      if (size + chunk.length > max)
        throw errors.payloadTooLarge(`the body goes past Upload-Length (${max} bytes were left to send)`);
      await each(chunk, size);
      size += chunk.length;
    }
  } catch (e) {
    if ((e as { code?: string }).code === 'payload_too_large') throw e;
    return { size, broken: true };
  }
  return { size, broken: false };
}

/** The tus 460 (Checksum Mismatch), in the contract's body. */
export class ChecksumMismatch extends AppError {
  constructor() {
    super('invalid_request', 'Upload-Checksum does not match the bytes received: the chunk was discarded');
    (this as { status: number }).status = 460;
  }
}

export class ResumableUploads {
  readonly #d: ResumableDeps;
  readonly #locks: ResumableLocks;
  constructor(deps: ResumableDeps) {
    this.#d = deps;
    this.#locks = deps.locks ?? leaseLocks(deps.store, deps.clock);
  }

  get ttlMs(): number {
    return this.#d.ttlMs;
  }

  /** An earlier creation with this Idempotency-Key (answered again, spending nothing). */
  async byKey(principal: Principal, key: string): Promise<ResumableRow | null> {
    validateIdempotencyKey(key);
    const row = await this.#d.store.findByKey(principal.userId, key);
    return row && this.#live(row) ? row : null;
  }

  /** Refuses a creation past RESUMABLE_MAX_OPEN (before the upload limit is spent). */
  async assertRoom(principal: Principal): Promise<void> {
    const open = await this.#d.store.countOpen(principal.userId, this.#d.clock.now());
    if (open >= this.#d.maxOpen)
      throw errors.rateLimited(
        `at most ${this.#d.maxOpen} resumable uploads may be open at once (RESUMABLE_MAX_OPEN); finish or delete one`,
        60,
      );
  }

  /** Creates the upload (413 past 10 MiB, before anything is stored). */
  async create(
    principal: Principal,
    input: { id?: string; length: number; fields: ResumableFields; idempotencyKey: string | null },
  ): Promise<{ row: ResumableRow; replayed: boolean }> {
    assertLength(input.length);
    if (input.idempotencyKey) validateIdempotencyKey(input.idempotencyKey);
    const now = this.#d.clock.now();
    const row: ResumableRow = {
      id: input.id ?? randomUUID(),
      userId: principal.userId,
      length: input.length,
      received: 0,
      fields: input.fields,
      idempotencyKey: input.idempotencyKey,
      status: 'receiving',
      result: null,
      expiresAt: new Date(now.getTime() + this.#d.ttlMs),
      leaseUntil: null,
    };
    let r = await this.#d.store.insert({ ...row, createdAt: now });
    if (!r.ok && !this.#live(r.existing)) {
      // An expired upload the sweep has not removed yet still holds the key: replaying it would answer an upload
      // that is 404 from then on. It goes now (its bytes first, as the sweep does), and the key makes a new one.
      await this.#d.parts.remove(r.existing.id);
      await this.#d.store.delete(r.existing.id);
      r = await this.#d.store.insert({ ...row, createdAt: now });
    }
    if (!r.ok) return { row: r.existing, replayed: true };
    this.#d.counts?.opened();
    return { row, replayed: false };
  }

  /** The caller's upload, or 404 (another's, unknown, or expired). */
  async get(principal: Principal, id: string): Promise<ResumableRow> {
    const row = await this.#d.store.find(id);
    if (!row || row.userId !== principal.userId || !this.#live(row))
      throw errors.notFound('no such resumable upload (unknown, expired or deleted)');
    return row;
  }

  /**
   * The lock a request holds while it writes an upload's bytes (the tus server's Locker takes it before it reads
   * the offset): one writer at a time, across every gateway, renewed every LEASE_MS / 3 until released, so a
   * gateway killed mid-transfer blocks the upload no longer than LEASE_MS. 409 while another request holds it; an
   * upload no longer receiving (complete) needs none: nothing more is written to it.
   */
  async lock(id: string): Promise<ResumableLock> {
    const lock = await this.#locks.acquire(id, LEASE_MS);
    if (!lock) {
      const row = await this.#d.store.find(id);
      if (row && row.status !== 'receiving') return { renew: async () => {}, release: async () => {} };
      throw errors.conflict('another request is sending bytes to this upload; ask its offset (HEAD) and resume');
    }
    const renewing = setInterval(() => {
      lock.renew().catch(() => {});
    }, LEASE_MS / 3);
    return {
      renew: () => lock.renew(),
      release: () => {
        clearInterval(renewing);
        return lock.release();
      },
    };
  }

  /**
   * Bytes at `offset` of `row` (read under the upload's lock, which the caller holds): 409 unless it is the
   * upload's offset. Whatever arrived (and passed its checksum) is acknowledged, even when the body breaks off.
   * Resolves the new offset; the use case runs in `finish`, once the offset reaches the length (or here, on the
   * whole file in one request: #writeFirst).
   */
  async write(
    principal: Principal,
    row: ResumableRow,
    offset: number,
    body: AsyncIterable<Uint8Array>,
    checksum: Buffer | null,
  ): Promise<number> {
    if (offset !== row.received)
      throw errors.conflict(`Upload-Offset ${offset} does not match the upload's offset ${row.received}`);
    // Complete already (a PATCH sent again after its answer was lost), or nothing left to send.
    if (row.status !== 'receiving' || offset === row.length) return row.received;
    if (offset === 0) return this.#writeFirst(principal, row, body, checksum);
    return this.#append(row, offset, body, checksum);
  }

  /**
   * The bytes from 0, read into memory (at most the upload's length, 10 MiB). When they are the whole file (the
   * creation or one PATCH brought it, as a 2 MP photo does), the use case runs on them before anything is stored:
   * nothing is acknowledged until it has answered, so nothing needs keeping (a crash meanwhile leaves the offset at
   * 0 and the client sends again), and the file costs what a direct upload costs, with no write and read-back of
   * the partial file (on S3, a PUT and a DELETE less). A first chunk, or a body that broke off, is stored as any.
   */
  async #writeFirst(
    principal: Principal,
    row: ResumableRow,
    body: AsyncIterable<Uint8Array>,
    checksum: Buffer | null,
  ): Promise<number> {
    const chunks: Uint8Array[] = [];
    const { size, broken } = await readBody(body, row.length, (chunk) => chunks.push(chunk));
    const bytes = Buffer.concat(chunks, size);
    /** The bytes stored as any chunk's. */
    const store = (sum: Buffer | null) =>
      this.#append(
        row,
        0,
        (async function* () {
          yield bytes;
        })(),
        sum,
      );
    if (broken) return checksum || !size ? 0 : store(null);
    if (size < row.length) return store(checksum);
    const digest = createHash('sha256').update(bytes).digest();
    if (checksum && !digest.equals(checksum)) throw new ChecksumMismatch();
    const held = {
      sha256: digest.toString('hex'),
      read: async () => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength),
    };
    // The caller's write lock is the only hold needed: no other request writes this upload meanwhile, and none
    // runs the use case on it (its offset is 0 until the answer is kept).
    let result: { status: number; body: string };
    try {
      result = await this.#answer(principal, row, held);
    } catch (e) {
      // Not answered (a transient refusal, a failure): the file is kept as any complete one, so the result
      // resource runs the use case again; the client learns the offset with HEAD.
      await store(null).catch(() => {});
      throw e;
    }
    await this.#done(row, result);
    return row.length;
  }

  async #append(
    row: ResumableRow,
    offset: number,
    body: AsyncIterable<Uint8Array>,
    checksum: Buffer | null,
  ): Promise<number> {
    let written = 0;
    try {
      const r = await this.#d.parts.append(row.id, offset, body, row.length - offset, checksum);
      written = r.written;
    } finally {
      if (written > 0) await this.#d.store.advance(row.id, offset, offset + written);
    }
    return offset + written;
  }

  /**
   * The last byte has arrived (the PATCH or the creation that completed the file, or one sent again): runs the
   * upload use case once, unless it ran (or runs) already. Resolves its answer (what `result` answers from then
   * on), or null while another request runs it.
   */
  async finish(principal: Principal, id: string): Promise<{ status: number; body: string } | null> {
    const row = await this.get(principal, id);
    if (row.status === 'done') return row.result;
    if (row.status !== 'receiving' || row.received !== row.length) return null;
    return (await this.complete(principal, row)).result ?? null;
  }

  /**
   * Runs the upload use case on the complete file, once (the `processing` lease), and keeps its answer. A
   * transient refusal (503) is not kept: the upload stays complete and receiving, and the next PATCH or result
   * read runs it again.
   */
  async complete(principal: Principal, row: ResumableRow): Promise<ResumableRow> {
    const { store, parts, clock } = this.#d;
    const now = clock.now();
    if (!(await store.lease(row.id, 'receiving', now, new Date(now.getTime() + PROCESSING_LEASE_MS)))) return row;
    await store.setStatus(row.id, 'processing', new Date(now.getTime() + PROCESSING_LEASE_MS));
    let result: { status: number; body: string };
    try {
      result = await this.#answer(principal, row, await parts.source(row.id, row.length));
    } catch (e) {
      await store.setStatus(row.id, 'receiving', null);
      throw e;
    }
    await this.#done(row, result);
    // The bytes go after the answer (in the bucket: a listing and a DELETE per part, not worth a client's wait);
    // one that fails stays until the sweep removes the finished row with its bytes, RESUMABLE_TTL later.
    parts.remove(row.id).catch(() => {});
    return { ...row, received: row.length, status: 'done', result };
  }

  /**
   * The upload use case's answer for the complete file: the record, the duplicate notice or a client error's body;
   * a transient refusal (503) or a failure is thrown, never kept.
   */
  async #answer(
    principal: Principal,
    row: ResumableRow,
    src: { sha256: string; read(): Promise<ArrayBuffer> },
  ): Promise<{ status: number; body: string }> {
    try {
      const answer = await this.#d.createUpload.run(
        principal,
        {
          uploadType: 'image',
          description: row.fields.description,
          tags: row.fields.tags,
          isPrivate: row.fields.isPrivate,
          file: { sha256: src.sha256, originalName: row.fields.filename, read: () => src.read() },
          imageUrl: undefined,
          externalUrl: undefined,
        },
        { idempotencyKey: row.idempotencyKey },
      );
      return { status: answer.status, body: answer.body };
    } catch (e) {
      if (!(e instanceof AppError) || e.status >= 500) throw e;
      return { status: e.status, body: JSON.stringify({ error: e.code, message: e.message }) };
    }
  }

  /** The answer kept: the upload done, its offset at its length, expiring RESUMABLE_TTL from now. */
  async #done(row: ResumableRow, result: { status: number; body: string }): Promise<void> {
    await this.#d.store.finish(row.id, result, new Date(this.#d.clock.now().getTime() + this.#d.ttlMs));
    this.#d.counts?.completed();
  }

  /** The result resource: 202 while receiving or processing, then the direct upload's answer. */
  async result(principal: Principal, id: string): Promise<{ status: number; body: string }> {
    let row = await this.get(principal, id);
    // Complete but not processed (a transient failure, or a gateway gone mid-way): run it now.
    if (row.status !== 'done' && row.received === row.length) {
      const leaseLapsed = !row.leaseUntil || row.leaseUntil < this.#d.clock.now();
      if (row.status === 'processing' && leaseLapsed) await this.#d.store.setStatus(id, 'receiving', null);
      if (row.status === 'receiving' || leaseLapsed)
        row = await this.complete(principal, { ...row, status: 'receiving' });
    }
    if (row.status === 'done' && row.result) return row.result;
    return { status: 202, body: JSON.stringify({ status: row.received < row.length ? 'receiving' : 'processing' }) };
  }

  /** tus termination: the upload and its bytes go (a done one's result too). */
  async terminate(principal: Principal, id: string): Promise<void> {
    const row = await this.get(principal, id);
    if (row.status === 'processing') throw errors.conflict('the upload is being processed; read its result');
    // The bytes first: a crash between the two leaves a row the expiry sweep removes, never an orphan file.
    await this.#d.parts.remove(row.id);
    await this.#d.store.delete(row.id);
  }

  /**
   * Removes expired uploads and their partial bytes, then partial data with no row once past the grace (its user
   * was deleted, or a crash left it); resolves how many incomplete uploads expired.
   */
  async sweep(): Promise<number> {
    const expired = await this.#sweepExpired();
    await this.#sweepOrphans();
    return expired;
  }

  /** Partial data older than the grace whose row is gone: removed. Resolves how many. */
  async #sweepOrphans(): Promise<number> {
    const before = new Date(this.#d.clock.now().getTime() - (this.#d.orphanGraceMs ?? 3_600_000));
    let removed = 0;
    for await (const ids of this.#d.parts.written(before)) {
      const rows = await this.#d.store.existing(ids);
      for (const id of ids) {
        if (rows.has(id)) continue;
        await this.#d.parts.remove(id);
        removed++;
      }
    }
    if (removed) this.#d.counts?.orphans(removed);
    return removed;
  }

  async #sweepExpired(): Promise<number> {
    let expired = 0;
    for (;;) {
      const rows = await this.#d.store.expired(this.#d.clock.now(), 100);
      for (const row of rows) {
        await this.#d.parts.remove(row.id);
        await this.#d.store.delete(row.id);
        if (row.status !== 'done') expired++;
      }
      if (rows.length < 100) break;
    }
    if (expired) this.#d.counts?.expired(expired);
    return expired;
  }

  #live(row: ResumableRow): boolean {
    return row.expiresAt > this.#d.clock.now();
  }
}

export function assertLength(length: number): void {
  if (length < 1) throw errors.invalid('Upload-Length must be at least 1: the file is empty');
  if (length > MAX_FILE_BYTES)
    throw errors.payloadTooLarge(
      `Upload-Length ${Number.isFinite(length) ? length : '(over 15 digits)'} exceeds the limit of 10 MiB ` +
        `(${MAX_FILE_BYTES} bytes)`,
    );
}
