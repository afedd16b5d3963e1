/**
 * The feed cache: in process memory by default, in Redis (shared by every process) when configured.
 * Invalidation bumps a generation number that is part of every key, so one write makes every cached
 * page stale everywhere at once; old generations simply expire.
 */
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import type { CachedJson, FeedCache } from '../../domain/feeds/feed.service.ts';

export function memoryFeedCache(maxEntries = 2000): FeedCache {
  let generation = 0;
  const lru = new LRUCache<string, CachedJson>({ max: maxEntries, ttlAutopurge: false });
  return {
    async read(key) {
      const g = String(generation);
      return { hit: lru.get(`${g}:${key}`) ?? null, generation: g };
    },
    async write(key, g, value, ttlSeconds) {
      if (g === String(generation)) lru.set(`${g}:${key}`, value, { ttl: ttlSeconds * 1000 });
    },
    async invalidate() {
      generation++;
      lru.clear();
    },
  };
}

/**
 * Redis-backed: one round trip per read (the generation and the page come from one Lua call) and per write.
 * When Redis is unreachable the cache is bypassed (reads miss, writes are dropped): pages are built from the
 * database, never served stale.
 */
export function redisFeedCache(redis: Redis, prefix: string): FeedCache {
  const genKey = `${prefix}feed:gen`;
  redis.defineCommand('pvFeedRead', {
    numberOfKeys: 1,
    lua: `local g = redis.call('GET', KEYS[1]) or '0'
          return {g, redis.call('GET', ARGV[1] .. g .. ':' .. ARGV[2])}`,
  });
  const pageKey = (g: string, key: string) => `${prefix}feed:${g}:${key}`;
  // Writes made while Redis was unreachable could not invalidate: start a new generation when it returns.
  redis.on('ready', () => void redis.incr(genKey).catch(() => {}));
  return {
    async read(key) {
      try {
        const [g, raw] = (await (redis as unknown as { pvFeedRead(k: string, p: string, key: string): Promise<[string, string | null]> }).pvFeedRead(
          genKey,
          `${prefix}feed:`,
          key,
        )) ?? ['0', null];
        return { hit: raw ? decode(raw) : null, generation: g };
      } catch {
        return { hit: null, generation: 'none' };
      }
    },
    async write(key, g, value, ttlSeconds) {
      if (g === 'none') return;
      await redis.set(pageKey(g, key), `${value.etag}\n${value.body.toString()}`, 'EX', ttlSeconds).catch(() => {});
    },
    async invalidate() {
      await redis.incr(genKey).catch(() => {});
    },
  };
}

/** Stored in Redis as `<etag>\n<json>`. */
function decode(raw: string): CachedJson {
  const nl = raw.indexOf('\n');
  return { etag: raw.slice(0, nl), body: Buffer.from(raw.slice(nl + 1)) };
}
