/**
 * Image variants on S3-compatible object storage (MEDIA_STORE=s3://BUCKET[/PREFIX]), for gateways on several
 * machines with no directory in common:
 *
 *   PREFIX ab/<key>.<variant>.webp     stored variants, the same layout as on disk
 *   PREFIX resumable/<id>[.info|.part] resumable uploads in progress, S3 multipart (s3-resumable-parts.ts)
 *   DATA_DIR/staging/<instance>/<key>/ written by a worker, local to the process
 *   DATA_DIR/tmp/<instance>/<request>/ multipart uploads while they stream in
 *
 * Unlike the disk store, variants go to the store before the row commits (persist), so that a committed row
 * always has its objects whichever machine reads it; the local staging copy is dropped after the commit. A
 * crash between the two leaves objects no row references: the sweep removes them once older than the grace
 * period (an upload in flight is younger). Deletes go through the media_garbage journal, as on disk.
 *
 * Endpoint, region and credentials are read the way the AWS SDK reads them (AWS_ENDPOINT_URL_S3 or
 * AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY); path-style addressing when an
 * endpoint is set. Checksums only when required: S3-compatible servers (Swift's s3api among them) refuse the
 * `aws-chunked` bodies the SDK would otherwise send.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { S3Settings } from '../config.ts';
import { errors } from '../domain/errors.ts';
import type { Lease } from '../domain/service.ts';
import type { ByteRange, VariantRead } from '../domain/uploads/ports.ts';
import type { VariantName } from '../domain/uploads/processed-image.ts';
import { FileMediaStore, usable, VARIANTS, type MediaReferences, type StoredMedia } from './media-store.ts';

/** Objects up to this size go in one PUT; larger ones (never a variant today: migrations of big files) multipart. */
const SINGLE_PUT_MAX = 16 * 1024 * 1024;
const PART_SIZE = 8 * 1024 * 1024;
export const CACHE_CONTROL = 'public, max-age=31536000, immutable';
const KEY_RE = /^[0-9a-f-]{36}$/;
/** Where S3ResumableParts keeps resumable uploads in progress, under the prefix (s3-resumable-parts.ts). */
export const RESUMABLE_PREFIX = 'resumable/';

export interface S3Options {
  /** Milliseconds to connect, and of silence on a request, before it counts as failed (the store is slow). */
  connectTimeoutMs?: number;
  requestTimeoutMs?: number;
}

/** The store's own options beyond the client's: its sweep's. */
export interface S3StoreOptions extends S3Options {
  /** MEDIA_SWEEP_GRACE: unreferenced objects are released once this old (0: all of them). Default 1 h. */
  sweepGraceSeconds?: number;
  /**
   * Held by one of the gateways sharing it: of their periodic sweeps only its holder's lists the bucket (the lease
   * is renewed at each of its sweeps; when it dies, the next gateway to sweep after it ran out takes over). None:
   * every periodic sweep lists it.
   */
  listingLease?: Lease | null;
  /** This process's name in DATA_DIR's staging and temp directories (processInstance(), by default a new one). */
  instance?: string;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 15_000;

/**
 * The client for these settings, with what S3-compatible servers need (see the header). The SDK's `S3` (an
 * S3Client with a method per command) because @tus/s3-store's S3Store, which writes resumable uploads, calls those.
 */
export function s3Client(settings: S3Settings, opts: S3Options = {}): S3 {
  return new S3({
    region: settings.region ?? 'us-east-1',
    ...(settings.endpoint ? { endpoint: settings.endpoint, forcePathStyle: true } : {}),
    ...(settings.credentials ? { credentials: settings.credentials } : {}),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // A store that is down or slow fails the request quickly (503 storage_unavailable), and is asked again
    // by the next one: no long retry chains holding an upload.
    maxAttempts: 2,
    requestHandler: {
      connectionTimeout: opts.connectTimeoutMs ?? 3000,
      requestTimeout: opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      throwOnRequestTimeout: true,
      socketTimeout: opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      httpAgent: { keepAlive: true, maxSockets: 256 },
      httpsAgent: { keepAlive: true, maxSockets: 256 },
    },
  });
}

const statusOf = (e: unknown): number | undefined =>
  (e as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;

/** A 404 from the store: the object (or bucket) is not there. */
export function isMissing(e: unknown): boolean {
  const name = (e as Error | null)?.name;
  return name === 'NoSuchKey' || name === 'NotFound' || statusOf(e) === 404;
}

/** The store answered 416: the range lies outside the object. */
const isBadRange = (e: unknown) => (e as Error | null)?.name === 'InvalidRange' || statusOf(e) === 416;

export class S3MediaStore implements StoredMedia {
  readonly client: S3;
  readonly bucket: string;
  readonly prefix: string;
  readonly endpoint: string | null;
  /** Local staging and temp directories (per process, with heartbeats), as the disk store keeps them. */
  readonly local: FileMediaStore;
  /**
   * The whole of a read (stat, read, the bucket check), retries and a second request included, within one
   * request timeout: a frozen store (connections accepted, never answered) answers 503 after one
   * MEDIA_STORE_TIMEOUT, not after one per attempt (the client's second attempt doubled it).
   */
  readonly #readDeadlineMs: number;
  readonly #sweepGraceSeconds: number;
  readonly #listingLease: Lease | null;

  constructor(dataDir: string, location: S3Settings, opts: S3StoreOptions = {}) {
    this.client = s3Client(location, opts);
    this.#readDeadlineMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#sweepGraceSeconds = opts.sweepGraceSeconds ?? 3600;
    this.#listingLease = opts.listingLease ?? null;
    this.endpoint = location.endpoint;
    this.bucket = location.bucket;
    this.prefix = location.prefix;
    this.local = new FileMediaStore(dataDir, opts.instance);
  }

  /** This process's temporary directory (DATA_DIR/tmp/<instance>): removed by close(), swept once it has died. */
  get processTmpDir(): string {
    return this.local.processTmpDir;
  }

  /** Where this store is, for messages: `s3://bucket/prefix at endpoint`. */
  get description(): string {
    return `s3://${this.bucket}/${this.prefix}${this.endpoint ? ` at ${this.endpoint}` : ''}`;
  }

  /**
   * Checks the bucket answers with these credentials; a missing bucket, refused credentials or an unreachable
   * store fail the start with one line saying which.
   */
  async init(): Promise<void> {
    await this.check('start');
    await this.local.init();
  }

  /**
   * /readyz (`ready`): uploads are staged locally, then written to the bucket: the staging directory must be there
   * and writable, and the bucket must answer (HeadBucket). At start (`start`): the bucket only, its failure said
   * with the endpoint.
   */
  async check(when: 'start' | 'ready' = 'ready'): Promise<{ store?: 's3'; bucket: string }> {
    if (when === 'start') return this.#headBucket(when);
    await usable(this.local.stagingRoot);
    return { store: 's3', ...(await this.#headBucket(when)) };
  }

  async #headBucket(when: 'start' | 'ready'): Promise<{ bucket: string }> {
    try {
      await this.#withinDeadline((abortSignal) =>
        this.client.send(new HeadBucketCommand({ Bucket: this.bucket }), { abortSignal }),
      );
      return { bucket: this.bucket };
    } catch (e) {
      const status = statusOf(e);
      const what =
        status === 404
          ? `bucket ${this.bucket} does not exist`
          : status === 403 || status === 401
            ? `access to bucket ${this.bucket} is denied (check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)`
            : `the object store does not answer (${(e as Error).name}: ${(e as Error).message})`;
      throw new Error(
        `MEDIA_STORE=s3://${this.bucket}/${this.prefix}: ${what}${when === 'start' && this.endpoint ? ` at ${this.endpoint}` : ''}`,
        {
          cause: e,
        },
      );
    }
  }

  async close(): Promise<void> {
    await this.local.close();
    this.client.destroy();
  }

  objectKey(key: string, variant: VariantName): string {
    return `${this.prefix}${key.slice(0, 2)}/${key}.${variant}.webp`;
  }

  stage(key: string): Promise<string> {
    return this.local.stage(key);
  }

  /** Uploads the staged variants (in parallel) before the row is inserted. */
  async persist(key: string): Promise<boolean> {
    const dir = this.local.stagingDir(key);
    try {
      await Promise.all(VARIANTS.map((v) => this.putFile(this.objectKey(key, v), join(dir, `${key}.${v}.webp`))));
    } catch (e) {
      // Whatever was written has no row: released by the caller, or swept.
      throw this.#unavailable('cannot be written', e);
    }
    return true;
  }

  /** Streams a local file to an object, with its type and cache metadata: one PUT, or multipart when large. */
  async putFile(objectKey: string, path: string, contentType = 'image/webp'): Promise<void> {
    const { size } = await stat(path);
    const params = { Bucket: this.bucket, Key: objectKey, ContentType: contentType, CacheControl: CACHE_CONTROL };
    if (size <= SINGLE_PUT_MAX) {
      await this.client.send(new PutObjectCommand({ ...params, Body: createReadStream(path), ContentLength: size }));
      return;
    }
    await new Upload({
      client: this.client,
      params: { ...params, Body: createReadStream(path) },
      partSize: PART_SIZE,
    }).done();
  }

  /** After the row commits: the objects are in place already, only the local copy goes. */
  async commit(key: string): Promise<void> {
    await this.local.discard(key);
  }

  discard(key: string): Promise<void> {
    return this.local.discard(key);
  }

  /** Deletes the variants' objects one at a time (a batch DeleteObjects needs Content-MD5, which some servers want). */
  async remove(key: string): Promise<void> {
    await Promise.all(
      VARIANTS.map((v) =>
        this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key, v) })),
      ),
    );
  }

  async has(key: string): Promise<boolean> {
    const found = await Promise.all(VARIANTS.map((v) => this.stat(key, v)));
    return found.every(Boolean);
  }

  stat(key: string, variant: VariantName): Promise<{ size: number } | null> {
    return this.#withinDeadline((signal) => this.#stat(key, variant, signal));
  }

  async #stat(key: string, variant: VariantName, abortSignal: AbortSignal): Promise<{ size: number } | null> {
    try {
      const head = await this.client.send(
        new HeadObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key, variant) }),
        { abortSignal },
      );
      return { size: head.ContentLength ?? 0 };
    } catch (e) {
      if (isMissing(e)) return null;
      throw this.#unavailable('cannot be read', e);
    }
  }

  /** A GET of the object (or of the range), its body streamed through, never buffered whole. */
  read(key: string, variant: VariantName, range?: ByteRange): Promise<VariantRead | null> {
    return this.#withinDeadline((signal) => this.#read(key, variant, range, signal));
  }

  async #read(
    key: string,
    variant: VariantName,
    range: ByteRange | undefined,
    abortSignal: AbortSignal,
  ): Promise<VariantRead | null> {
    const header = range
      ? 'suffix' in range
        ? `bytes=-${range.suffix}`
        : `bytes=${range.start}-${range.end ?? ''}`
      : undefined;
    try {
      const got = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: this.objectKey(key, variant),
          ...(header ? { Range: header } : {}),
        }),
        { abortSignal },
      );
      const body = got.Body as Readable;
      const span = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(got.ContentRange ?? '');
      if (header && span)
        return { size: Number(span[3]), body, range: { start: Number(span[1]), end: Number(span[2]) } };
      // No range asked, or the store answered the whole object (a range covering all of it).
      return { size: got.ContentLength ?? 0, body, range: null };
    } catch (e) {
      if (isMissing(e)) return null;
      if (header && isBadRange(e)) {
        const found = await this.#stat(key, variant, abortSignal);
        return found ? { size: found.size, unsatisfiable: true } : null;
      }
      throw this.#unavailable('cannot be read', e);
    }
  }

  presign(key: string, variant: VariantName, seconds: number): Promise<string> {
    return getSignedUrl(this.client, new GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key, variant) }), {
      expiresIn: seconds,
    });
  }

  /** The origin presigned URLs point at (the pages' CSP lets images come from it); signed locally, no request. */
  async redirectOrigin(): Promise<string> {
    return new URL(await this.presign('0'.repeat(36), 'thumb', 60)).origin;
  }

  tempDir(name: string): Promise<string> {
    return this.local.tempDir(name);
  }

  /**
   * Recovery. Local: staging and temp directories of dead processes go (their uploads' objects, if any, were
   * written before their rows: nothing there is needed). Store: the media keys of objects older than the sweep
   * grace that no row references are released (`release` rechecks under the files' lock). The listing is shared:
   * at start-up every gateway lists the bucket, but of `periodic` sweeps only the listing lease's holder does.
   */
  async sweep(
    refs: MediaReferences,
    opts: { periodic?: boolean } = {},
  ): Promise<{ committed: number; discarded: number; orphans: number }> {
    const listStore = !opts.periodic || !this.#listingLease || (await this.#listingLease.held());
    const { discarded } = await this.local.sweep({ isReferenced: async () => false });
    let orphans = 0;
    if (!listStore) return { committed: 0, discarded, orphans };
    // No grace: every unreferenced object (stores round LastModified, some of them up to the next second).
    const cutoff = this.#sweepGraceSeconds > 0 ? Date.now() - this.#sweepGraceSeconds * 1000 : Infinity;
    for await (const keys of this.#oldKeys(cutoff)) {
      const referenced = await refs.referencedAmong(keys);
      for (const key of keys) {
        if (referenced.has(key)) continue;
        if (await refs.release(key)) orphans++;
      }
    }
    return { committed: 0, discarded, orphans };
  }

  /** Media keys whose objects were all written before `cutoff`, a page of the listing at a time. */
  async *#oldKeys(cutoff: number): AsyncGenerator<string[]> {
    let token: string | undefined;
    // A key's variants may straddle two pages: a young one on either side keeps the key out (it is in flight).
    const young = new Set<string>();
    let carried = new Map<string, boolean>();
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix, ContinuationToken: token, MaxKeys: 1000 }),
      );
      const keys = new Map<string, boolean>(carried);
      for (const o of page.Contents ?? []) {
        const rel = (o.Key ?? '').slice(this.prefix.length);
        // The partial bytes of resumable uploads are swept with their rows (ResumableUploads.sweep).
        if (rel.startsWith(RESUMABLE_PREFIX)) continue;
        const name = rel.split('/').pop() ?? '';
        const key = name.split('.')[0] ?? '';
        if (!KEY_RE.test(key)) continue;
        const old = (o.LastModified?.getTime() ?? Date.now()) < cutoff;
        if (!old) young.add(key);
        keys.set(key, (keys.get(key) ?? true) && old);
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
      // The last key of a page may continue on the next: carried over.
      const last = [...keys.keys()].pop();
      carried = new Map();
      if (token && last !== undefined) {
        carried.set(last, keys.get(last)!);
        keys.delete(last);
      }
      const ready = [...keys].filter(([k, old]) => old && !young.has(k)).map(([k]) => k);
      if (ready.length) yield ready;
    } while (token);
  }

  /** Every object under the prefix, listed page by page (the migration walks them). */
  async *list(): AsyncGenerator<{ key: string; size: number }> {
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix, ContinuationToken: token, MaxKeys: 1000 }),
      );
      for (const o of page.Contents ?? []) if (o.Key) yield { key: o.Key, size: o.Size ?? 0 };
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  /**
   * `run` with a signal that aborts its requests once the read deadline passes. The timer stops when `run`
   * settles: a body still streaming to a slow client afterwards is not cut (the socket timeout guards it).
   */
  async #withinDeadline<T>(run: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const deadline = new AbortController();
    const timer = setTimeout(
      () => deadline.abort(new Error(`no answer within ${this.#readDeadlineMs} ms`)),
      this.#readDeadlineMs,
    );
    try {
      return await run(deadline.signal);
    } finally {
      clearTimeout(timer);
    }
  }

  #unavailable(what: string, cause: unknown) {
    const err = errors.storageUnavailable(`the object store ${what} now; retry shortly`);
    (err as Error & { cause?: unknown }).cause = cause;
    return err;
  }
}
