/**
 * The Redis connection, when REDIS_URL is set. Commands fail fast while Redis is unreachable
 * (no offline queue, short timeouts) so that callers fall back instead of hanging; ioredis keeps
 * reconnecting in the background, so recovery needs no restart. Loaded only when REDIS_URL is set (ioredis is
 * ~0.3 s of CPU to load); what needs no connection of its own is in redis-checks.ts.
 */
import { Redis } from 'ioredis';
import type { Logger } from 'pino';

export function connectRedis(url: string, log: Logger): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 1000,
    connectTimeout: 2000,
    lazyConnect: false,
    // Back off up to 2 s between reconnects, forever.
    retryStrategy: (times) => Math.min(times * 100, 2000),
  });
  let down = false;
  redis.on('error', (err) => {
    if (!down) log.warn({ err: err.message }, 'redis unavailable; using in-process fallbacks until it returns');
    down = true;
  });
  redis.on('ready', () => {
    if (down) log.info('redis is back');
    down = false;
  });
  return redis;
}
