/**
 * The Redis connection, when REDIS_URL is set. Commands fail fast while Redis is unreachable
 * (no offline queue, short timeouts) so that callers fall back instead of hanging; ioredis keeps
 * reconnecting in the background, so recovery needs no restart.
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

/**
 * True when a command failed because Redis is not reachable now: the connection is down or closed (no offline
 * queue: the command is refused at once), or it did not answer within the command timeout.
 */
export function isRedisUnavailable(e: unknown): boolean {
  const err = e as { name?: unknown; message?: unknown } | null;
  return (
    err?.name === 'MaxRetriesPerRequestError' ||
    (typeof err?.message === 'string' &&
      /^(Connection is closed\.|Stream isn't writeable|Command timed out|Reached the max retries)/.test(err.message))
  );
}

/** /readyz: Redis answers (without it the limits and the feed cache fall back to in-process ones). */
export async function redisCheck(redis: Redis): Promise<void> {
  await redis.ping();
}

/** Waits for the first connection (start-up), without failing start-up if Redis is down. */
export async function redisReady(redis: Redis, timeoutMs = 2000): Promise<boolean> {
  if (redis.status === 'ready') return true;
  return new Promise((resolve) => {
    const t = setTimeout(() => done(false), timeoutMs);
    const done = (ok: boolean) => {
      clearTimeout(t);
      redis.off('ready', onReady);
      resolve(ok);
    };
    const onReady = () => done(true);
    redis.on('ready', onReady);
  });
}
