/**
 * Rate limiting through rate-limiter-flexible: in process memory by default; in Redis (shared by every
 * process) when configured, with an in-memory insurance limiter that takes over while Redis is down.
 */
import type { Redis } from 'ioredis';
import { RateLimiterCluster, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Rate } from '../domain/durations.ts';
import type { LimitDecision, Limiter } from '../domain/rate-limit.ts';
import { batchedCounter, exactMargin, MAX_UNCOUNTED, type Store } from './batched-counter.ts';

export type { LimitDecision, Limiter };
export { exactMargin, maxUncounted } from './batched-counter.ts';

/**
 * `redis`: counts shared through Redis (with an in-memory insurance limiter while it is down).
 * `cluster`: a gateway process of PROCESSES=N without Redis: counts kept by the primary (node:cluster IPC;
 * this process's own count answers if the primary does not within a second). Neither: this process alone.
 */
export function createLimiter(opts: {
  name: string;
  rate: Rate;
  redis: Redis | null;
  cluster?: boolean;
  prefix: string;
  onReject?: (name: string) => void;
}): Limiter {
  const base = { points: opts.rate.points, duration: opts.rate.seconds, keyPrefix: `${opts.prefix}rl:${opts.name}` };
  const memory = new RateLimiterMemory(base);
  const limit = opts.rate.points;
  const decide = (remaining: number, msBeforeNext: number, allowed: boolean): LimitDecision => {
    if (!allowed) opts.onReject?.(opts.name);
    return {
      allowed,
      limit,
      remaining: Math.max(0, remaining),
      resetSeconds: Math.max(1, Math.ceil(msBeforeNext / 1000)),
    };
  };
  // One process counts exactly in memory (no margin needed); processes sharing a store keep a margin.
  const consume = opts.redis
    ? batchedCounter(
        new RateLimiterRedis({
          ...base,
          storeClient: opts.redis,
          rejectIfRedisNotReady: true,
          insuranceLimiter: memory,
        }),
        limit,
        exactMargin(limit),
        decide,
      )
    : opts.cluster
      ? batchedCounter(
          insured(new RateLimiterCluster({ ...base, timeoutMs: 1000 }), memory),
          limit,
          exactMargin(limit),
          decide,
        )
      : batchedCounter(memory, limit, 0, decide, MAX_UNCOUNTED);
  return { name: opts.name, rate: opts.rate, consume };
}

/** The store, or `fallback` when the store fails (rather than refuses). */
function insured(store: Store, fallback: Store): Store {
  return {
    consume: (key, points) =>
      store.consume(key, points).catch((e: unknown) =>
        e instanceof RateLimiterRes
          ? // rate-limiter-flexible refuses by rejecting with a RateLimiterRes (not an Error): passed on as such.
            // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
            Promise.reject(e)
          : fallback.consume(key, points),
      ),
  };
}
