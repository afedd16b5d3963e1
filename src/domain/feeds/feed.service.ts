/**
 * Public feeds (paginated, filtered, sorted in SQL), the recent-items list and the caller's profile.
 * Public pages are cached server-side as serialized JSON with their ETag; every write that changes what
 * they hold (upload, vote, privacy, delete, tags) invalidates the whole feed cache at once.
 */
import { createHash } from 'node:crypto';
import type { Principal, UserView } from '../users.ts';
import type { UploadRecord, UploadView } from '../uploads/upload.types.ts';
import { toUploadView } from '../uploads/upload-view.ts';

export type FeedSort = 'new' | 'top' | 'hot' | 'best';

export interface FeedQuery {
  page: number;
  limit: number;
  sort: FeedSort;
  tag?: string | undefined;
  user?: string | undefined;
  type?: 'image' | 'link' | undefined;
}

export interface ProfileStats {
  uploads: number;
  upvotes_received: number;
  downvotes_received: number;
  votes_cast: number;
}

export interface FeedStore {
  /** Public uploads only, in the query's order; `limit` + 1 rows are asked for to learn `has_more`. */
  publicPage(q: FeedQuery, offset: number, fetch: number): Promise<UploadRecord[]>;
  ownUploads(userId: string, limit: number): Promise<UploadRecord[]>;
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

export function serialize(value: unknown): CachedJson {
  const body = Buffer.from(JSON.stringify(value));
  return { body, etag: `W/"${createHash('sha1').update(body).digest('base64url')}"` };
}

export class FeedService {
  readonly #store: FeedStore;
  readonly #cache: FeedCache;
  readonly #me: (p: Principal) => Promise<UserView>;

  constructor(deps: { store: FeedStore; cache: FeedCache; me: (p: Principal) => Promise<UserView> }) {
    this.#store = deps.store;
    this.#cache = deps.cache;
    this.#me = deps.me;
  }

  async list(q: FeedQuery): Promise<CachedJson> {
    const key = `feed:${q.sort}:${q.page}:${q.limit}:${q.type ?? ''}:${q.user?.toLowerCase() ?? ''}:${q.tag ?? ''}`;
    return this.#cached(key, FEED_TTL_SECONDS, async () => {
      const rows = await this.#store.publicPage(q, (q.page - 1) * q.limit, q.limit + 1);
      return {
        uploads: rows.slice(0, q.limit).map((u) => toUploadView(u)),
        page: q.page,
        limit: q.limit,
        has_more: rows.length > q.limit,
      };
    });
  }

  async recent(limit: number): Promise<CachedJson> {
    return this.#cached(`recent:${limit}`, RECENT_TTL_SECONDS, async () => {
      const rows = await this.#store.publicPage({ page: 1, limit, sort: 'new' }, 0, limit);
      return { items: rows.map((u) => toUploadView(u)) };
    });
  }

  async profile(principal: Principal): Promise<{ user: UserView; stats: ProfileStats; uploads: UploadView[] }> {
    const [user, stats, uploads] = await Promise.all([
      this.#me(principal),
      this.#store.stats(principal.userId),
      this.#store.ownUploads(principal.userId, PROFILE_UPLOADS),
    ]);
    return { user, stats, uploads: uploads.map((u) => toUploadView(u)) };
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
