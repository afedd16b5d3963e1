/**
 * What the upload service (and the gateway serving stored files) needs from the outside world, declared
 * here and implemented in src/store (database, media files) and src/workers (the image processor); faked
 * in unit tests. The domain imports nothing from those layers (the rule is .dependency-cruiser.cjs's).
 */
import type { Readable } from 'node:stream';
import type { ImageTask, ProcessedImage, VariantName } from './processed-image.ts';
import type { ModerationState, UploadRecord, Viewer } from './upload.types.ts';
import type { AiLabel } from './ai-label.ts';

/**
 * What an insert writes: a stored upload minus what the database derives (owner name, counters, tags), plus its
 * PDQ hash and quality (null for links), which are stored but not read back.
 */
export type NewUpload = Omit<UploadRecord, 'username' | 'upvotes' | 'downvoteCount' | 'tags'> & {
  pdq: string | null;
  pdqQuality: number | null;
  /** Why it is held from the start (the modlog `auto_hold` reason: the person detector's, the AI policy's). */
  autoHoldReason?: string;
};

/** The image fields of a row that has no stored image (a link, before its image is known): all null. */
export const NO_IMAGE = {
  sha256: null,
  phash: null,
  pdq: null,
  pdqQuality: null,
  mediaKey: null,
  width: null,
  height: null,
  animated: null,
  originalFormat: null,
  thumbhash: null,
  humanScore: null,
  humanBoxes: null,
  variants: null,
  provenance: null,
  aiLabel: null,
} as const satisfies Partial<NewUpload>;

/** What an upload sharing another's stored files takes from it: the key and the stored variants' sizes. */
export type SharedMedia = { mediaKey: string; variants: NewUpload['variants'] };

/**
 * What an image upload's early blocklist checks saw: the blocklist's version read before them, and the distances
 * its perceptual hash and its PDQ are matched within. The insert re-checks the blocklist if the version moved
 * meanwhile (the PDQ only when its quality is at least PDQ_MIN_QUALITY).
 */
export type BlocklistSeen = { version: number; distance: number; pdqDistance?: number };

/**
 * An insert refused inside its transaction, nothing written: the owner is banned (a ban committed while the upload
 * was in flight), or the bytes are blocklisted (SHA-256, or perceptual hash within the distance given) by an entry
 * added while it was in flight. Checked under locks that a ban and a blocklist addition take too.
 */
export type InsertRefusal = { ok: false; refused: 'banned'; until: Date } | { ok: false; refused: 'blocked' };

export interface UploadStore {
  findById(id: string): Promise<UploadRecord | null>;
  /**
   * The stored-files key of an image upload (null for links and removed uploads) with what decides who may read
   * it, or undefined when there is no such upload.
   */
  mediaKeyOf(id: string): Promise<{ mediaKey: string | null; userId: string; moderation: ModerationState } | undefined>;
  /** The oldest upload with these bytes that the viewer may see. */
  findVisibleBySha256(sha256: string, viewer: Viewer): Promise<UploadRecord | null>;
  /** The same for many digests at once (the batch pre-check): digest → the oldest such upload's id. */
  visibleIdsBySha256(sha256s: readonly string[], viewer: Viewer): Promise<Map<string, string>>;
  /** The closest visible upload within `maxDistance` (Hamming) of `phash`, oldest first on ties. */
  findNear(phash: string, maxDistance: number, viewer: Viewer): Promise<{ id: string; distance: number } | null>;
  /**
   * Inserts the upload, its tags and its similarity-index entry in one transaction.
   * When the same user already stored these bytes (a race of two identical uploads), returns that upload's id.
   * `shareMedia`: stored files of the same bytes to use instead of the upload's own staged ones — only if an
   * upload still references them, decided under the files' lock (`sharedMedia` says which were used; with
   * false the caller moves its staged files in, with true it discards them). The upload's own key may be
   * given: no row references it yet, so the insert keeps it, after the same work.
   */
  insert(
    upload: NewUpload,
    tagNames: string[],
    opts?: { shareMedia?: SharedMedia; blocklist?: BlocklistSeen },
  ): Promise<{ ok: true; sharedMedia: boolean } | { ok: false; duplicateOf: string } | InsertRefusal>;
  /** Any stored upload with these bytes (for sharing stored files), regardless of visibility. */
  findAnyBySha256(sha256: string): Promise<UploadRecord | null>;
  setPrivacy(id: string, isPrivate: boolean): Promise<void>;
  /** Sets the upload's AI label (the owner's hand label, or none). */
  setAiLabel(id: string, label: AiLabel | null): Promise<void>;
  /**
   * Deletes the upload with its votes and tag links; says whether its media files are still used by
   * another upload. When not, the key is journalled as garbage in the same transaction.
   */
  delete(id: string): Promise<{ mediaKey: string | null; mediaStillUsed: boolean } | null>;
  /**
   * Releases stored files no row references: under the files' lock, runs `remove` unless an upload
   * references the key, and clears the key's garbage journal entry (kept when `remove` fails, so that the
   * sweep retries). Returns whether the files were removed.
   */
  releaseMedia(mediaKey: string, remove: () => Promise<void>): Promise<boolean>;
}

/**
 * Where variants are kept: local disk (moved into place after the row commits) or object storage (written to
 * the store before the row commits). Either way the worker writes them into a local staging directory first.
 */
export interface MediaStore {
  /** Creates and returns a fresh staging directory for a media key. */
  stage(mediaKey: string): Promise<string>;
  /**
   * Before the row is inserted: makes the staged variants durable where they will be read (object storage
   * uploads them; the disk store does nothing, its commit moves them after the row). Resolves true when
   * something was written that no row references yet (then an upload that ends up not using its own key
   * releases it); rejects with 503 `storage_unavailable` when the store cannot take them.
   */
  persist(mediaKey: string): Promise<boolean>;
  /** After the database commit: moves staged variants into place (disk), or drops the local staging copy. */
  commit(mediaKey: string): Promise<void>;
  /** Removes a staging directory and everything in it. */
  discard(mediaKey: string): Promise<void>;
  /** Removes stored variants. */
  remove(mediaKey: string): Promise<void>;
  /** Whether every variant of a media key is stored (moved into place, not only staged). */
  has(mediaKey: string): Promise<boolean>;
}

/** A byte range as a `Range: bytes=…` header asks it: from `start` (to `end`, inclusive), or the last `suffix`. */
export type ByteRange = { start: number; end?: number } | { suffix: number };

/** A stored variant being read: the whole size, and the bytes asked for as a stream (or why there are none). */
export type VariantRead =
  | { size: number; body: Readable; range: { start: number; end: number } | null }
  | { size: number; unsatisfiable: true };

/** Stored files as the gateway reads and receives them. */
export interface MediaFiles {
  /** A stored variant's size; null when missing. Rejects with 503 `storage_unavailable` when the store is down. */
  stat(mediaKey: string, variant: VariantName): Promise<{ size: number } | null>;
  /**
   * A stored variant (or the range of it), streaming; null when missing. The caller consumes or destroys the body.
   * Rejects with 503 `storage_unavailable` when the store is down.
   */
  read(mediaKey: string, variant: VariantName, range?: ByteRange): Promise<VariantRead | null>;
  /** Object storage only: a presigned GET URL of the variant, valid for `seconds`. */
  presign?(mediaKey: string, variant: VariantName, seconds: number): Promise<string>;
  /** A fresh directory for one request's multipart temp file; removed by the caller in a finally. */
  tempDir(name: string): Promise<string>;
}

/** The worker pool, as the domain sees it. Rejections arrive as AppErrors (400 codes, or 503 busy). */
export interface ProcessHooks {
  /**
   * Called once the perceptual hash and the PDQ are known, before person detection and encoding (most of the
   * work); resolving true stops the task there, with nothing staged, and `process` resolves null. `pdq` is
   * undefined from a processor that does not compute it.
   */
  afterHash?: (phash: string, pdq?: { hash: string; quality: number }) => Promise<boolean>;
}

export interface ImageProcessor {
  /** The processed image, or null when a hook stopped it. */
  process(task: ImageTask, signal?: AbortSignal, hooks?: ProcessHooks): Promise<ProcessedImage | null>;
}

/** Fetches a client-given image URL safely (SSRF rules, size and time caps); failures are fetch_failed. */
export interface ImageFetcher {
  fetch(url: string, signal?: AbortSignal): Promise<{ bytes: Buffer; sha256: string; finalUrl: string }>;
}
