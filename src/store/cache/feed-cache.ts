/**
 * What every feed cache shares: the domain's FeedCache port, and LocalPages (this process's pages).
 *
 * Implementations: memory-feed-cache.ts (one process, or PROCESSES=N through the primary) and
 * redis-feed-cache.ts (shared by every process); where generations come from: generations.ts.
 */
import { LRUCache } from 'lru-cache';
import type { CachedJson, FeedCache } from '../../domain/feeds/feed.service.ts';
import type { Generations } from './generations.ts';

export type { CachedJson, FeedCache };

/** How many pages a process keeps in memory by default. */
export const DEFAULT_MAX_ENTRIES = 2000;

/**
 * The pages this process holds, all of the current generation: a move to another generation drops them,
 * and a page built under an older one is never kept.
 */
export class LocalPages {
  readonly #generations: Generations;
  readonly #lru: LRUCache<string, CachedJson>;

  constructor(generations: Generations, maxEntries = DEFAULT_MAX_ENTRIES) {
    this.#generations = generations;
    this.#lru = new LRUCache<string, CachedJson>({ max: maxEntries, ttlAutopurge: false });
    generations.onMove(() => this.#lru.clear());
  }

  get(key: string): CachedJson | null {
    return this.#lru.get(key) ?? null;
  }

  keep(key: string, generation: string, value: CachedJson, ttlMs: number): void {
    if (generation === this.#generations.current) this.#lru.set(key, value, { ttl: ttlMs });
  }
}
