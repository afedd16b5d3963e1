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
    read: async (key) => ({ hit: pages.get(key), generation: generations.current }),
    write: async (key, g, value, ttlSeconds) => pages.keep(key, g, value, ttlSeconds * 1000),
    invalidate: () => generations.bump(),
    close: () => generations.close(),
  };
}
