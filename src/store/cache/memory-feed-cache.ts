/**
 * The feed cache without Redis: pages in this process's memory only.
 *
 * Generations come from this process alone (one process) or from the cluster primary (PROCESSES=N), see
 * generations.ts.
 */
import { DEFAULT_MAX_ENTRIES, LocalPages, type FeedCache } from './feed-cache.ts';
import { inProcessGenerations, type Generations } from './generations.ts';

export function memoryFeedCache(
  generations: Generations = inProcessGenerations(),
  maxEntries = DEFAULT_MAX_ENTRIES,
): FeedCache & { close(): void } {
  const pages = new LocalPages(generations, maxEntries);
  // Synchronous: the gateway answers a cached read with no async frame (FeedService.cachedPage).
  const peek = (key: string, scopes: readonly string[] = []) => {
    // Every scope's generation is known here (one that was never bumped is 0).
    const token = generations.token(scopes) ?? 'none';
    return pages.found(pages.get(token, key), token, generations.seq);
  };
  return {
    peek,
    read: async (key, scopes) => peek(key, scopes),
    write: async (key, token, page, ttlSeconds, at = {}) =>
      pages.keep(token, at.scopes ?? [], key, { page, seq: at.seq ?? 0 }, ttlSeconds * 1000),
    invalidate: () => generations.bump(),
    voted: (change) => generations.bumpScopes(change),
    close: () => generations.close(),
  };
}
