/**
 * Creating uploads: exact-duplicate check on the streamed SHA-256 before any decoding, the worker
 * pipeline, near-duplicate check, human policy, then one transaction and the staged files moved into place.
 */
import { randomUUID } from 'node:crypto';
import { errors } from '../errors.ts';
import type { Clock } from '../clock.ts';
import type { Principal } from '../users.ts';
import { validateExternalUrl } from '../embeds.ts';
import { personRefusal, type HumanPolicy } from '../person-policy.ts';
import type { ImageFetcher, ImageProcessor, MediaStore, NewUpload, UploadStore } from './ports.ts';
import type { CreateResult, DuplicateNotice, UploadRecord, Viewer } from './upload.types.ts';
import { toUploadView } from './upload-view.ts';

export const MAX_DESCRIPTION = 500;

export interface UploadPolicy {
  humanPolicy: HumanPolicy;
  humanThreshold: number;
  /** -1 turns near-duplicate matching off. */
  nearDuplicateDistance: number;
}

export interface ImageInput {
  /** The original bytes, in an ArrayBuffer of their own (moved to a worker thread), read only when they are processed. */
  bytes: () => Promise<ArrayBuffer>;
  sha256: string;
  originalName: string | null;
  sourceUrl: string | null;
  description: string;
  tags: string[];
  isPrivate: boolean;
}

export interface LinkInput {
  externalUrl: string;
  description: string;
  tags: string[];
  isPrivate: boolean;
}

export interface UploadEvents {
  /** After every write that changes what feeds show. */
  onChanged?(): Promise<void>;
}

const viewerOf = (p: Principal): Viewer => ({ userId: p.userId, isAdmin: p.isAdmin });

export class UploadService {
  readonly #uploads: UploadStore;
  readonly #media: MediaStore;
  readonly #processor: ImageProcessor;
  readonly #fetcher: ImageFetcher;
  readonly #clock: Clock;
  readonly #policy: UploadPolicy;
  readonly #events: UploadEvents;

  constructor(deps: {
    uploads: UploadStore;
    media: MediaStore;
    processor: ImageProcessor;
    fetcher: ImageFetcher;
    clock: Clock;
    policy: UploadPolicy;
    events?: UploadEvents;
  }) {
    this.#uploads = deps.uploads;
    this.#media = deps.media;
    this.#processor = deps.processor;
    this.#fetcher = deps.fetcher;
    this.#clock = deps.clock;
    this.#policy = deps.policy;
    this.#events = deps.events ?? {};
  }

  async createImage(principal: Principal, input: ImageInput, signal?: AbortSignal): Promise<CreateResult> {
    const viewer = viewerOf(principal);
    const exact = await this.#uploads.findVisibleBySha256(input.sha256, viewer);
    if (exact) return this.#duplicate(exact.id, 'exact', 0);

    // The same bytes stored privately by someone else: not revealed, but their derived files are shared.
    const twin = await this.#uploads.findAnyBySha256(input.sha256);
    if (twin && twin.mediaKey && twin.phash && (twin.humanScore !== null || this.#policy.humanPolicy === 'off')) {
      const shared = await this.#createFromTwin(principal, input, { ...twin, phash: twin.phash }, viewer);
      if (shared) return shared;
    }

    const id = randomUUID();
    // Files are named by their own key, not the upload id: an upload sharing them must not reveal the first one's id.
    const mediaKey = randomUUID();
    const stagingDir = await this.#media.stage(mediaKey);
    let committed = false;
    try {
      // A near duplicate is refused as soon as its hash is known, before detection and encoding.
      let near: CreateResult | null = null;
      const processed = await this.#processor.process(
        { bytes: await input.bytes(), stagingDir, baseName: mediaKey, humanPolicy: this.#policy.humanPolicy, humanThreshold: this.#policy.humanThreshold },
        signal,
        // (With near matching off the worker is not made to ask.)
        this.#policy.nearDuplicateDistance < 0 ? {} : { afterHash: async (phash) => (near = await this.#nearDuplicate(phash, viewer)) !== null },
      );
      if (!processed) return near!;
      const row: NewUpload = {
        ...this.#base(id, principal, input),
        uploadType: 'image',
        filename: `${mediaKey}.webp`,
        sha256: input.sha256,
        phash: processed.phash,
        mediaKey,
        width: processed.width,
        height: processed.height,
        animated: processed.animated,
        originalFormat: processed.format,
        thumbhash: processed.thumbhash,
        humanScore: processed.humanScore,
        variants: Object.fromEntries(processed.variants.map((v) => [v.name, { width: v.width, height: v.height, bytes: v.bytes }])),
      };
      const inserted = await this.#uploads.insert(row, input.tags);
      if (!inserted.ok) return this.#duplicate('duplicateOf' in inserted ? inserted.duplicateOf : id, 'exact', 0);
      committed = true;
      // After the commit: a crash before this rename leaves the files staged, and start-up moves them in.
      await this.#media.commit(mediaKey);
      return this.#created(id);
    } finally {
      // Best effort: a failed cleanup must not replace the answer (a dead process's leftovers are swept).
      if (!committed) await this.#media.discard(mediaKey).catch(() => {});
    }
  }

  /** `upload_type=image_url`: the service fetches the image, then it is an image upload with `source_url` set. */
  async createFromUrl(principal: Principal, input: Omit<ImageInput, 'bytes' | 'sha256' | 'sourceUrl' | 'originalName'> & { imageUrl: string }, signal?: AbortSignal): Promise<CreateResult> {
    const fetched = await this.#fetcher.fetch(input.imageUrl, signal);
    const { bytes } = fetched;
    // The bytes move to a worker thread: they need an ArrayBuffer of their own.
    const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? (bytes.buffer as ArrayBuffer) : new Uint8Array(bytes).buffer;
    const originalName = fileNameOf(new URL(fetched.finalUrl).pathname.split('/').pop() ?? '', { urlEncoded: true });
    return this.createImage(principal, { ...input, bytes: async () => own, sha256: fetched.sha256, sourceUrl: input.imageUrl, originalName }, signal);
  }

  async createLink(principal: Principal, input: LinkInput): Promise<CreateResult> {
    const url = validateExternalUrl(input.externalUrl);
    const id = randomUUID();
    const row: NewUpload = {
      ...this.#base(id, principal, { ...input, originalName: null, sourceUrl: null }),
      uploadType: 'link',
      externalUrl: url.toString(),
    };
    await this.#uploads.insert(row, input.tags);
    return this.#created(id);
  }

  /** A single upload, reachable by anyone who knows its id (private means unlisted). */
  async get(id: string, myVote?: 'fucks' | 'does_not_fuck' | null) {
    const u = await this.#uploads.findById(id);
    if (!u) throw errors.notFound(`upload ${id} does not exist`);
    return toUploadView(u, myVote);
  }

  /** The stored-files key behind `GET /api/image/{id}`; private uploads are served too (private means unlisted). */
  async imageKey(id: string): Promise<string> {
    const key = await this.#uploads.mediaKeyOf(id);
    if (key === undefined) throw errors.notFound(`upload ${id} does not exist`);
    if (key === null) throw errors.notFound(`upload ${id} is a link; it has no image`);
    return key;
  }

  /** Changes privacy; answers with the record (and the caller's vote on it, as every single-upload response to a user). */
  async setPrivacy(principal: Principal, id: string, isPrivate: boolean, myVote: 'fucks' | 'does_not_fuck' | null) {
    const u = await this.#owned(principal, id, 'change the privacy of');
    if (u.isPrivate !== isPrivate) {
      await this.#uploads.setPrivacy(id, isPrivate);
      await this.#events.onChanged?.();
    }
    return toUploadView({ ...u, isPrivate }, myVote);
  }

  async remove(principal: Principal, id: string): Promise<{ success: true; id: string }> {
    await this.#owned(principal, id, 'delete');
    const deleted = await this.#uploads.delete(id);
    if (!deleted) throw errors.notFound(`upload ${id} does not exist`);
    // The row is gone: feeds must stop showing it whatever happens to the files, whose removal is journalled
    // (media_garbage) and retried by the sweep if it fails here.
    await this.#events.onChanged?.();
    if (deleted.mediaKey && !deleted.mediaStillUsed) {
      await this.#media.remove(deleted.mediaKey).then(
        () => this.#uploads.mediaRemoved(deleted.mediaKey!),
        () => {},
      );
    }
    return { success: true, id };
  }

  async #owned(principal: Principal, id: string, verb: string): Promise<UploadRecord> {
    const u = await this.#uploads.findById(id);
    if (!u) throw errors.notFound(`upload ${id} does not exist`);
    if (u.userId !== principal.userId && !principal.isAdmin) throw errors.forbidden(`only the owner or an admin may ${verb} upload ${id}`);
    return u;
  }

  /**
   * Same rules, in the same order, as a fresh image (near duplicates as soon as the hash is known, then the
   * person policy), decided from what the twin's processing found.
   */
  async #createFromTwin(principal: Principal, input: ImageInput, twin: UploadRecord & { phash: string }, viewer: Viewer): Promise<CreateResult | null> {
    const near = await this.#nearDuplicate(twin.phash, viewer);
    if (near) return near;
    const refusal = personRefusal(this.#policy.humanPolicy, this.#policy.humanThreshold, twin.humanScore);
    if (refusal) throw errors.humanDetected(refusal);
    const id = randomUUID();
    const row: NewUpload = {
      ...this.#base(id, principal, input),
      uploadType: 'image',
      filename: `${twin.mediaKey}.webp`,
      sha256: input.sha256,
      phash: twin.phash,
      mediaKey: twin.mediaKey,
      width: twin.width,
      height: twin.height,
      animated: twin.animated,
      originalFormat: twin.originalFormat,
      thumbhash: twin.thumbhash,
      humanScore: this.#policy.humanPolicy === 'off' ? null : twin.humanScore,
      variants: twin.variants,
    };
    const inserted = await this.#uploads.insert(row, input.tags, { reuseMediaOf: twin.id });
    if (inserted.ok) return this.#created(id);
    if ('duplicateOf' in inserted) return this.#duplicate(inserted.duplicateOf, 'exact', 0);
    return null; // the twin was deleted meanwhile: process the bytes afresh
  }

  /** The closest visible upload within NEAR_DUPLICATE_DISTANCE, as the answer to give; null when there is none. */
  async #nearDuplicate(phash: string, viewer: Viewer): Promise<CreateResult | null> {
    if (this.#policy.nearDuplicateDistance < 0) return null;
    const near = await this.#uploads.findNear(phash, this.#policy.nearDuplicateDistance, viewer);
    return near ? this.#duplicate(near.id, 'near', near.distance) : null;
  }

  #base(id: string, principal: Principal, input: { description: string; isPrivate: boolean; originalName: string | null; sourceUrl: string | null }) {
    return {
      id,
      userId: principal.userId,
      filename: null,
      originalName: input.originalName,
      description: input.description,
      externalUrl: null,
      sourceUrl: input.sourceUrl,
      isPrivate: input.isPrivate,
      createdAt: this.#clock.now(),
      sha256: null,
      phash: null,
      mediaKey: null,
      width: null,
      height: null,
      animated: null,
      originalFormat: null,
      thumbhash: null,
      humanScore: null,
      variants: null,
    };
  }

  async #created(id: string): Promise<CreateResult> {
    await this.#events.onChanged?.();
    const u = await this.#uploads.findById(id);
    if (!u) throw errors.notFound(`upload ${id} vanished`);
    return { kind: 'created', upload: toUploadView(u, null) };
  }

  #duplicate(existingUploadId: string, match: 'exact' | 'near', distance: number): CreateResult {
    const notice: DuplicateNotice = {
      duplicate: true,
      existingUploadId,
      message:
        match === 'exact'
          ? 'this image was already uploaded; nothing new was stored'
          : `a near-identical image was already uploaded (perceptual distance ${distance}); nothing new was stored`,
      match,
      distance,
    };
    return { kind: 'duplicate', notice };
  }
}

/** A client-supplied file name made safe to store and show: no path, no control characters, ≤ 255 characters. */
export function fileNameOf(raw: string, opts: { urlEncoded?: boolean } = {}): string | null {
  let name = raw;
  if (opts.urlEncoded) {
    try {
      name = decodeURIComponent(raw);
    } catch {
      // keep it encoded
    }
  }
  name = name.split(/[\\/]/).pop()!.replace(/[\u0000-\u001f\u007f]/g, '').trim();
  return name ? [...name].slice(0, 255).join('') : null;
}
