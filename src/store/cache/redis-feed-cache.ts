/**
 * The feed cache shared by every process, on any machine, through Redis.
 *
 * Pages are stored as `<prefix>feedpage:<generations>:<key>` (`<etag>\n<seq>\n<ids, comma-separated>\n<json>`),
 * under the generations Redis pushes (generations.ts, RedisGenerations).
 */
import type { Redis } from 'ioredis';
import { DEFAULT_MAX_ENTRIES, LocalPages, type CacheRead, type FeedCache, type KeptPage } from './feed-cache.ts';
import type { RedisGenerations } from './generations.ts';

export interface RedisFeedCache extends FeedCache {
  /** Whether reads trust the generations held in memory (pushed by Redis) rather than asking for them. */
  readonly pushed: boolean;
  close(): void;
}

/** A read that bypasses the cache: Redis is unreachable or a bump is owed; the page is built, never stale. */
const bypass = (): CacheRead => ({ hit: null, generation: 'none', seq: 0, recount: [] });

/**
 * Pages of the current generations are kept in process memory too, so a hit costs no page transfer; a page not
 * held here comes from Redis (one round trip) or is built. When Redis is unreachable the cache is bypassed
 * (reads miss, writes are dropped): pages are built from the database, never served stale.
 */
export function redisFeedCache(
  redis: Redis,
  prefix: string,
  generations: RedisGenerations,
  opts: { maxEntries?: number } = {},
): RedisFeedCache {
  const pageKey = (token: string, key: string) => `${prefix}feedpage:${token}:${key}`;
  const pages = new LocalPages(generations, opts.maxEntries ?? DEFAULT_MAX_ENTRIES);
  return {
    get pushed() {
      return generations.pushed;
    },
    async read(key, scopes = []) {
      if (!(await generations.sync(scopes))) return bypass();
      const token = generations.token(scopes);
      if (token === null) return bypass();
      const seq = generations.seq;
      try {
        let kept = pages.get(token, key);
        if (!kept) {
          const stored = await fetchPage(redis, pageKey(token, key));
          // Newer generations may have been seen meanwhile: never kept under them.
          if (stored) pages.keep(token, scopes, key, (kept = stored.kept), stored.ttlMs);
        }
        return pages.found(kept, token, seq);
      } catch {
        return bypass();
      }
    },
    async write(key, token, page, ttlSeconds, at = {}) {
      if (token === 'none' || token === '') return;
      const seq = at.seq ?? 0;
      pages.keep(token, at.scopes ?? [], key, { page, seq }, ttlSeconds * 1000);
      const head = `${page.etag}\n${seq}\n${(page.ids ?? []).join(',')}${page.ids ? '' : '-'}\n`;
      const stored = Buffer.concat([Buffer.from(head), page.body]);
      await redis.set(pageKey(token, key), stored, 'EX', ttlSeconds).catch(() => {});
    },
    invalidate: () => generations.bump(),
    voted: (change) => generations.bumpScopes(change),
    close: () => generations.close(),
  };
}

/** A page from Redis and its remaining lifetime, which the copy kept here must not outlive (`hot` ages). */
async function fetchPage(redis: Redis, key: string): Promise<{ kept: KeptPage; ttlMs: number } | null> {
  const replies = await redis.pipeline().getBuffer(key).pttl(key).exec();
  const [[, raw], [, ttl]] = (replies ?? []) as [[unknown, Buffer | null], [unknown, number]];
  return raw && ttl > 0 ? { kept: decode(raw), ttlMs: ttl } : null;
}

/** Stored in Redis as `<etag>\n<seq>\n<ids>\n<json>` (ids `-`: a page without them, as a ranked one). */
function decode(raw: Buffer): KeptPage {
  const a = raw.indexOf(0x0a);
  const b = raw.indexOf(0x0a, a + 1);
  const c = raw.indexOf(0x0a, b + 1);
  const ids = raw.subarray(b + 1, c).toString();
  return {
    page: {
      etag: raw.subarray(0, a).toString(),
      body: raw.subarray(c + 1),
      ids: ids === '-' ? undefined : ids === '' ? [] : ids.split(','),
    },
    seq: Number(raw.subarray(a + 1, b).toString()),
  };
}
