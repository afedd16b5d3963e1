/**
 * Public feeds (paginated, filtered, sorted in SQL), the recent-items list and the caller's profile.
 * Public pages are cached server-side as serialized JSON with their ETag. A structural write (upload, privacy,
 * delete, tags, moderation) invalidates the whole feed cache at once; a vote invalidates only the score-sorted
 * pages of the listings its upload is in (`voteScopes`), and a cached page whose order no vote moves (sort=new,
 * recent) keeps being served with the counts of its uploads that were voted on read again by primary key.
 *
 * Every listing pages by keyset (cursor.ts): a page reads its own rows from an index, however deep it is. Number
 * pages stay for the first 10 000 rows (page_too_deep past them); each page also answers `next_cursor`.
 */
import { createHash } from 'node:crypto';
import { systemClock, type Clock } from '../clock.ts';
import type { Principal, UserView } from '../users.ts';
import type { UploadRecord, UploadView } from '../uploads/upload.types.ts';
import { toUploadView } from '../uploads/upload-view.ts';
import type { AiFilter } from '../uploads/ai-label.ts';
import {
  RANK_MOVES_KEEP_MS,
  RANK_MOVES_PRUNE_BATCH,
  RANK_MOVES_WINDOW_MS,
  checkPageDepth,
  Cursors,
  listingId,
  type Cursor,
  type ListAfter,
  type ListPosition,
  type PageStart,
} from './cursor.ts';

export type FeedSort = 'new' | 'top' | 'hot' | 'best';

export interface FeedQuery {
  page: number;
  limit: number;
  sort: FeedSort;
  tag?: string | undefined;
  user?: string | undefined;
  type?: 'image' | 'link' | undefined;
  /** Only the uploads labelled "Made with AI", or none of them (ai-label.ts). */
  ai?: AiFilter | undefined;
  /** A `next_cursor` of the same listing: the page after it (then `page` is ignored). */
  cursor?: string | undefined;
}

/** An upload of a listing with its position in the listing's order (what a cursor names). */
export interface Positioned {
  upload: UploadRecord;
  pos: ListPosition;
}

export type { PageStart } from './cursor.ts';

export interface ProfileStats {
  uploads: number;
  upvotes_received: number;
  downvotes_received: number;
  votes_cast: number;
}

export interface FeedStore {
  /**
   * Public uploads only, in the query's order, from `start`; `limit` + 1 rows are asked for to learn `has_more`.
   * After a cursor of a ranked sort, uploads whose ranks moved after `since` are listed at the keys they had at
   * `since` (their position is that key) when `start.frozen`, else skipped (they may have been shown).
   */
  publicPage(q: FeedQuery, start: PageStart, fetch: number): Promise<Positioned[]>;
  /** Deletes up to `batch` rows of the journal of rank moves older than `before`; resolves with how many. */
  pruneRankMoves(before: Date, batch: number): Promise<number>;
  /** The user's own uploads (private included, removed not), newest first, after `after` when given. */
  ownUploads(userId: string, after: ListAfter | null, fetch: number): Promise<Positioned[]>;
  stats(userId: string): Promise<ProfileStats>;
  /** The vote counts of these uploads (by primary key: as many rows as ids). */
  counts(ids: readonly string[]): Promise<Map<string, { upvotes: number; downvote_count: number }>>;
}

/** A voted-on upload, as the scopes of the listings it is in name it. */
export interface VotedUpload {
  id: string;
  uploadType: 'image' | 'link';
  /** The owner's username key (lowercase), as a `user` filter names it. */
  ownerKey: string;
  /** Its tags' slugs, as a `tag` filter names them. */
  tags: readonly string[];
}

/** What a vote changes: the scopes whose order it may move, and the uploads whose counts it changed. */
export interface VoteChange {
  scopes: readonly string[];
  uploads: readonly string[];
}

/** A serialized page: the UTF-8 bytes are kept, so a cache hit is written out without encoding again. */
export interface CachedJson {
  body: Buffer;
  etag: string;
  /** The uploads whose counts the page shows, when no vote can move its order: recounted instead of dropped. */
  ids?: readonly string[] | undefined;
}

/** What a read of the cache found, and the generations it looked under (given back to `write`). */
export interface CacheRead {
  hit: CachedJson | null;
  /** The global generation with those of the page's scopes. */
  generation: string;
  /** The vote sequence number read under: a page kept with it is current as of that vote. */
  seq: number;
  /** Of the hit's `ids`, the uploads whose counts may have changed since it was kept (read them again). */
  recount: readonly string[];
}

/**
 * A cache of public pages keyed by the global generation, which every structural write bumps, and those of the
 * scopes a page depends on (`scopes`), which votes bump. `read` returns the generations it looked under;
 * `write` stores under those same ones, so a page built from data read before a write can never be served
 * after it (counts of a page with `ids` excepted: they are recounted, CacheRead.recount).
 */
export interface FeedCache {
  read(key: string, scopes?: readonly string[]): Promise<CacheRead>;
  /** What `read` would answer, when the cache can tell at once (pages in this process), else absent or null. */
  peek?(key: string, scopes?: readonly string[]): CacheRead | null;
  write(
    key: string,
    generation: string,
    value: CachedJson,
    ttlSeconds: number,
    at?: { scopes?: readonly string[]; seq?: number },
  ): Promise<void>;
  /** Makes every cached page stale, in every process sharing the cache. */
  invalidate(): Promise<void>;
  /** Makes the pages of `change.scopes` stale and the counts of `change.uploads` recounted, in every process. */
  voted(change: VoteChange): Promise<void>;
}

/** How a page was answered: from the cache, from the cache with counts read again, or built. */
export type CacheOutcome = 'hit' | 'recount' | 'miss';

/** The scope of a score-sorted listing whose order a vote may move: its most selective filter. */
export function rankScope(q: { tag?: string | undefined; user?: string | undefined; type?: string | undefined }) {
  if (q.tag) return `rank:tag:${q.tag}`;
  if (q.user) return `rank:user:${q.user.toLowerCase()}`;
  if (q.type) return `rank:type:${q.type}`;
  return 'rank:all';
}

/**
 * The scopes a vote on `u` may reorder: every score-sorted listing `u` is in has one of them (each of its
 * filters matches `u`, and its scope is one of those filters, rankScope).
 */
export function voteScopes(u: VotedUpload): string[] {
  return [
    'rank:all',
    `rank:type:${u.uploadType}`,
    `rank:user:${u.ownerKey.toLowerCase()}`,
    ...u.tags.map((t) => `rank:tag:${t}`),
  ];
}

export const FEED_TTL_SECONDS = 120;
export const RECENT_TTL_SECONDS = 300;
export const PROFILE_UPLOADS = 12;

/** A page of a keyset listing: the rows shown, and the cursor of the next page (null on the last). */
export function keysetPage(
  rows: Positioned[],
  limit: number,
  listing: string,
  next: { page: number; since: Date },
  cursors: Cursors,
): { uploads: UploadView[]; has_more: boolean; next_cursor: string | null } {
  const shown = rows.slice(0, limit);
  const last = shown.at(-1);
  const hasMore = rows.length > limit && last !== undefined;
  return {
    uploads: shown.map((r) => toUploadView(r.upload)),
    has_more: hasMore,
    next_cursor: hasMore
      ? cursors.encode(listing, { page: next.page, after: { since: next.since, pos: last.pos } })
      : null,
  };
}

export function serialize(value: unknown): CachedJson {
  const body = Buffer.from(JSON.stringify(value));
  return { body, etag: `W/"${createHash('sha1').update(body).digest('base64url')}"` };
}

export class FeedService {
  readonly #store: FeedStore;
  readonly #cache: FeedCache;
  readonly #me: (p: Principal) => Promise<UserView>;
  readonly #clock: Clock;
  readonly #onCache: (outcome: CacheOutcome) => void;
  readonly #cursors: Cursors;
  readonly #keys = new WeakMap<FeedQuery, { key: string; scopes: readonly string[]; user: string | undefined }>();

  constructor(deps: {
    store: FeedStore;
    cache: FeedCache;
    me: (p: Principal) => Promise<UserView>;
    clock?: Clock;
    /** Told how each cacheable page was answered (metrics). */
    onCache?: (outcome: CacheOutcome) => void;
    /** Signs and checks `next_cursor` (main.ts: keyed by the server's secret). */
    cursors?: Cursors;
  }) {
    this.#cursors = deps.cursors ?? new Cursors();
    this.#store = deps.store;
    this.#cache = deps.cache;
    this.#me = deps.me;
    this.#clock = deps.clock ?? systemClock;
    this.#onCache = deps.onCache ?? (() => {});
  }

  /**
   * A query's cache key and scopes. Per query object, once: the gateway hands the same parsed object for the same
   * query string (route.ts), so a cached read computes neither again.
   */
  #keyOf(q: FeedQuery): { key: string; scopes: readonly string[]; user: string | undefined } {
    let k = this.#keys.get(q);
    if (!k) {
      if (!q.cursor) checkPageDepth(q.page, q.limit);
      const user = q.user?.toLowerCase();
      const at = q.cursor ? `c:${q.cursor}` : String(q.page);
      const ai = q.ai ? `:ai=${q.ai}` : '';
      const key = `feed:${q.sort}:${at}:${q.limit}:${q.type ?? ''}:${user ?? ''}:${q.tag ?? ''}${ai}`;
      // No vote moves the `new` order: its pages are recounted instead. A score-sorted page depends on its scope.
      const scopes = q.sort !== 'new' ? [rankScope({ ...q, user })] : [];
      this.#keys.set(q, (k = { key, scopes, user }));
    }
    return k;
  }

  /**
   * The page of `q` when the cache holds it current and answers at once (a cache in this process), else null: ask
   * `list`. A hit here is counted as `list`'s are; it spares a cached read the async frames of a lookup.
   */
  cachedPage(q: FeedQuery): CachedJson | null {
    if (!this.#cache.peek) return null;
    const { key, scopes } = this.#keyOf(q);
    const read = this.#cache.peek(key, scopes);
    if (!read?.hit || read.recount.length) return null;
    this.#onCache('hit');
    return read.hit;
  }

  async list(q: FeedQuery): Promise<CachedJson> {
    const { key, scopes, user } = this.#keyOf(q);
    const ranked = q.sort !== 'new';
    return this.#cached(key, FEED_TTL_SECONDS, scopes, async () => {
      // `ai` last, and only when set: a cursor made before the filter existed still belongs to its listing.
      const listing = listingId(['feed', q.sort, q.limit, q.type, user, q.tag, ...(q.ai ? [`ai:${q.ai}`] : [])]);
      // The cursor is checked (its MAC, its listing) when its page is built: a page is cached under the cursor's
      // very text, only once that text was checked, so a cached page's request costs no check.
      const cursor: Cursor | null = q.cursor ? this.#cursors.decode(listing, q.cursor) : null;
      const page = cursor?.page ?? q.page;
      // When this traversal's first page is read (a cached page keeps the time it was built at, in its cursor).
      const now = this.#clock.now();
      const since = cursor?.after.since ?? now;
      const start: PageStart = cursor
        ? { after: cursor.after, frozen: now.getTime() - since.getTime() <= RANK_MOVES_WINDOW_MS }
        : { offset: (q.page - 1) * q.limit };
      const rows = await this.#store.publicPage(q, start, q.limit + 1);
      const { uploads, has_more, next_cursor } = keysetPage(
        rows,
        q.limit,
        listing,
        { page: page + 1, since },
        this.#cursors,
      );
      const value = { uploads, page, limit: q.limit, has_more, next_cursor };
      return { value, ids: ranked ? undefined : uploads.map((u) => u.id) };
    });
  }

  async recent(limit: number): Promise<CachedJson> {
    return this.#cached(`recent:${limit}`, RECENT_TTL_SECONDS, [], async () => {
      const rows = await this.#store.publicPage({ page: 1, limit, sort: 'new' }, { offset: 0 }, limit);
      const items = rows.map((r) => toUploadView(r.upload));
      return { value: { items }, ids: items.map((u) => u.id) };
    });
  }

  async profile(principal: Principal): Promise<{
    user: UserView;
    stats: ProfileStats;
    uploads: UploadView[];
    next_cursor: string | null;
  }> {
    const [user, stats, own] = await Promise.all([
      this.#me(principal),
      this.#store.stats(principal.userId),
      this.ownUploads(principal, PROFILE_UPLOADS),
    ]);
    return { user, stats, uploads: own.uploads, next_cursor: own.next_cursor };
  }

  /** The caller's own uploads (private included), newest first, a page at a time by cursor. */
  async ownUploads(
    principal: Principal,
    limit: number,
    cursorText?: string,
  ): Promise<{ uploads: UploadView[]; limit: number; has_more: boolean; next_cursor: string | null }> {
    const listing = listingId(['own', principal.userId, limit]);
    const cursor = cursorText ? this.#cursors.decode(listing, cursorText) : null;
    const rows = await this.#store.ownUploads(principal.userId, cursor?.after ?? null, limit + 1);
    const page = keysetPage(
      rows,
      limit,
      listing,
      { page: (cursor?.page ?? 1) + 1, since: cursor?.after.since ?? this.#clock.now() },
      this.#cursors,
    );
    return { ...page, limit };
  }

  /**
   * Prunes the journal of rank moves of what no cursor needs any more (older than the window, with a margin), a
   * batch per statement; resolves with how many rows went.
   */
  async pruneRankMoves(): Promise<number> {
    const before = new Date(this.#clock.now().getTime() - RANK_MOVES_KEEP_MS);
    let pruned = 0;
    for (;;) {
      const n = await this.#store.pruneRankMoves(before, RANK_MOVES_PRUNE_BATCH);
      pruned += n;
      if (n < RANK_MOVES_PRUNE_BATCH) return pruned;
    }
  }

  /** Every cached page stale: a structural write (upload, privacy, delete, tags, moderation). */
  invalidate(): Promise<void> {
    return this.#cache.invalidate();
  }

  /** A vote on `u` changed its counts: the score-sorted pages it may reorder go stale, the others recount it. */
  voted(u: VotedUpload): Promise<void> {
    return this.#cache.voted({ scopes: voteScopes(u), uploads: [u.id] });
  }

  async #cached(
    key: string,
    ttl: number,
    scopes: readonly string[],
    build: () => Promise<{ value: unknown; ids: string[] | undefined }>,
  ): Promise<CachedJson> {
    const { hit, generation, seq, recount } = await this.#cache.read(key, scopes);
    if (hit && !recount.length) {
      this.#onCache('hit');
      return hit;
    }
    let page: CachedJson;
    if (hit) {
      page = await this.#recounted(hit, recount);
      this.#onCache('recount');
    } else {
      const built = await build();
      page = { ...serialize(built.value), ids: built.ids };
      this.#onCache('miss');
    }
    await this.#cache.write(key, generation, page, ttl, { scopes, seq });
    return page;
  }

  /** `page` with the counts of `ids` read again (by primary key); the same bytes and ETag if none moved. */
  async #recounted(page: CachedJson, ids: readonly string[]): Promise<CachedJson> {
    const counts = await this.#store.counts(ids);
    const doc = JSON.parse(page.body.toString('utf8')) as { uploads?: UploadView[]; items?: UploadView[] };
    let moved = false;
    for (const u of [...(doc.uploads ?? []), ...(doc.items ?? [])]) {
      const c = counts.get(u.id);
      if (c && (c.upvotes !== u.upvotes || c.downvote_count !== u.downvote_count)) {
        u.upvotes = c.upvotes;
        u.downvote_count = c.downvote_count;
        moved = true;
      }
    }
    return moved ? { ...serialize(doc), ids: page.ids } : page;
  }
}
