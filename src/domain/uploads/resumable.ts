/**
 * Resumable uploads (tus 1.0, issue 49; API.md "Resumable uploads"): the state of each in the database (any
 * gateway continues any upload), the bytes in a partial file (ResumableParts), and, when the last byte arrives,
 * the very same use case as `POST /api/v1/upload` (CreateUpload.run): its answer — the record, the duplicate
 * notice or the error body with its status — is kept as the upload's result. No rule of the pipeline is repeated
 * here; this file only decides offsets, ownership, the open-upload bound and expiry.
 */
import { randomUUID } from 'node:crypto';
import { AppError, errors } from '../errors.ts';
import type { Clock } from '../clock.ts';
import type { Principal } from '../users.ts';
import { validateIdempotencyKey } from '../idempotency.ts';
import type { CreateUpload, UploadAnswer } from './create-upload.ts';
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
  /** Moves a held lease on (a long PATCH still receiving). */
  renew(id: string, until: Date): Promise<void>;
  /** Records the offset the bytes reached and drops the lease (only where `received` still is `from`). */
  advance(id: string, from: number, to: number): Promise<boolean>;
  setStatus(id: string, status: ResumableStatus, leaseUntil: Date | null): Promise<void>;
  finish(id: string, result: { status: number; body: string }, expiresAt: Date): Promise<void>;
  delete(id: string): Promise<void>;
  /** Rows past their expiry at `now` (not those a live lease holds), at most `limit`. */
  expired(now: Date, limit: number): Promise<ResumableRow[]>;
}

/** The partial files (src/store/resumable-parts.ts), one per upload, under DATA_DIR. */
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
}

export interface ResumableCounts {
  opened(): void;
  completed(): void;
  expired(n: number): void;
}

export interface ResumableDeps {
  store: ResumableStore;
  parts: ResumableParts;
  createUpload: CreateUpload;
  clock: Clock;
  maxOpen: number;
  ttlMs: number;
  counts?: ResumableCounts;
}

/**
 * How long a PATCH holds an upload unless renewed (every LEASE_MS / 3 while its bytes arrive): a gateway killed
 * mid-transfer blocks the upload no longer than this, then any gateway continues it.
 */
export const LEASE_MS = 30_000;
/** The use case's own limit on one upload's processing is far below this. */
const PROCESSING_LEASE_MS = 600_000;

/** The tus 460 (Checksum Mismatch), in the contract's body. */
export class ChecksumMismatch extends AppError {
  constructor() {
    super('invalid_request', 'Upload-Checksum does not match the bytes received: the chunk was discarded');
    (this as { status: number }).status = 460;
  }
}

export class ResumableUploads {
  readonly #d: ResumableDeps;
  constructor(deps: ResumableDeps) {
    this.#d = deps;
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
    input: { length: number; fields: ResumableFields; idempotencyKey: string | null },
  ): Promise<{ row: ResumableRow; replayed: boolean }> {
    assertLength(input.length);
    if (input.idempotencyKey) validateIdempotencyKey(input.idempotencyKey);
    const now = this.#d.clock.now();
    const row: ResumableRow = {
      id: randomUUID(),
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
   * A PATCH: bytes at `offset` (409 unless it is the upload's offset). When they complete the file, the upload
   * use case runs before this resolves. Resolves the new offset.
   */
  async append(
    principal: Principal,
    id: string,
    offset: number,
    body: AsyncIterable<Uint8Array>,
    checksum: Buffer | null,
  ): Promise<ResumableRow> {
    const row = await this.get(principal, id);
    if (offset !== row.received)
      throw errors.conflict(`Upload-Offset ${offset} does not match the upload's offset ${row.received}`);
    if (row.status !== 'receiving') return row;
    const { store, parts, clock } = this.#d;
    const now = clock.now();
    if (!(await store.lease(id, 'receiving', now, new Date(now.getTime() + LEASE_MS))))
      throw errors.conflict('another request is sending bytes to this upload; ask its offset (HEAD) and resume');
    // Read again under the lease: a PATCH that finished between the read above and the lease moved the offset,
    // and writing at the old one would cut bytes already acknowledged.
    const held = await store.find(id);
    if (held?.received !== offset || held.status !== 'receiving') {
      await store.setStatus(id, held?.status ?? 'receiving', null);
      throw errors.conflict(`Upload-Offset ${offset} does not match the upload's offset ${held?.received ?? 0}`);
    }
    let written = 0;
    const renewing = setInterval(() => {
      store.renew(id, new Date(clock.now().getTime() + LEASE_MS)).catch(() => {});
    }, LEASE_MS / 3);
    try {
      const r = await parts.append(id, offset, body, row.length - offset, checksum);
      written = r.written;
    } finally {
      clearInterval(renewing);
      // Whatever arrived (and passed its checksum) is acknowledged; the lease goes either way.
      await store.advance(id, offset, offset + written);
    }
    const after = { ...row, received: offset + written };
    if (after.received === after.length) return this.complete(principal, after);
    return after;
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
    let answer: UploadAnswer | { status: number; body: string };
    try {
      const src = await parts.source(row.id, row.length);
      answer = await this.#d.createUpload.run(
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
    } catch (e) {
      if (!(e instanceof AppError) || e.status >= 500) {
        await store.setStatus(row.id, 'receiving', null);
        throw e;
      }
      answer = { status: e.status, body: JSON.stringify({ error: e.code, message: e.message }) };
    }
    const result = { status: answer.status, body: answer.body };
    await store.finish(row.id, result, new Date(clock.now().getTime() + this.#d.ttlMs));
    await parts.remove(row.id);
    this.#d.counts?.completed();
    return { ...row, status: 'done', result };
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

  /** Removes expired uploads and their partial bytes; resolves how many incomplete ones expired. */
  async sweep(): Promise<number> {
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
    throw errors.payloadTooLarge(`Upload-Length ${length} exceeds the limit of 10 MiB (${MAX_FILE_BYTES} bytes)`);
}
