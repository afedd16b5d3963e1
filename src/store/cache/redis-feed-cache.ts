/**
 * The feed cache shared by every process, on any machine, through Redis.
 *
 * Pages are stored as `<prefix>feed:<generation>:<key>` (`<etag>\n<json>`), under the generations Redis pushes
 * (generations.ts, RedisGenerations).
 */
import type { Redis } from 'ioredis';
import { DEFAULT_MAX_ENTRIES, LocalPages, type CachedJson, type FeedCache } from './feed-cache.ts';
import type { RedisGenerations } from './generations.ts';

export interface RedisFeedCache extends FeedCache {
  /** Whether reads trust the generation held in memory (pushed by Redis) rather than asking for it. */
  readonly pushed: boolean;
  close(): void;
}

/** A read that bypasses the cache: Redis is unreachable or a bump is owed; the page is built, never stale. */
const bypass = () => ({ hit: null, generation: 'none' });

/**
 * Pages of the current generation are kept in process memory too, so a hit costs no page transfer; a page not
 * held here comes from Redis (one round trip) or is built. When Redis is unreachable the cache is bypassed
 * (reads miss, writes are dropped): pages are built from the database, never served stale.
 */
export function redisFeedCache(
  redis: Redis,
  prefix: string,
  generations: RedisGenerations,
  opts: { maxEntries?: number } = {},
): RedisFeedCache {
  const pageKey = (g: string, key: string) => `${prefix}feed:${g}:${key}`;
  const pages = new LocalPages(generations, opts.maxEntries ?? DEFAULT_MAX_ENTRIES);
  return {
    get pushed() {
      return generations.pushed;
    },
    async read(key) {
      if (!(await generations.sync())) return bypass();
      const g = generations.current;
      try {
        let hit = pages.get(key);
        if (!hit) {
          const stored = await fetchPage(redis, pageKey(g, key));
          // A newer generation may have been seen meanwhile: never kept under it.
          if (stored) pages.keep(key, g, (hit = stored.page), stored.ttlMs);
        }
        return { hit, generation: g };
      } catch {
        return bypass();
      }
    },
    async write(key, g, value, ttlSeconds) {
      if (g === 'none' || g === '') return;
      pages.keep(key, g, value, ttlSeconds * 1000);
      const stored = Buffer.concat([Buffer.from(`${value.etag}\n`), value.body]);
      await redis.set(pageKey(g, key), stored, 'EX', ttlSeconds).catch(() => {});
    },
    invalidate: () => generations.bump(),
    close: () => generations.close(),
  };
}

/** A page from Redis and its remaining lifetime, which the copy kept here must not outlive (`hot` ages). */
async function fetchPage(redis: Redis, key: string): Promise<{ page: CachedJson; ttlMs: number } | null> {
  const replies = await redis.pipeline().getBuffer(key).pttl(key).exec();
  const [[, raw], [, ttl]] = (replies ?? []) as [[unknown, Buffer | null], [unknown, number]];
  return raw && ttl > 0 ? { page: decode(raw), ttlMs: ttl } : null;
}

/** Stored in Redis as `<etag>\n<json>`. */
function decode(raw: Buffer): CachedJson {
  const nl = raw.indexOf(0x0a);
  return { etag: raw.subarray(0, nl).toString(), body: raw.subarray(nl + 1) };
}
