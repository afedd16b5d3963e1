/**
 * Creating uploads: exact-duplicate check on the streamed SHA-256 before any decoding, the worker
 * pipeline, near-duplicate check, human policy, then one transaction and the staged files moved into place.
 */
import { randomUUID } from 'node:crypto';
import { errors } from '../errors.ts';
import type { Clock } from '../clock.ts';
import { banRefusal, type Principal } from '../users.ts';
import { validateExternalUrl } from '../embeds.ts';
import { personReview, personVerdict, type HumanPolicy } from '../person-policy.ts';
import { assertReachable, type Reader } from '../moderation/access.ts';
import type {
  ImageFetcher,
  ImageProcessor,
  InsertRefusal,
  MediaStore,
  NewUpload,
  SharedMedia,
  UploadStore,
} from './ports.ts';
import type { CreateResult, DuplicateNotice, UploadRecord, Viewer } from './upload.types.ts';
import { toUploadView } from './upload-view.ts';
import { originalNameOf } from './original-name.ts';
import { checkHashes, type HashCheck } from './check-hashes.ts';
import { NO_IMAGE } from './ports.ts';
import { PDQ_MIN_QUALITY, type NearDistances, type NearHashes } from '../moderation/moderation.types.ts';
import { aiDecision, ownerLabel, type AiPolicy } from './ai-label.ts';

/** BLOCKLIST_PDQ_DISTANCE's default (API.md Blocklist). */
const BLOCKLIST_PDQ_DISTANCE = 31;

export const MAX_DESCRIPTION = 500;

export interface UploadPolicy {
  humanPolicy: HumanPolicy;
  /** HUMAN_THRESHOLD: the sure score. */
  humanThreshold: number;
  /** HUMAN_REVIEW_THRESHOLD (≤ humanThreshold); absent: equal to it, no gray zone. */
  humanReviewThreshold?: number;
  /** -1 turns near-duplicate matching off. */
  nearDuplicateDistance: number;
  /** Max Hamming distance of a perceptual hash to a blocklisted one. */
  blocklistDistance: number;
  /** Max Hamming distance of a PDQ (quality ≥ PDQ_MIN_QUALITY) to a blocklisted one (BLOCKLIST_PDQ_DISTANCE). */
  blocklistPdqDistance?: number;
  /** AI_POLICY (ai-label.ts); absent: `label`. */
  aiPolicy?: AiPolicy;
}

/** The moderators' blocklist, as an upload consults it: before any decoding, and once the perceptual hash is known. */
export interface BlocklistCheck {
  /**
   * Before any decoding, in one read: whether an entry blocks these bytes (their SHA-256), and the blocklist's
   * version, which the near check sees at least and the insert compares (it re-checks only if the version moved
   * since: an addition came meanwhile).
   */
  checkBytes(sha256: string): Promise<{ version: number; blocked: boolean }>;
  /** The digests among these that it blocks (the batch pre-check). */
  blockedSha256Among(sha256s: readonly string[]): Promise<Set<string>>;
  /**
   * Once the hashes are known: whether a blocklisted perceptual hash or PDQ lies within its distance of the image's,
   * seeing every entry present at `version` (the one checkBytes read).
   */
  blocksNear(hashes: NearHashes, distances: NearDistances, version: number): Promise<boolean>;
}

export interface ImageInput {
  /**
   * The original bytes, in an ArrayBuffer of their own (moved to a worker thread), read only when they are processed.
   */
  bytes: () => Promise<ArrayBuffer>;
  sha256: string;
  /** The client's file name as it was sent; made safe here (`originalNameOf`) before it is stored. */
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

/**
 * The answer to an insert refused in its transaction (a ban or a blocklist entry that came while the upload was in
 * flight): the same as the early checks give, 403 `banned` or 400 `blocked_content`; nothing was stored.
 */
function refusal(r: InsertRefusal, now: Date) {
  if (r.refused === 'blocked') return errors.blockedContent();
  return errors.banned(banRefusal({ bannedUntil: r.until }, now) ?? 'this account is banned');
}

const score = (s: number | null) => (s === null ? '' : ` (score ${s.toFixed(3)})`);

const viewerOf = (p: Principal): Viewer => ({ userId: p.userId, isAdmin: p.isAdmin });

export class UploadService {
  readonly #uploads: UploadStore;
  readonly #media: MediaStore;
  readonly #processor: ImageProcessor;
  readonly #fetcher: ImageFetcher;
  readonly #clock: Clock;
  readonly #policy: UploadPolicy;
  readonly #events: UploadEvents;
  readonly #blocklist: BlocklistCheck;

  constructor(deps: {
    uploads: UploadStore;
    blocklist?: BlocklistCheck;
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
    this.#blocklist = deps.blocklist ?? {
      checkBytes: async () => ({ version: 0, blocked: false }),
      blockedSha256Among: async () => new Set(),
      blocksNear: async () => false,
    };
  }

  get #personThresholds() {
    return {
      sure: this.#policy.humanThreshold,
      review: this.#policy.humanReviewThreshold ?? this.#policy.humanThreshold,
    };
  }

  /** Which of these SHA-256 digests an upload would refuse as blocked or answer as a duplicate (check-hashes.ts). */
  checkHashes(principal: Principal, sha256s: readonly string[]): Promise<HashCheck[]> {
    return checkHashes({ uploads: this.#uploads, blocklist: this.#blocklist }, principal, sha256s);
  }

  async createImage(principal: Principal, input: ImageInput, signal?: AbortSignal): Promise<CreateResult> {
    const viewer = viewerOf(principal);
    // The blocklist decides first, on the hash of the bytes as they arrived: a blocked upload costs one read. Its
    // version, read with it, tells the insert whether entries came since (then it checks again).
    const pdqDistance = this.#policy.blocklistPdqDistance ?? BLOCKLIST_PDQ_DISTANCE;
    const bytes = await this.#blocklist.checkBytes(input.sha256);
    if (bytes.blocked) throw errors.blockedContent();
    const blocklistSeen = { version: bytes.version, distance: this.#policy.blocklistDistance, pdqDistance };
    const exact = await this.#uploads.findVisibleBySha256(input.sha256, viewer);
    if (exact) return this.#duplicate(exact.id, 'exact', 0);

    // Bytes stored only as someone else's private upload must not be revealed, by the answer or by its timing
    // (API.md Uploads): they take the very path of new bytes — staging, the whole worker pipeline, the insert —
    // and only there, under the stored files' lock, share that upload's files instead of adding a copy of them.
    // Even the lookups for shareable files run alike with or without them (#shareableMedia); what differs is
    // discarding the staged copy instead of moving it in. Measured: the two answer alike, within the noise
    // (bench/README.md, "Uploads: a private twin's timing").
    const id = randomUUID();
    // Files are staged under a key of their own, never the upload id; the record's filename is this key even
    // when the stored files end up shared, so nothing in the answer ties it to another upload.
    const mediaKey = randomUUID();
    const stagingDir = await this.#media.stage(mediaKey);
    let committed = false;
    // Object storage: the variants are written to the store before the row; an upload that ends up not using
    // them (a twin's files shared, a duplicate, a failed insert) releases them, and a crash leaves them to the
    // sweep of objects no row references.
    let persisted = false;
    try {
      // A blocklisted perceptual hash or PDQ (of quality ≥ 50), or a near duplicate, stops the task as soon as the
      // hashes are known, before detection and encoding: nothing is written to media.
      let near: CreateResult | null = null;
      let blocked = false;
      const afterHash = async (phash: string, pdq?: { hash: string; quality: number }) => {
        blocked = await this.#blocklist.blocksNear(
          { phash, pdq: pdq && pdq.quality >= PDQ_MIN_QUALITY ? pdq.hash : null },
          { phash: this.#policy.blocklistDistance, pdq: pdqDistance },
          bytes.version,
        );
        if (blocked) return true;
        near = await this.#nearDuplicate(phash, viewer);
        return near !== null;
      };
      const processed = await this.#processor.process(
        {
          bytes: await input.bytes(),
          stagingDir,
          baseName: mediaKey,
          humanPolicy: this.#policy.humanPolicy,
          humanThreshold: this.#policy.humanThreshold,
          humanReviewThreshold: this.#personThresholds.review,
          aiPolicy: this.#policy.aiPolicy ?? 'label',
        },
        signal,
        { afterHash },
      );
      if (blocked) throw errors.blockedContent();
      if (!processed) return near!;
      // The workers refused a sure detection already; the same rule says what the score asks of moderation.
      const verdict = personVerdict(this.#policy.humanPolicy, this.#personThresholds, processed.humanScore);
      if (verdict.decision === 'refuse') throw errors.humanDetected(verdict.message);
      const review = personReview(verdict);
      // AI_POLICY on what the reader found: refused here (400 ai_generated) with nothing kept, like a person.
      const ai = aiDecision(this.#policy.aiPolicy ?? 'label', processed.provenance);
      const holdReasons = [
        ...(review.hold ? [`person detected${score(processed.humanScore)}`] : []),
        ...(ai.hold ? [ai.hold] : []),
      ];
      const row: NewUpload = {
        ...this.#base(id, principal, { ...input, originalName: originalNameOf(input.originalName) }),
        uploadType: 'image',
        filename: `${mediaKey}.webp`,
        sha256: input.sha256,
        phash: processed.phash,
        pdq: processed.pdq,
        pdqQuality: processed.pdqQuality,
        mediaKey,
        width: processed.width,
        height: processed.height,
        animated: processed.animated,
        originalFormat: processed.format,
        thumbhash: processed.thumbhash,
        humanScore: processed.humanScore,
        humanBoxes: review.flag ? (processed.humanBoxes ?? []) : null,
        moderation: holdReasons.length ? 'held' : 'visible',
        ...(holdReasons.length ? { autoHoldReason: holdReasons.join('; ') } : {}),
        personFlag: review.flag,
        provenance: ai.provenance,
        aiLabel: ai.aiLabel,
        variants: Object.fromEntries(
          processed.variants.map((v) => [v.name, { width: v.width, height: v.height, bytes: v.bytes }]),
        ),
      };
      persisted = await this.#media.persist(mediaKey);
      const inserted = await this.#uploads.insert(row, input.tags, {
        shareMedia: await this.#shareableMedia(input.sha256, { mediaKey, variants: row.variants }),
        blocklist: blocklistSeen,
      });
      if (!inserted.ok) {
        if ('refused' in inserted) throw refusal(inserted, row.createdAt);
        return this.#duplicate(inserted.duplicateOf, 'exact', 0);
      }
      // Shared: the staged copy is discarded below. Own: moved in after the commit (a crash before this rename
      // leaves the files staged, and the sweep moves them in).
      committed = !inserted.sharedMedia;
      if (committed) await this.#media.commit(mediaKey);
      return await this.#created(id, committed ? mediaKey : null);
    } finally {
      // Best effort: a failed cleanup must not replace the answer (a dead process's leftovers are swept).
      if (!committed) await this.#media.discard(mediaKey).catch(() => {});
      // Released under the files' lock, only while no row references the key: never a committed upload's files.
      if (!committed && persisted) void this.#releaseMedia(mediaKey).catch(() => {});
    }
  }

  /** `upload_type=image_url`: the service fetches the image, then it is an image upload with `source_url` set. */
  async createFromUrl(
    principal: Principal,
    input: Omit<ImageInput, 'bytes' | 'sha256' | 'sourceUrl' | 'originalName'> & { imageUrl: string },
    signal?: AbortSignal,
  ): Promise<CreateResult> {
    const fetched = await this.#fetcher.fetch(input.imageUrl, signal);
    const { bytes } = fetched;
    // The bytes move to a worker thread: they need an ArrayBuffer of their own.
    const own =
      bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
        ? (bytes.buffer as ArrayBuffer)
        : new Uint8Array(bytes).buffer;
    const originalName = originalNameOf(new URL(fetched.finalUrl).pathname.split('/').pop(), { urlEncoded: true });
    return this.createImage(
      principal,
      { ...input, bytes: async () => own, sha256: fetched.sha256, sourceUrl: input.imageUrl, originalName },
      signal,
    );
  }

  async createLink(principal: Principal, input: LinkInput): Promise<CreateResult> {
    const url = validateExternalUrl(input.externalUrl);
    const id = randomUUID();
    const row: NewUpload = {
      ...this.#base(id, principal, { ...input, originalName: null, sourceUrl: null }),
      uploadType: 'link',
      externalUrl: url.toString(),
    };
    const inserted = await this.#uploads.insert(row, input.tags);
    if (!inserted.ok && 'refused' in inserted) throw refusal(inserted, row.createdAt);
    return this.#created(id);
  }

  /**
   * A single upload, reachable by anyone who knows its id (private means unlisted); held ones by their owner and
   * admins only, removed ones (tombstones) by admins only.
   */
  async get(reader: Reader | null, id: string, myVote?: 'fucks' | 'does_not_fuck' | null) {
    const u = await this.#uploads.findById(id);
    if (!u) throw errors.notFound(`upload ${id} does not exist`);
    assertReachable(u, reader);
    return toUploadView(u, myVote);
  }

  /**
   * The stored-files key behind `GET /api/image/{id}`; private uploads are served too (private means unlisted),
   * held ones to their owner and admins; a removed upload's files are gone (410).
   */
  async imageKey(reader: Reader | null, id: string): Promise<{ mediaKey: string; listed: boolean }> {
    const u = await this.#uploads.mediaKeyOf(id);
    if (u === undefined) throw errors.notFound(`upload ${id} does not exist`);
    assertReachable({ id, ...u }, reader);
    if (u.moderation === 'removed') throw errors.removed(`upload ${id} was removed by the moderators`);
    if (u.mediaKey === null) throw errors.notFound(`upload ${id} is a link; it has no image`);
    return { mediaKey: u.mediaKey, listed: u.moderation === 'visible' };
  }

  /**
   * Changes privacy; answers with the record (and the caller's vote on it, as every single-upload response to a user).
   */
  async setPrivacy(principal: Principal, id: string, isPrivate: boolean, myVote: 'fucks' | 'does_not_fuck' | null) {
    const u = await this.#owned(principal, id, 'change the privacy of');
    if (u.isPrivate !== isPrivate) {
      await this.#uploads.setPrivacy(id, isPrivate);
      await this.#events.onChanged?.();
    }
    return toUploadView({ ...u, isPrivate }, myVote);
  }

  /**
   * The owner's label (`PATCH /api/upload/{id}` `{"ai_generated": bool}`): true adds a hand label, false removes
   * only a hand label (a marker-based one is 400, ai-label.ts). Answers with the record.
   */
  async setAiGenerated(
    principal: Principal,
    id: string,
    aiGenerated: boolean,
    myVote: 'fucks' | 'does_not_fuck' | null,
  ) {
    const u = await this.#owned(principal, id, 'label');
    const aiLabel = ownerLabel(u.aiLabel, aiGenerated, u.provenance);
    if (aiLabel !== u.aiLabel) {
      await this.#uploads.setAiLabel(id, aiLabel);
      await this.#events.onChanged?.();
    }
    return toUploadView({ ...u, aiLabel }, myVote);
  }

  /** `GET /api/upload/{id}/provenance`: what was read, under the record's visibility rules; 404 for links. */
  async provenance(reader: Reader | null, id: string) {
    const u = await this.#uploads.findById(id);
    if (!u) throw errors.notFound(`upload ${id} does not exist`);
    assertReachable(u, reader);
    if (u.uploadType !== 'image') throw errors.notFound(`upload ${id} is a link; it has no provenance`);
    if (!u.provenance)
      throw errors.notFound(
        `upload ${id} has no provenance on record (stored before it was read, or with AI_POLICY=off)`,
      );
    return { upload_id: u.id, ai_label: u.aiLabel, ...u.provenance };
  }

  async remove(principal: Principal, id: string): Promise<{ success: true; id: string }> {
    await this.#owned(principal, id, 'delete');
    const deleted = await this.#uploads.delete(id);
    if (!deleted) throw errors.notFound(`upload ${id} does not exist`);
    // The row is gone: feeds must stop showing it whatever happens to the files, whose removal is journalled
    // (media_garbage) and retried by the sweep if it fails here.
    await this.#events.onChanged?.();
    if (deleted.mediaKey && !deleted.mediaStillUsed) await this.#releaseMedia(deleted.mediaKey).catch(() => {});
    return { success: true, id };
  }

  async #owned(principal: Principal, id: string, verb: string): Promise<UploadRecord> {
    const u = await this.#uploads.findById(id);
    if (!u) throw errors.notFound(`upload ${id} does not exist`);
    assertReachable(u, principal);
    if (u.userId !== principal.userId && !principal.isAdmin)
      throw errors.forbidden(`only the owner or an admin may ${verb} upload ${id}`);
    return u;
  }

  /**
   * Stored files of these bytes that a new upload may share: any upload's, visible or not, once they are in
   * place (a fresh upload's files move in only after its commit); else the upload's own, which the insert then
   * keeps. Whether a row still references shared files is decided by the insert, under their lock. Both
   * cases do the same work (one lookup, the stats, then the insert's lock and read), so that the time taken
   * does not tell whether such files exist.
   */
  async #shareableMedia(sha256: string, own: SharedMedia): Promise<SharedMedia> {
    const twin = await this.#uploads.findAnyBySha256(sha256);
    const candidate = twin?.mediaKey ? { mediaKey: twin.mediaKey, variants: twin.variants } : own;
    return (await this.#media.has(candidate.mediaKey)) ? candidate : own;
  }

  /** Removes stored files unless an upload references them (journalled: the sweep retries a failure). */
  #releaseMedia(mediaKey: string): Promise<boolean> {
    return this.#uploads.releaseMedia(mediaKey, () => this.#media.remove(mediaKey));
  }

  /** The closest visible upload within NEAR_DUPLICATE_DISTANCE, as the answer to give; null when there is none. */
  async #nearDuplicate(phash: string, viewer: Viewer): Promise<CreateResult | null> {
    if (this.#policy.nearDuplicateDistance < 0) return null;
    const near = await this.#uploads.findNear(phash, this.#policy.nearDuplicateDistance, viewer);
    return near ? this.#duplicate(near.id, 'near', near.distance) : null;
  }

  #base(
    id: string,
    principal: Principal,
    input: { description: string; isPrivate: boolean; originalName: string | null; sourceUrl: string | null },
  ) {
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
      ...NO_IMAGE,
      moderation: 'visible' as const,
      personFlag: false,
      moderatedAt: null,
    };
  }

  /** `ownMedia`: files this upload moved in; released if its row was deleted before they were in place. */
  async #created(id: string, ownMedia: string | null = null): Promise<CreateResult> {
    await this.#events.onChanged?.();
    const u = await this.#uploads.findById(id);
    if (!u) {
      if (ownMedia) await this.#releaseMedia(ownMedia).catch(() => {});
      throw errors.notFound(`upload ${id} vanished`);
    }
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
