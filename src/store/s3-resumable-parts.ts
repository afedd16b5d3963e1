/**
 * The bytes of resumable uploads received so far when MEDIA_STORE=s3://…: objects in the media bucket, so that a
 * gateway on any machine (no DATA_DIR in common) continues any upload; the offsets are the database's.
 *
 *   PREFIX resumable/<upload id>/<start>-<end>     the bytes [start, end) of the file, one object per PATCH
 *
 * Why one object per PATCH rather than an S3 multipart upload: a file is at most 10 MiB and the upload use case
 * needs it whole in memory anyway (it hashes and hands it to a worker), while multipart parts must be ≥ 5 MiB but
 * the last — tus clients send chunks of any size, so a multipart upload would need its small tail staged elsewhere
 * and re-sent as it grows, and would allow two parts at most. Here each acknowledged PATCH is one PUT of exactly
 * the bytes it brought (no copy, no staging), completion is one listing and a GET per part (or an UploadPartCopy
 * each, had the file to stay in the bucket: it does not, the variants are what is stored), and termination or
 * expiry deletes the upload's few objects.
 *
 * The parts a gateway wrote are also kept in its memory a while (at most PART_CACHE_BYTES, least recently used
 * going first): when the PATCH that completes the file comes to the gateway that received the others (a client
 * sends its PATCHes one after another over one connection, usually to one gateway), the file is assembled without
 * a listing or a GET. Parts are immutable, so a cached chain is the file as surely as a listed one.
 *
 * A part is written before the database records the offset it reaches: a gateway that dies between the two leaves
 * a part past the acknowledged offset, which the client sends again (its key names its own end, so nothing is
 * overwritten by a part of another length). Completion follows the parts from 0 to the length; the parts of one
 * upload are all bytes of the same file at their positions, so any chain that covers it is the file.
 */
import { createHash } from 'node:crypto';
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { LRUCache } from 'lru-cache';
import { errors } from '../domain/errors.ts';
import { ChecksumMismatch, type ResumableParts } from '../domain/uploads/resumable.ts';
import { ORPHAN_PAGE, UPLOAD_ID } from './resumable-parts.ts';
import { RESUMABLE_PREFIX, type S3MediaStore } from './s3-media-store.ts';

const pad = (n: number) => String(n).padStart(10, '0');
const PART = /^(\d{10})-(\d{10})$/;
/** The memory this gateway gives to the parts it wrote, for completions it serves itself. */
const PART_CACHE_BYTES = 64 * 1024 * 1024;

export interface Part {
  key: string;
  start: number;
  end: number;
}

export class S3ResumableParts implements ResumableParts {
  readonly #s3: S3MediaStore;
  /** Upload id → the parts this gateway wrote (key → bytes). */
  readonly #written = new LRUCache<string, Map<string, Uint8Array>>({
    maxSize: PART_CACHE_BYTES,
    sizeCalculation: (parts) => {
      let n = 1;
      for (const b of parts.values()) n += b.length;
      return n;
    },
  });
  constructor(s3: S3MediaStore) {
    this.#s3 = s3;
  }

  get #root(): string {
    return `${this.#s3.prefix}${RESUMABLE_PREFIX}`;
  }

  #dir(id: string): string {
    return `${this.#root}${id}/`;
  }

  /**
   * Gathers the PATCH's bytes (at most `max`, the rest of the file: ≤ 10 MiB), then one PUT. A body that breaks off
   * keeps what arrived (without a checksum), as on disk; a store that fails the PUT acknowledges nothing (503).
   */
  async append(id: string, offset: number, body: AsyncIterable<Uint8Array>, max: number, checksum: Buffer | null) {
    const chunks: Uint8Array[] = [];
    let written = 0;
    let broken = false;
    const hash = checksum ? createHash('sha256') : null;
    try {
      for await (const chunk of body) {
        if (written + chunk.length > max)
          throw errors.payloadTooLarge(`the body goes past Upload-Length (${max} bytes were left to send)`);
        chunks.push(chunk);
        hash?.update(chunk);
        written += chunk.length;
      }
    } catch (e) {
      if ((e as { code?: string }).code === 'payload_too_large') throw e;
      // The connection broke: without a checksum, what arrived is kept (the client resumes after it).
      broken = true;
      if (hash) return { written: 0, broken };
    }
    if (hash && !hash.digest().equals(checksum!)) throw new ChecksumMismatch();
    if (written === 0) return { written, broken };
    const key = `${this.#dir(id)}${pad(offset)}-${pad(offset + written)}`;
    const bytes = Buffer.concat(chunks, written);
    try {
      await this.#s3.client.send(
        new PutObjectCommand({
          Bucket: this.#s3.bucket,
          Key: key,
          Body: bytes,
          ContentLength: written,
          ContentType: 'application/octet-stream',
        }),
      );
    } catch (e) {
      throw Object.assign(errors.storageUnavailable('the object store cannot be written now; retry shortly'), {
        cause: e,
      });
    }
    // Set again (not only changed in place) so that the cache weighs the upload's parts anew.
    this.#written.set(id, new Map(this.#written.get(id)).set(key, bytes));
    return { written, broken };
  }

  /** The whole file, read once from its parts (0 → length) into memory: its SHA-256 and its bytes. */
  async source(id: string, length: number) {
    const cached = this.#written.get(id) ?? new Map<string, Uint8Array>();
    const chain = chainOf(partsOf([...cached.keys()], this.#dir(id)), length) ?? chainOf(await this.#parts(id), length);
    if (!chain)
      throw errors.storageUnavailable('the parts of this upload are not all listed by the object store yet; retry');
    const buf = new Uint8Array(length);
    await Promise.all(
      chain.map(async (p) => {
        const mine = cached.get(p.key);
        if (mine) return buf.set(mine, p.start);
        const got = await this.#s3.client.send(new GetObjectCommand({ Bucket: this.#s3.bucket, Key: p.key }));
        const bytes = await got.Body!.transformToByteArray();
        if (bytes.length !== p.end - p.start) throw errors.storageUnavailable(`part ${p.key} is not whole; retry`);
        buf.set(bytes, p.start);
      }),
    );
    const sha256 = createHash('sha256').update(buf).digest('hex');
    return { sha256, read: () => Promise.resolve(buf.buffer) };
  }

  async remove(id: string): Promise<void> {
    this.#written.delete(id);
    const parts = await this.#parts(id);
    await Promise.all(
      parts.map((p) => this.#s3.client.send(new DeleteObjectCommand({ Bucket: this.#s3.bucket, Key: p.key }))),
    );
  }

  /** Upload ids whose newest part was written before `before`, a page of the listing at a time. */
  async *written(before: Date): AsyncGenerator<string[]> {
    const root = this.#root;
    // The listing is in key order: an id's parts are consecutive, though they may straddle two pages.
    let current = null as { id: string; old: boolean } | null;
    let page: string[] = [];
    for await (const o of this.#list(root)) {
      const [id] = o.key.slice(root.length).split('/');
      if (!id || !UPLOAD_ID.test(id)) continue;
      const old = o.modified < before;
      if (current?.id === id) {
        current.old &&= old;
        continue;
      }
      if (current?.old) page.push(current.id);
      current = { id, old };
      if (page.length >= ORPHAN_PAGE) {
        yield page;
        page = [];
      }
    }
    if (current?.old) page.push(current.id);
    if (page.length) yield page;
  }

  async #parts(id: string): Promise<Part[]> {
    const keys: string[] = [];
    for await (const o of this.#list(this.#dir(id))) keys.push(o.key);
    return partsOf(keys, this.#dir(id));
  }

  async *#list(prefix: string): AsyncGenerator<{ key: string; modified: Date }> {
    let token: string | undefined;
    do {
      const page = await this.#s3.client.send(
        new ListObjectsV2Command({ Bucket: this.#s3.bucket, Prefix: prefix, ContinuationToken: token }),
      );
      for (const o of page.Contents ?? []) if (o.Key) yield { key: o.Key, modified: o.LastModified ?? new Date() };
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }
}

/** The parts named by these keys (under `dir`); other keys are ignored. */
function partsOf(keys: string[], dir: string): Part[] {
  const parts: Part[] = [];
  for (const key of keys) {
    const m = PART.exec(key.slice(dir.length));
    if (m && key.startsWith(dir)) parts.push({ key, start: Number(m[1]), end: Number(m[2]) });
  }
  return parts;
}

/**
 * Parts that cover [0, length) end to end, or null. Where two parts start at one offset (a part written, its offset
 * never recorded, then sent again in another size), one that leads to the end is taken (the longest first).
 * Worked backwards from the end, without recursion: a client may have sent thousands of small chunks.
 */
export function chainOf(parts: Part[], length: number): Part[] | null {
  const usable = parts.filter((p) => p.start < p.end && p.end <= length);
  usable.sort((a, b) => b.start - a.start || b.end - a.end);
  // For each offset, a part starting there from which the end is reachable.
  const next = new Map<number, Part>();
  for (const p of usable) if (!next.has(p.start) && (p.end === length || next.has(p.end))) next.set(p.start, p);
  const chain: Part[] = [];
  for (let at = 0; at < length;) {
    const p = next.get(at);
    if (!p) return null;
    chain.push(p);
    at = p.end;
  }
  return chain;
}
