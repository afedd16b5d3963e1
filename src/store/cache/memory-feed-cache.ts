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
  return {
    async read(key, scopes = []) {
      // Every scope's generation is known here (one that was never bumped is 0).
      const token = generations.token(scopes) ?? 'none';
      return pages.found(pages.get(token, key), token, generations.seq);
    },
    write: async (key, token, page, ttlSeconds, at = {}) =>
      pages.keep(token, at.scopes ?? [], key, { page, seq: at.seq ?? 0 }, ttlSeconds * 1000),
    invalidate: () => generations.bump(),
    voted: (change) => generations.bumpScopes(change),
    close: () => generations.close(),
  };
}
