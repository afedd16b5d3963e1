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
 * Redis-backed: the generation is read from Redis on every request (one small GET), so a write through any
 * process is seen by the next read everywhere. Pages of the current generation are kept in process memory
 * too, so a hit costs that one round trip and no page transfer; a page not held here comes from Redis (a
 * second round trip) or is built. When Redis is unreachable the cache is bypassed (reads miss, writes are
 * dropped): pages are built from the database, never served stale.
 */
export function redisFeedCache(redis: Redis, prefix: string, maxEntries = 2000): FeedCache {
  const genKey = `${prefix}feed:gen`;
  const pageKey = (g: string, key: string) => `${prefix}feed:${g}:${key}`;
  const local = new LRUCache<string, CachedJson>({ max: maxEntries, ttlAutopurge: false });
  let localGeneration = '';
  // Writes made while Redis was unreachable could not invalidate: start a new generation when it returns.
  redis.on('ready', () => void redis.incr(genKey).catch(() => {}));
  return {
    async read(key) {
      try {
        const g = (await redis.get(genKey)) ?? '0';
        if (g !== localGeneration) {
          local.clear();
          localGeneration = g;
        }
        let hit = local.get(key) ?? null;
        if (!hit) {
          // The page and its remaining lifetime, which the copy kept here must not outlive (`hot` ages).
          const [[, raw], [, ttl]] = ((await redis.pipeline().getBuffer(pageKey(g, key)).pttl(pageKey(g, key)).exec()) ?? []) as [[unknown, Buffer | null], [unknown, number]];
          if (raw && ttl > 0) {
            hit = decode(raw);
            // A newer generation may have been seen meanwhile: never keep an older page under it.
            if (g === localGeneration) local.set(key, hit, { ttl });
          }
        }
        return { hit, generation: g };
      } catch {
        return { hit: null, generation: 'none' };
      }
    },
    async write(key, g, value, ttlSeconds) {
      if (g === 'none') return;
      await redis.set(pageKey(g, key), Buffer.concat([Buffer.from(`${value.etag}\n`), value.body]), 'EX', ttlSeconds).catch(() => {});
      if (g === localGeneration) local.set(key, value, { ttl: ttlSeconds * 1000 });
    },
    async invalidate() {
      await redis.incr(genKey).catch(() => {});
    },
  };
}

/** Stored in Redis as `<etag>\n<json>`. */
function decode(raw: Buffer): CachedJson {
  const nl = raw.indexOf(0x0a);
  return { etag: raw.subarray(0, nl).toString(), body: raw.subarray(nl + 1) };
}
