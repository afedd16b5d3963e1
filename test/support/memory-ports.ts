/**
 * The domain's ports in memory, for unit tests of the domain's services and use cases: no database, no
 * files, no worker threads. Each keeps what a test needs to look at (rows, staged and stored media keys,
 * the work a fake processor did, the queries a store was asked). Votes, feeds and tags work over the rows
 * of a MemoryUploads, as the real stores share the uploads table.
 */
import type { AiLabel } from '../../src/domain/uploads/ai-label.ts';
import { NO_PROVENANCE, type Provenance } from '../../src/domain/uploads/provenance.ts';
import { createHash } from 'node:crypto';
import { randomUUID } from 'node:crypto';
import { errors } from '../../src/domain/errors.ts';
import type { ListAfter, ListPosition } from '../../src/domain/feeds/cursor.ts';
import type {
  CachedJson,
  FeedCache,
  FeedQuery,
  FeedStore,
  PageStart,
  Positioned,
  ProfileStats,
} from '../../src/domain/feeds/feed.service.ts';
import { hotRank, wilsonLowerBound } from '../../src/domain/ranking.ts';
import type { TagStore, TagSuggestion } from '../../src/domain/tag.service.ts';
import { slugOf, type TagView } from '../../src/domain/tags.ts';
import type { Principal } from '../../src/domain/users.ts';
import type { VoteGuard, VoteStore } from '../../src/domain/votes/vote.service.ts';
import type { Claim, ClaimResult, IdempotencyStore, StoredResponse } from '../../src/domain/idempotency.ts';
import { personVerdict, type PersonBox } from '../../src/domain/person-policy.ts';
import type {
  ImageFetcher,
  ImageProcessor,
  MediaStore,
  NewUpload,
  ProcessHooks,
  SharedMedia,
  UploadStore,
} from '../../src/domain/uploads/ports.ts';
import { NO_IMAGE } from '../../src/domain/uploads/ports.ts';
import type { UploadRecord, Viewer, VoteValue } from '../../src/domain/uploads/upload.types.ts';

/** A signed-in caller with an account made at the start of 2026. */
export function testPrincipal(username: string, opts: Partial<Principal> = {}): Principal {
  return {
    userId: `id-${username}`,
    username,
    isAdmin: false,
    accountCreatedAt: new Date('2026-01-01T00:00:00Z'),
    method: 'api_token',
    viaCookie: false,
    ...opts,
  };
}

interface Row {
  requestHash: string;
  response: StoredResponse | null;
  token: string | null;
  leaseUntil: Date;
  at: Date;
}

/** The store port in memory; `down` makes every call fail as an unreachable database would. */
export class MemoryIdempotencyStore implements IdempotencyStore {
  rows = new Map<string, Row>();
  down = false;
  #id = (u: string, k: string) => `${u}\n${k}`;
  async #up() {
    await Promise.resolve();
    if (this.down) throw new Error('connect ECONNREFUSED');
  }
  async claim(
    userId: string,
    key: string,
    requestHash: string,
    claim: Claim,
    expiredBefore: Date,
  ): Promise<ClaimResult> {
    await this.#up();
    const row = this.rows.get(this.#id(userId, key));
    if (!row || row.at < expiredBefore) {
      this.rows.set(this.#id(userId, key), {
        requestHash,
        response: null,
        token: claim.token,
        leaseUntil: claim.leaseUntil,
        at: claim.at,
      });
      return { state: 'claimed' };
    }
    if (row.response) return { state: 'done', requestHash: row.requestHash, response: row.response };
    return { state: 'pending', requestHash: row.requestHash, token: row.token, leaseUntil: row.leaseUntil };
  }
  #pending(userId: string, key: string, token: string | null) {
    const row = this.rows.get(this.#id(userId, key));
    return row && !row.response && row.token === token ? row : null;
  }
  async takeOver(userId: string, key: string, previous: string | null, claim: Claim) {
    await this.#up();
    const row = this.#pending(userId, key, previous);
    if (!row || row.leaseUntil >= claim.at) return false;
    Object.assign(row, { token: claim.token, leaseUntil: claim.leaseUntil, at: claim.at });
    return true;
  }
  async renew(userId: string, key: string, token: string, leaseUntil: Date) {
    await this.#up();
    const row = this.#pending(userId, key, token);
    if (row) row.leaseUntil = leaseUntil;
    return Boolean(row);
  }
  async complete(userId: string, key: string, token: string, response: StoredResponse) {
    await this.#up();
    const row = this.#pending(userId, key, token);
    if (row) row.response = response;
    return Boolean(row);
  }
  async release(userId: string, key: string, token: string) {
    await this.#up();
    if (this.#pending(userId, key, token)) this.rows.delete(this.#id(userId, key));
  }
  async exists(userId: string, key: string) {
    await this.#up();
    return this.rows.has(this.#id(userId, key));
  }
  async purge() {
    return 0;
  }
}

const visibleTo = (u: UploadRecord, viewer: Viewer) => !u.isPrivate || u.userId === viewer.userId || viewer.isAdmin;

/** Hamming distance of two 64-bit hashes in hex. */
function hamming(a: string, b: string): number {
  let x = BigInt(`0x${a}`) ^ BigInt(`0x${b}`);
  let n = 0;
  for (; x; x >>= 1n) n += Number(x & 1n);
  return n;
}

/** A new upload row as the upload service builds one: a visible public link unless `fields` say otherwise. */
export function newUpload(fields: Partial<NewUpload> & { userId: string }): NewUpload {
  return {
    id: randomUUID(),
    uploadType: 'link',
    filename: null,
    originalName: null,
    description: '',
    externalUrl: `https://example.com/${randomUUID()}`,
    sourceUrl: null,
    isPrivate: false,
    createdAt: new Date('2026-11-01T00:00:00Z'),
    ...NO_IMAGE,
    moderation: 'visible',
    personFlag: false,
    moderatedAt: null,
    ...fields,
  };
}

/** The upload store in memory: rows in insertion order (oldest first), usernames given by the test. */
export class MemoryUploads implements UploadStore {
  rows = new Map<string, UploadRecord>();
  usernames = new Map<string, string>();
  /** A stored row as the test describes it (a visible public link upload by default); returns it. */
  add(fields: Partial<UploadRecord> & { userId: string }): UploadRecord {
    const row: UploadRecord = {
      ...newUpload(fields),
      username: this.usernames.get(fields.userId) ?? 'someone',
      upvotes: 0,
      downvoteCount: 0,
      tags: [],
      ...fields,
    };
    this.rows.set(row.id, row);
    return row;
  }
  async findById(id: string) {
    return this.rows.get(id) ?? null;
  }
  async mediaKeyOf(id: string) {
    const u = this.rows.get(id);
    return u ? { mediaKey: u.mediaKey, userId: u.userId, moderation: u.moderation } : undefined;
  }
  async findVisibleBySha256(sha256: string, viewer: Viewer) {
    return [...this.rows.values()].find((u) => u.sha256 === sha256 && visibleTo(u, viewer)) ?? null;
  }
  async visibleIdsBySha256(sha256s: readonly string[], viewer: Viewer) {
    const found = new Map<string, string>();
    for (const s of sha256s) {
      const u = await this.findVisibleBySha256(s, viewer);
      if (u) found.set(s, u.id);
    }
    return found;
  }
  async findNear(phash: string, maxDistance: number, viewer: Viewer) {
    const near = [...this.rows.values()]
      .filter((u) => u.phash && visibleTo(u, viewer))
      .map((u) => ({ id: u.id, distance: hamming(u.phash!, phash) }))
      .filter((n) => n.distance <= maxDistance);
    return near.sort((a, b) => a.distance - b.distance)[0] ?? null;
  }
  async insert(upload: NewUpload, tagNames: string[], opts: { shareMedia?: SharedMedia } = {}) {
    const same = [...this.rows.values()].find(
      (u) => u.userId === upload.userId && upload.sha256 && u.sha256 === upload.sha256,
    );
    if (same) return { ok: false as const, duplicateOf: same.id };
    const share = opts.shareMedia;
    const sharedMedia = Boolean(
      share && share.mediaKey !== upload.mediaKey && [...this.rows.values()].some((u) => u.mediaKey === share.mediaKey),
    );
    const row: UploadRecord = {
      ...upload,
      ...(sharedMedia ? { mediaKey: share!.mediaKey, variants: share!.variants } : {}),
      username: this.usernames.get(upload.userId) ?? 'someone',
      upvotes: 0,
      downvoteCount: 0,
      tags: tagNames.map((name) => ({ id: name, name, slug: name.replace(/ /g, '-') })),
    };
    this.rows.set(upload.id, row);
    return { ok: true as const, sharedMedia };
  }
  async findAnyBySha256(sha256: string) {
    return [...this.rows.values()].find((u) => u.sha256 === sha256) ?? null;
  }
  async setPrivacy(id: string, isPrivate: boolean) {
    const u = this.rows.get(id);
    if (u) u.isPrivate = isPrivate;
  }
  async setAiLabel(id: string, label: AiLabel | null) {
    const u = this.rows.get(id);
    if (u) u.aiLabel = label;
  }
  async delete(id: string) {
    const u = this.rows.get(id);
    if (!u) return null;
    this.rows.delete(id);
    return { mediaKey: u.mediaKey, mediaStillUsed: [...this.rows.values()].some((o) => o.mediaKey === u.mediaKey) };
  }
  async releaseMedia(mediaKey: string, remove: () => Promise<void>) {
    if ([...this.rows.values()].some((u) => u.mediaKey === mediaKey)) return false;
    await remove();
    return true;
  }
}

/** Media files in memory: which keys are staged and which are stored. */
export class MemoryMedia implements MediaStore {
  staged = new Set<string>();
  stored = new Set<string>();
  async stage(mediaKey: string) {
    this.staged.add(mediaKey);
    return `/staging/${mediaKey}`;
  }
  async persist() {
    return false;
  }
  async commit(mediaKey: string) {
    if (!this.staged.delete(mediaKey)) throw new Error(`nothing staged under ${mediaKey}`);
    this.stored.add(mediaKey);
  }
  async discard(mediaKey: string) {
    this.staged.delete(mediaKey);
  }
  async remove(mediaKey: string) {
    this.stored.delete(mediaKey);
  }
  async has(mediaKey: string) {
    return this.stored.has(mediaKey);
  }
}

/** What the fake processor makes of an image: its perceptual hash and the detector's person score. */
export interface FakeImage {
  phash: string;
  humanScore?: number;
  /** The detector's boxes (fractions of the image), as the workers return them when detection ran. */
  humanBoxes?: PersonBox[];
  /** What the provenance reader finds in it (default: no marker). */
  provenance?: Provenance;
}

type Processed = NonNullable<Awaited<ReturnType<ImageProcessor['process']>>>;

/**
 * The worker pool's contract without the pixels: an image is its bytes as text, looked up in `images`.
 * Asks `afterHash` once the hash is known (stopped: nothing encoded), applies the person policy as the
 * workers do (the domain's rule), and honours its signal. `gate`, when set, holds every task until it resolves.
 */
export class FakeProcessor implements ImageProcessor {
  images = new Map<string, FakeImage>();
  hashed = 0;
  encoded = 0;
  gate: Promise<void> | null = null;
  async process(
    task: Parameters<ImageProcessor['process']>[0],
    signal?: AbortSignal,
    hooks: ProcessHooks = {},
  ): Promise<Processed | null> {
    const image = this.images.get(new TextDecoder().decode(task.bytes));
    if (!image) throw errors.unsupportedFormat('not an image this fake knows');
    if (this.gate) await this.gate;
    if (signal?.aborted) throw errors.busy('the request was cancelled');
    this.hashed++;
    if (await hooks.afterHash?.(image.phash)) return null;
    const humanScore = task.humanPolicy === 'off' ? null : (image.humanScore ?? 0);
    const verdict = personVerdict(
      task.humanPolicy,
      { sure: task.humanThreshold, review: task.humanReviewThreshold ?? task.humanThreshold },
      humanScore,
    );
    if (verdict.decision === 'refuse') throw errors.humanDetected(verdict.message);
    this.encoded++;
    const variant = (name: string, width: number) => ({
      name,
      width,
      height: width,
      bytes: 100,
      path: `${task.stagingDir}/${name}.webp`,
    });
    return {
      ok: true,
      format: 'jpeg',
      width: 1200,
      height: 1200,
      animated: false,
      frames: 1,
      phash: image.phash,
      pdq: 'f'.repeat(64),
      pdqQuality: 100,
      thumbhash: 'AAAA',
      humanScore,
      ...(humanScore === null ? {} : { humanBoxes: image.humanBoxes ?? [] }),
      variants: [variant('thumb', 320), variant('medium', 1024), variant('full', 1200)],
      provenance: image.provenance ?? NO_PROVENANCE,
      timings: {},
    } as Processed;
  }
}

/** Fetches from `pages` (URL → bytes as text); anything else fails as an unreachable URL does. */
export class FakeFetcher implements ImageFetcher {
  pages = new Map<string, string>();
  async fetch(url: string) {
    const text = this.pages.get(url);
    if (text === undefined) throw errors.fetchFailed(`could not fetch ${url}`);
    const bytes = Buffer.from(text);
    return { bytes, sha256: createHash('sha256').update(bytes).digest('hex'), finalUrl: url };
  }
}

/**
 * Votes over the upload rows, as the vote repository keeps them: the guard sees the upload before anything is
 * written, the same value again changes nothing, and the row's counters move with the vote.
 */
export class MemoryVotes implements VoteStore {
  /** `userId uploadId` → +1 or −1. */
  values = new Map<string, 1 | -1>();
  readonly uploads: MemoryUploads;
  constructor(uploads: MemoryUploads) {
    this.uploads = uploads;
  }
  async cast(userId: string, uploadId: string, value: 1 | -1 | 0, _at: Date, guard?: VoteGuard) {
    const u = this.uploads.rows.get(uploadId);
    if (!u) return null;
    guard?.({ id: u.id, userId: u.userId, moderation: u.moderation });
    const key = `${userId} ${uploadId}`;
    const before = this.values.get(key) ?? 0;
    if (before !== value) {
      if (value === 0) this.values.delete(key);
      else this.values.set(key, value);
      u.upvotes += (value === 1 ? 1 : 0) - (before === 1 ? 1 : 0);
      u.downvoteCount += (value === -1 ? 1 : 0) - (before === -1 ? 1 : 0);
    }
    return { value, upvotes: u.upvotes, downvotes: u.downvoteCount, changed: before !== value };
  }
  async myVote(uploadId: string, userId: string): Promise<VoteValue | null> {
    const v = this.values.get(`${userId} ${uploadId}`);
    return v === 1 ? 'fucks' : v === -1 ? 'does_not_fuck' : null;
  }
}

const SORT_KEY: Record<FeedQuery['sort'], (u: UploadRecord) => number> = {
  new: (u) => u.createdAt.getTime(),
  top: (u) => u.upvotes - u.downvoteCount,
  hot: (u) => hotRank(u.upvotes - u.downvoteCount, u.createdAt),
  best: (u) => wilsonLowerBound(u.upvotes, u.downvoteCount),
};

/** Orders positions as the listings' indexes do: by rank, then creation time, then id. */
function comparePositions(a: ListPosition, b: ListPosition): number {
  return (
    (a.key ?? 0) - (b.key ?? 0) ||
    a.createdAt.getTime() - b.createdAt.getTime() ||
    (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  );
}

/** Feeds over the upload rows: public, visible rows in the query's order; every page asked for is logged. */
export class MemoryFeeds implements FeedStore {
  pages: Array<{ q: FeedQuery; offset: number; fetch: number }> = [];
  profileStats = new Map<string, ProfileStats>();
  readonly uploads: MemoryUploads;
  constructor(uploads: MemoryUploads) {
    this.uploads = uploads;
  }
  async publicPage(q: FeedQuery, start: PageStart, fetch: number): Promise<Positioned[]> {
    const offset = 'offset' in start ? start.offset : 0;
    this.pages.push({ q, offset, fetch });
    const ranked = q.sort !== 'new';
    const positioned = [...this.uploads.rows.values()]
      .filter((u) => !u.isPrivate && u.moderation === 'visible')
      .filter(
        (u) => (!q.type || u.uploadType === q.type) && (!q.user || u.username.toLowerCase() === q.user.toLowerCase()),
      )
      .filter((u) => !q.tag || u.tags.some((t) => t.slug === q.tag))
      .map((u) => ({ upload: u, pos: { key: ranked ? SORT_KEY[q.sort](u) : null, createdAt: u.createdAt, id: u.id } }));
    return positioned
      .sort((a, b) => -comparePositions(a.pos, b.pos))
      .filter((r) => !('after' in start) || comparePositions(r.pos, start.after.pos) < 0)
      .slice(offset, offset + fetch);
  }
  async ownUploads(userId: string, after: ListAfter | null, fetch: number): Promise<Positioned[]> {
    return [...this.uploads.rows.values()]
      .filter((u) => u.userId === userId)
      .map((upload) => ({ upload, pos: { key: null, createdAt: upload.createdAt, id: upload.id } }))
      .sort((a, b) => -comparePositions(a.pos, b.pos))
      .filter((r) => !after || comparePositions(r.pos, after.pos) < 0)
      .slice(0, fetch);
  }
  async stats(userId: string) {
    return this.profileStats.get(userId) ?? { uploads: 0, upvotes_received: 0, downvotes_received: 0, votes_cast: 0 };
  }
  /** No journal of rank moves here: the ranks are read as they are. */
  async pruneRankMoves() {
    return 0;
  }
  counted: string[][] = [];
  async counts(ids: readonly string[]) {
    this.counted.push([...ids]);
    const counts = new Map<string, { upvotes: number; downvote_count: number }>();
    for (const id of ids) {
      const u = this.uploads.rows.get(id);
      if (u) counts.set(id, { upvotes: u.upvotes, downvote_count: u.downvoteCount });
    }
    return counts;
  }
}

/** The feed cache's contract in memory: pages kept under the generation they were read at; writes are logged. */
export class MemoryFeedCache implements FeedCache {
  generation = 0;
  pages = new Map<string, { generation: string; value: CachedJson }>();
  writes: Array<{ key: string; generation: string; ttlSeconds: number }> = [];
  async read(key: string) {
    const page = this.pages.get(key);
    const generation = String(this.generation);
    return { hit: page?.generation === generation ? page.value : null, generation, seq: 0, recount: [] };
  }
  votes: Array<{ scopes: readonly string[]; uploads: readonly string[] }> = [];
  async voted(change: { scopes: readonly string[]; uploads: readonly string[] }) {
    this.votes.push(change);
    this.generation++;
  }
  async write(key: string, generation: string, value: CachedJson, ttlSeconds: number) {
    this.writes.push({ key, generation, ttlSeconds });
    this.pages.set(key, { generation, value });
  }
  async invalidate() {
    this.generation++;
  }
}

/** A tag's id, the same for the same slug everywhere (a UUID, as the database's are: cursors carry it). */
function tagIdOf(slug: string): string {
  const h = createHash('sha256').update(slug).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Tags over the upload rows: the limit checked against the tags an upload has; suggestions asked are logged. */
export class MemoryTags implements TagStore {
  removals: string[] = [];
  suggestions: string[] = [];
  readonly uploads: MemoryUploads;
  constructor(uploads: MemoryUploads) {
    this.uploads = uploads;
  }
  async ownerOf(uploadId: string) {
    const u = this.uploads.rows.get(uploadId);
    return u ? { userId: u.userId, moderation: u.moderation } : null;
  }
  async tagsOf(uploadId: string): Promise<TagView[]> {
    return [...(this.uploads.rows.get(uploadId)?.tags ?? [])];
  }
  async add(uploadId: string, names: string[], max: number) {
    const u = this.uploads.rows.get(uploadId);
    if (!u) return null;
    const fresh = names.filter((n) => !u.tags.some((t) => t.slug === slugOf(n)));
    if (u.tags.length + fresh.length > max) return { ok: false as const, wouldHave: u.tags.length + fresh.length };
    u.tags.push(...fresh.map((name) => ({ id: tagIdOf(slugOf(name)), name, slug: slugOf(name) })));
    return { ok: true as const, tags: [...u.tags] };
  }
  async remove(uploadId: string, slug: string) {
    this.removals.push(slug);
    const u = this.uploads.rows.get(uploadId);
    const at = u?.tags.findIndex((t) => t.slug === slug) ?? -1;
    if (at < 0) return false;
    u!.tags.splice(at, 1);
    return true;
  }
  /** Names starting with `prefix`, most used (by public, visible uploads) first, then by name. */
  async suggest(
    prefix: string,
    after: { uploads: number; id: string } | null,
    limit: number,
  ): Promise<TagSuggestion[]> {
    this.suggestions.push(prefix);
    const counts = new Map<string, TagSuggestion>();
    for (const u of this.uploads.rows.values()) {
      if (u.isPrivate || u.moderation !== 'visible') continue;
      for (const t of u.tags.filter((x) => x.name.startsWith(prefix))) {
        const c = counts.get(t.slug) ?? { ...t, uploads: 0 };
        c.uploads++;
        counts.set(t.slug, c);
      }
    }
    const ordered = [...counts.values()].sort((a, b) => b.uploads - a.uploads || a.name.localeCompare(b.name));
    const from = after ? ordered.findIndex((t) => t.id === after.id) + 1 : 0;
    return ordered.slice(from, from + limit);
  }
}
