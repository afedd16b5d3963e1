/**
 * What start-up and /readyz ask of a Redis connection (redis.ts makes it), without loading ioredis itself.
 */
import type { Redis } from 'ioredis';

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
