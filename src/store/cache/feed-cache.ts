/**
 * What every feed cache shares: the domain's FeedCache port, and LocalPages (this process's pages).
 *
 * Implementations: memory-feed-cache.ts (one process, or PROCESSES=N through the primary) and
 * redis-feed-cache.ts (shared by every process); where generations come from: generations.ts.
 */
import { LRUCache } from 'lru-cache';
import type { CachedJson, CacheRead, FeedCache } from '../../domain/feeds/feed.service.ts';
import type { Generations } from './generations.ts';

export type { CachedJson, CacheRead, FeedCache };

/** How many pages a process keeps in memory by default. */
export const DEFAULT_MAX_ENTRIES = 2000;

/** No upload to recount (shared: a cached read allocates no empty list). */
const NONE: readonly string[] = Object.freeze([]);

/** A page as kept: with the vote sequence number it is current as of (its `ids`' counts). */
export interface KeptPage {
  page: CachedJson;
  seq: number;
}

/**
 * The pages this process holds, each under its generations (`token`): a move to another global generation
 * drops them all, a page of a scope bumped since is no longer found (its key names the old generation), and a
 * page built under older generations is never kept.
 */
export class LocalPages {
  readonly #generations: Generations;
  readonly #lru: LRUCache<string, KeptPage>;

  constructor(generations: Generations, maxEntries = DEFAULT_MAX_ENTRIES) {
    this.#generations = generations;
    this.#lru = new LRUCache<string, KeptPage>({ max: maxEntries, ttlAutopurge: false });
    generations.onMove(() => this.#lru.clear());
  }

  get(token: string, key: string): KeptPage | null {
    return this.#lru.get(this.#name(token, key)) ?? null;
  }

  keep(token: string, scopes: readonly string[], key: string, kept: KeptPage, ttlMs: number): void {
    if (token === this.#generations.token(scopes)) this.#lru.set(this.#name(token, key), kept, { ttl: ttlMs });
  }

  /**
   * `token:key`, the same string again while the token stays: a string made per read would be hashed anew by every
   * lookup (`key` is one the feed service keeps per query). As many names as pages, at most, then started over.
   */
  readonly #names = new Map<string, { token: string; name: string }>();
  #name(token: string, key: string): string {
    let n = this.#names.get(key);
    if (n?.token !== token) {
      if (!n && this.#names.size >= this.#lru.max) this.#names.clear();
      this.#names.set(key, (n = { token, name: `${token}:${key}` }));
    }
    return n.name;
  }

  /** The read of a page found (or not) under `token`, read at vote sequence number `seq`. */
  found(kept: KeptPage | null, token: string, seq: number): CacheRead {
    const ids = kept?.page.ids;
    return {
      hit: kept?.page ?? null,
      generation: token,
      seq,
      recount: kept && ids ? this.#generations.recount(ids, kept.seq) : NONE,
    };
  }
}
