/**
 * Public feeds (paginated, filtered, sorted in SQL), the recent-items list and the caller's profile.
 * Public pages are cached server-side as serialized JSON with their ETag; every write that changes what
 * they hold (upload, vote, privacy, delete, tags) invalidates the whole feed cache at once.
 *
 * Every listing pages by keyset (cursor.ts): a page reads its own rows from an index, however deep it is. Number
 * pages stay for the first 10 000 rows (page_too_deep past them); each page also answers `next_cursor`.
 */
import { createHash } from 'node:crypto';
import { systemClock, type Clock } from '../clock.ts';
import type { Principal, UserView } from '../users.ts';
import type { UploadRecord, UploadView } from '../uploads/upload.types.ts';
import { toUploadView } from '../uploads/upload-view.ts';
import {
  checkPageDepth,
  decodeCursor,
  encodeCursor,
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
   * After a cursor of a ranked sort, uploads whose ranks moved after `since` are skipped (they may have been shown).
   */
  publicPage(q: FeedQuery, start: PageStart, fetch: number): Promise<Positioned[]>;
  /** The user's own uploads (private included, removed not), newest first, after `after` when given. */
  ownUploads(userId: string, after: ListAfter | null, fetch: number): Promise<Positioned[]>;
  stats(userId: string): Promise<ProfileStats>;
}

/** A serialized page: the UTF-8 bytes are kept, so a cache hit is written out without encoding again. */
export interface CachedJson {
  body: Buffer;
  etag: string;
}

/**
 * A cache of public pages keyed by a generation that every write bumps. `read` returns the generation it
 * looked under; `write` stores under that same generation, so a page built from data read before a write
 * can never be served after it.
 */
export interface FeedCache {
  read(key: string): Promise<{ hit: CachedJson | null; generation: string }>;
  write(key: string, generation: string, value: CachedJson, ttlSeconds: number): Promise<void>;
  /** Makes every cached page stale, in every process sharing the cache. */
  invalidate(): Promise<void>;
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
): { uploads: UploadView[]; has_more: boolean; next_cursor: string | null } {
  const shown = rows.slice(0, limit);
  const last = shown.at(-1);
  const hasMore = rows.length > limit && last !== undefined;
  return {
    uploads: shown.map((r) => toUploadView(r.upload)),
    has_more: hasMore,
    next_cursor: hasMore
      ? encodeCursor(listing, { page: next.page, after: { since: next.since, pos: last.pos } })
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

  constructor(deps: { store: FeedStore; cache: FeedCache; me: (p: Principal) => Promise<UserView>; clock?: Clock }) {
    this.#store = deps.store;
    this.#cache = deps.cache;
    this.#me = deps.me;
    this.#clock = deps.clock ?? systemClock;
  }

  async list(q: FeedQuery): Promise<CachedJson> {
    const user = q.user?.toLowerCase();
    const listing = listingId(['feed', q.sort, q.limit, q.type, user, q.tag]);
    const cursor: Cursor | null = q.cursor ? decodeCursor(listing, q.cursor) : null;
    if (!cursor) checkPageDepth(q.page, q.limit);
    const page = cursor?.page ?? q.page;
    const at = q.cursor ? `c:${q.cursor}` : String(q.page);
    const key = `feed:${q.sort}:${at}:${q.limit}:${q.type ?? ''}:${user ?? ''}:${q.tag ?? ''}`;
    return this.#cached(key, FEED_TTL_SECONDS, async () => {
      const since = cursor?.after.since ?? this.#clock.now();
      const start: PageStart = cursor ? { after: cursor.after } : { offset: (q.page - 1) * q.limit };
      const rows = await this.#store.publicPage(q, start, q.limit + 1);
      const { uploads, has_more, next_cursor } = keysetPage(rows, q.limit, listing, { page: page + 1, since });
      return { uploads, page, limit: q.limit, has_more, next_cursor };
    });
  }

  async recent(limit: number): Promise<CachedJson> {
    return this.#cached(`recent:${limit}`, RECENT_TTL_SECONDS, async () => {
      const rows = await this.#store.publicPage({ page: 1, limit, sort: 'new' }, { offset: 0 }, limit);
      return { items: rows.map((r) => toUploadView(r.upload)) };
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
    const cursor = cursorText ? decodeCursor(listing, cursorText) : null;
    const rows = await this.#store.ownUploads(principal.userId, cursor?.after ?? null, limit + 1);
    const page = keysetPage(rows, limit, listing, {
      page: (cursor?.page ?? 1) + 1,
      since: cursor?.after.since ?? this.#clock.now(),
    });
    return { ...page, limit };
  }

  invalidate(): Promise<void> {
    return this.#cache.invalidate();
  }

  async #cached(key: string, ttl: number, build: () => Promise<unknown>): Promise<CachedJson> {
    const { hit, generation } = await this.#cache.read(key);
    if (hit) return hit;
    const value = serialize(await build());
    await this.#cache.write(key, generation, value, ttl);
    return value;
  }
}
