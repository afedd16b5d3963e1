/**
 * The bytes of resumable uploads received so far when MEDIA_STORE=s3://…: an S3 multipart upload each, written
 * by @tus/s3-store's S3Store, so that a gateway on any machine (no DATA_DIR in common) continues any upload:
 *
 *   PREFIX resumable/<id>        the multipart upload (parts of 5 MiB, the last shorter); once complete, the file
 *   PREFIX resumable/<id>.info   S3Store's own state: the multipart upload's id and the length
 *   PREFIX resumable/<id>.part   the bytes after the last whole part (S3Store's "incomplete part")
 *
 * Multipart parts must be 5 MiB or more but the last, while tus clients send chunks of any size: S3Store keeps
 * what does not fill a part yet in the `.part` object and sends it with the next bytes (read, then written again:
 * small chunks cost that object's size each). The offset, the expiry and the outcome stay the database's; the
 * `.info` object is only the store's (its id, length and multipart upload). A PATCH that brings the whole file
 * at once has nothing partial to keep: it is one PUT of the object, no multipart upload (which costs four
 * requests), and the file is kept in memory for the upload use case that reads it next.
 *
 * The row's offset is recorded after the bytes are in the bucket, so the bucket may hold more than it (a gateway
 * that died in between): the bytes the client sends again up to where the bucket's bytes end are passed over
 * (they are the same bytes of the same file), the rest written after them. Never less: a part starts only once
 * those before it in the same PATCH are written, and the incomplete part a PATCH read is deleted only after its
 * bytes are in a part (S3Store deletes it first, then writes: a crash in between would lose acknowledged bytes);
 * a leftover `.part` whose bytes a part holds already is found (the parts reach the row's offset) and deleted.
 *
 * The chunk is gathered in memory first (at most the rest of the file, ≤ 10 MiB) and checked against its
 * Upload-Checksum before a byte goes to the bucket. S3Store stages each part in the OS temporary directory while
 * it sends it (removed once sent), which `npm start` points at this process's DATA_DIR/tmp directory (main.ts), and
 * reads the incomplete part back into that directory too: removed when the process stops, swept once it has died.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { ReadStream } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { ListMultipartUploadsCommand, ListObjectsV2Command, type Part } from '@aws-sdk/client-s3';
import { S3Store, type MetadataValue } from '@tus/s3-store';
import { TUS_RESUMABLE, Upload, type KvStore } from '@tus/utils';
import { LRUCache } from 'lru-cache';
import { AppError, errors } from '../domain/errors.ts';
import { ChecksumMismatch, readBody, type ResumableParts } from '../domain/uploads/resumable.ts';
import { ORPHAN_PAGE, UPLOAD_ID } from './resumable-parts.ts';
import { isMissing, RESUMABLE_PREFIX, type S3MediaStore } from './s3-media-store.ts';

/** Parts of the smallest size S3 takes: a file of at most 10 MiB has two at most, its `.part` at most 5 MiB. */
const PART_BYTES = 5 * 1024 * 1024;
/** The `.info` objects S3Store keeps read in memory (immutable but for the offset it records at creation). */
const INFO_CACHE_ENTRIES = 10_000;
/** Files a gateway completed and holds whole (one PATCH, or one part), kept for the use case that reads them next. */
const WHOLE_CACHE_BYTES = 64 * 1024 * 1024;

export class S3ResumableParts implements ResumableParts {
  readonly #s3: S3MediaStore;
  readonly #store: MultipartStore;
  constructor(s3: S3MediaStore) {
    this.#s3 = s3;
    this.#store = new MultipartStore(s3);
  }

  get #root(): string {
    return `${this.#s3.prefix}${RESUMABLE_PREFIX}`;
  }

  /** The multipart upload's key, which is S3Store's id of the upload. */
  #key(id: string): string {
    return `${this.#root}${id}`;
  }

  /**
   * Gathers the PATCH's bytes (at most `max`, the rest of the file), checks them, then writes them after the
   * bytes already in the bucket. A body that breaks off keeps what arrived (without a checksum), as on disk; a
   * store that fails acknowledges nothing (503).
   */
  async append(id: string, offset: number, body: AsyncIterable<Uint8Array>, max: number, checksum: Buffer | null) {
    const chunks: Uint8Array[] = [];
    const hash = checksum ? createHash('sha256') : null;
    const { size: written, broken } = await readBody(body, max, (chunk) => {
      chunks.push(chunk);
      hash?.update(chunk);
    });
    // A body that broke off: without a checksum what arrived is kept; with one, nothing (it cannot be checked).
    if (broken && hash) return { written: 0, broken };
    if (hash && !hash.digest().equals(checksum!)) throw new ChecksumMismatch();
    if (written === 0) return { written, broken };
    try {
      await this.#store.append(this.#key(id), offset, Buffer.concat(chunks, written), offset + max);
    } catch (e) {
      if (e instanceof AppError) throw e;
      throw Object.assign(errors.storageUnavailable('the object store cannot be written now; retry shortly'), {
        cause: e,
      });
    }
    return { written, broken };
  }

  /** The whole file, the completed multipart upload's object, read once into memory: its SHA-256 and its bytes. */
  async source(id: string, length: number) {
    let bytes: Uint8Array;
    try {
      bytes = await this.#store.file(this.#key(id));
    } catch (e) {
      throw Object.assign(errors.storageUnavailable('the upload’s file cannot be read from the object store; retry'), {
        cause: e,
      });
    }
    if (bytes.length !== length)
      throw errors.storageUnavailable(`the upload’s file in the object store has ${bytes.length} bytes, not ${length}`);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
    const buf = (whole ? bytes.buffer : bytes.slice().buffer) as ArrayBuffer;
    return { sha256, read: () => Promise.resolve(buf) };
  }

  async remove(id: string): Promise<void> {
    await this.#store.remove(this.#key(id));
  }

  /**
   * Upload ids whose objects were all written before `before`, a page at a time; then those with a multipart
   * upload begun before it and no object at all (a creation cut between its two requests).
   */
  async *written(before: Date): AsyncGenerator<string[]> {
    const root = this.#root;
    const idOf = (key: string) => {
      const id = key.slice(root.length).split('.')[0] ?? '';
      return key.startsWith(root) && UPLOAD_ID.test(id) ? id : null;
    };
    const seen = new Set<string>();
    // The listing is in key order: an id's objects (`<id>`, `<id>.info`, `<id>.part`) are consecutive, though
    // they may straddle two pages.
    let current = null as { id: string; old: boolean } | null;
    let page: string[] = [];
    const flush = function* () {
      if (page.length >= ORPHAN_PAGE) {
        yield page;
        page = [];
      }
    };
    const { client, bucket } = this.#s3;
    let token: string | undefined;
    do {
      const listed = await client.send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: root, ContinuationToken: token }),
      );
      for (const o of listed.Contents ?? []) {
        const id = o.Key ? idOf(o.Key) : null;
        if (!id) continue;
        seen.add(id);
        const old = (o.LastModified ?? new Date()) < before;
        if (current?.id === id) {
          current.old &&= old;
          continue;
        }
        if (current?.old) page.push(current.id);
        current = { id, old };
        yield* flush();
      }
      token = listed.IsTruncated ? listed.NextContinuationToken : undefined;
    } while (token);
    if (current?.old) page.push(current.id);
    let keyMarker: string | undefined;
    let uploadMarker: string | undefined;
    do {
      const listed = await client.send(
        new ListMultipartUploadsCommand({
          Bucket: bucket,
          Prefix: root,
          KeyMarker: keyMarker,
          UploadIdMarker: uploadMarker,
        }),
      );
      for (const u of listed.Uploads ?? []) {
        const id = u.Key ? idOf(u.Key) : null;
        if (!id || seen.has(id) || (u.Initiated ?? new Date()) >= before) continue;
        seen.add(id);
        page.push(id);
        yield* flush();
      }
      keyMarker = listed.IsTruncated ? listed.NextKeyMarker : undefined;
      uploadMarker = listed.IsTruncated ? listed.NextUploadIdMarker : undefined;
    } while (keyMarker);
    if (page.length) yield page;
  }
}

/** Where the bytes in the bucket end, as the parts and the incomplete part say. */
interface Reached {
  /** The multipart upload was completed: the object holds the whole file. */
  complete: boolean;
  bytes: number;
}

/**
 * One append in progress (the upload's lock is held: one at a time per upload): what it read of the bucket before
 * writing, handed to S3Store's write instead of its own listing and read, and how that write goes.
 */
interface Write {
  /** The whole parts as listed (or none: just created), then with those this write sent. */
  parts: Part[] | null;
  /** The incomplete part's bytes as read, or null: there is none. */
  tail: Uint8Array | null;
  /** Its parts, one after another: a part is sent only once those before it were. */
  turn: Promise<unknown>;
  /** The incomplete part it read is to be deleted once its bytes are in a part. */
  dropTail: boolean;
}

/**
 * S3Store with the upload's key as its id, the media store's client, and writes that lose no acknowledged bytes
 * however they are cut (see the file's header): its parts sent in turn, the incomplete part it read deleted after,
 * not before, its bytes are written again. The listing of the parts and the incomplete part that `append` reads
 * to find where the bucket's bytes end are S3Store's too (not read twice); the parts a write sent are known
 * without listing them again for the completion.
 */
class MultipartStore extends S3Store {
  readonly #s3: S3MediaStore;
  readonly #writes = new Map<string, Write>();
  /** Files this process completed and holds whole, for the upload use case that reads them next (`file`). */
  readonly #whole = new LRUCache<string, Uint8Array>({
    maxSize: WHOLE_CACHE_BYTES,
    sizeCalculation: (b) => Math.max(1, b.length),
  });

  constructor(s3: S3MediaStore) {
    super({
      // The client is the media store's (its endpoint, credentials, timeouts, checksums: s3Client), set below.
      s3ClientConfig: { bucket: s3.bucket },
      partSize: PART_BYTES,
      // Expiry is the database's (RESUMABLE_TTL, ResumableUploads.sweep): no object tags, which not every
      // S3-compatible server has.
      useTags: false,
      cache: new LruKvStore<MetadataValue>(INFO_CACHE_ENTRIES),
    });
    this.client = s3.client;
    this.#s3 = s3;
  }

  /**
   * Writes `bytes` (the client's, from the row's offset `acknowledged`) of a file of `length` bytes: after what the
   * bucket holds already, creating the multipart upload with the first bytes.
   */
  async append(key: string, acknowledged: number, bytes: Buffer, length: number): Promise<void> {
    if (acknowledged === 0 && bytes.length === length) {
      // The whole file in one PATCH: nothing partial to keep, so no multipart upload (four requests), one PUT. A
      // multipart upload an earlier attempt left is removed with the upload; one a later attempt completes
      // writes the same file again.
      await this.client.putObject({ Bucket: this.bucket, Key: key, Body: bytes, ContentLength: length });
      this.#whole.set(key, bytes);
      return;
    }
    const w: Write = { parts: null, tail: null, turn: Promise.resolve(), dropTail: false };
    this.#writes.set(key, w);
    try {
      let reached = await this.#reached(key, acknowledged, w);
      if (!reached) {
        if (acknowledged > 0) throw lost(acknowledged, 0);
        await this.create(new Upload({ id: key, size: length, offset: 0 }));
        w.parts = [];
        reached = { complete: false, bytes: 0 };
      }
      if (reached.bytes < acknowledged) throw lost(acknowledged, reached.bytes);
      if (reached.complete) return;
      // Bytes sent again that the bucket has (written, their offset never recorded): passed over.
      const rest = bytes.subarray(Math.min(reached.bytes - acknowledged, bytes.length));
      // Nothing new, unless every byte is in and only the completion is missing.
      if (rest.length === 0 && reached.bytes < length) return;
      const src = Readable.from(rest.length ? [rest] : [], { objectMode: false });
      const before = w.parts?.length === 0 ? w.tail : null;
      const end = await this.write(src, key, reached.bytes);
      // Complete: a leftover incomplete part goes with the upload (`remove`).
      if (end < length && w.dropTail) await super.deleteIncompletePart(key);
      // Complete in one part, the incomplete part and these bytes: the file, for the use case that reads it next.
      else if (end === length && before && before.length + rest.length === length)
        this.#whole.set(key, Buffer.concat([before, rest], length));
    } finally {
      this.#writes.delete(key);
    }
  }

  /** The completed multipart upload's object (from memory when this process received it whole). */
  async file(key: string): Promise<Uint8Array> {
    const mine = this.#whole.get(key);
    if (mine) return mine;
    const got = await this.client.getObject({ Bucket: this.bucket, Key: key });
    return got.Body!.transformToByteArray();
  }

  /**
   * Where the bucket's bytes end (null: no upload there yet). An incomplete part is counted only past the whole
   * parts and when they end before the row's offset: otherwise its bytes are in a part already (a write that
   * stopped before it deleted it) or were never acknowledged, and it goes. What was read is kept in `w`.
   */
  async #reached(key: string, acknowledged: number, w: Write): Promise<Reached | null> {
    try {
      await this.getMetadata(key);
    } catch (e) {
      if (isMissing(e)) return null;
      throw e;
    }
    let parts: Part[];
    try {
      parts = await super.retrieveParts(key);
    } catch (e) {
      if (!isMissing(e)) throw e;
      // No such multipart upload: completed (the object holds the file), or aborted by a removal cut short.
      const whole = await this.client.headObject({ Bucket: this.bucket, Key: key }).catch((e: unknown) => {
        if (isMissing(e)) return null;
        throw e;
      });
      if (!whole) return null;
      await super.deleteIncompletePart(key);
      return { complete: true, bytes: whole.ContentLength ?? 0 };
    }
    let bytes = 0;
    for (const [i, p] of parts.entries()) {
      if (p.PartNumber !== i + 1) throw new Error(`${key}: part ${i + 1} is missing from the multipart upload`);
      bytes += p.Size ?? 0;
    }
    w.parts = parts;
    const tail = await super.getIncompletePart(key);
    if (!tail) return { complete: false, bytes };
    if (bytes >= acknowledged) {
      tail.destroy();
      await super.deleteIncompletePart(key);
      return { complete: false, bytes };
    }
    w.tail = Buffer.concat(await tail.toArray());
    return { complete: false, bytes: bytes + w.tail.length };
  }

  /** Within an append, the parts it listed and those it sent since. */
  protected override retrieveParts(id: string, partNumberMarker?: string): Promise<Part[]> {
    const parts = this.#writes.get(id)?.parts;
    return parts && !partNumberMarker ? Promise.resolve([...parts]) : super.retrieveParts(id, partNumberMarker);
  }

  /** Within an append, the incomplete part it read. */
  protected override getIncompletePart(id: string): Promise<Readable | undefined> {
    const w = this.#writes.get(id);
    if (!w?.parts) return super.getIncompletePart(id);
    return Promise.resolve(w.tail ? Readable.from([w.tail], { objectMode: false }) : undefined);
  }

  /** Within an append, deferred until its bytes are in a part; a new incomplete part replaces it anyway. */
  protected override deleteIncompletePart(id: string): Promise<void> {
    const w = this.#writes.get(id);
    if (!w) return super.deleteIncompletePart(id);
    w.dropTail = true;
    return Promise.resolve();
  }

  protected override async uploadPart(
    metadata: MetadataValue,
    body: ReadStream | Readable | Buffer,
    partNumber: number,
  ): Promise<string> {
    const id = metadata.file.id;
    const etag = await this.#inTurn(id, () => super.uploadPart(metadata, body, partNumber));
    this.#writes.get(id)?.parts?.push({ PartNumber: partNumber, ETag: etag });
    return etag;
  }

  protected override async uploadIncompletePart(id: string, body: ReadStream | Readable) {
    const etag = await this.#inTurn(id, () => super.uploadIncompletePart(id, body));
    const w = this.#writes.get(id);
    if (w) w.dropTail = false;
    return etag;
  }

  /** After the write's earlier parts, and only if they were all sent. */
  #inTurn<T>(id: string, send: () => Promise<T>): Promise<T> {
    const w = this.#writes.get(id);
    if (!w) return send();
    const turn = w.turn.then(send);
    w.turn = turn;
    return turn;
  }

  /** S3Store saves the `.info` object without keeping it: kept, so that the first write reads none. */
  protected override async saveMetadata(upload: Upload, uploadId: string): Promise<void> {
    await super.saveMetadata(upload, uploadId);
    await this.cache.set(upload.id, { file: upload, 'upload-id': uploadId, 'tus-version': TUS_RESUMABLE });
  }

  /** The incomplete part read back goes to this process's temporary directory (removed when it stops or dies). */
  protected override uniqueTmpFileName(template: string): Promise<string> {
    return Promise.resolve(join(this.#s3.processTmpDir, `${template}${randomUUID()}`));
  }

  /**
   * The multipart upload aborted and its objects deleted, whatever state a crash left (S3Store's own `remove`
   * throws for a completed upload and keeps the `.part`): every multipart upload of the key (also one whose
   * `.info` a creation cut short never wrote), then the objects, the `.info` last, so that a removal cut short is
   * found again.
   */
  override async remove(key: string): Promise<void> {
    this.#whole.delete(key);
    const listed = await this.client.listMultipartUploads({ Bucket: this.bucket, Prefix: key });
    for (const u of listed.Uploads ?? []) {
      if (u.Key !== key || !u.UploadId) continue;
      await this.client.abortMultipartUpload({ Bucket: this.bucket, Key: key, UploadId: u.UploadId }).catch((e) => {
        if (!isMissing(e)) throw e;
      });
    }
    await Promise.all(
      [key, this.partKey(key, true)].map((k) => this.client.deleteObject({ Bucket: this.bucket, Key: k })),
    );
    await this.client.deleteObject({ Bucket: this.bucket, Key: this.infoKey(key) });
    await this.clearCache(key);
  }
}

/** The bucket holds less than the row acknowledged (its objects were removed by hand, or by a lifecycle rule). */
function lost(acknowledged: number, reached: number): AppError {
  return errors.storageUnavailable(
    `the object store holds ${reached} bytes of this upload, fewer than the ${acknowledged} acknowledged`,
  );
}

/** S3Store's cache of `.info` objects, bounded (its default keeps every upload this process saw). */
class LruKvStore<T extends object> implements KvStore<T> {
  readonly #entries: LRUCache<string, T>;
  constructor(max: number) {
    this.#entries = new LRUCache({ max });
  }
  get(key: string) {
    return Promise.resolve(this.#entries.get(key));
  }
  set(key: string, value: T) {
    this.#entries.set(key, value);
    return Promise.resolve();
  }
  delete(key: string) {
    this.#entries.delete(key);
    return Promise.resolve();
  }
}
