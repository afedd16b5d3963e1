/**
 * Rate limiting through rate-limiter-flexible: in process memory by default; in Redis (shared by every
 * process) when configured, with an in-memory insurance limiter that takes over while Redis is down.
 */
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Rate } from '../domain/durations.ts';

export interface LimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets (≥ 1). */
  resetSeconds: number;
}

export interface Limiter {
  readonly name: string;
  readonly rate: Rate;
  consume(key: string): Promise<LimitDecision>;
}

export function createLimiter(opts: { name: string; rate: Rate; redis: Redis | null; prefix: string; onReject?: (name: string) => void }): Limiter {
  const base = { points: opts.rate.points, duration: opts.rate.seconds, keyPrefix: `${opts.prefix}rl:${opts.name}` };
  const memory = new RateLimiterMemory(base);
  const limiter: RateLimiterAbstract = opts.redis
    ? new RateLimiterRedis({ ...base, storeClient: opts.redis, rejectIfRedisNotReady: true, insuranceLimiter: memory })
    : memory;
  const decide = (res: RateLimiterRes, allowed: boolean): LimitDecision => ({
    allowed,
    limit: opts.rate.points,
    remaining: Math.max(0, res.remainingPoints),
    resetSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
  });
  return {
    name: opts.name,
    rate: opts.rate,
    consume(key) {
      return limiter.consume(key).then(
        (res) => decide(res, true),
        (e: unknown) => {
          if (!(e instanceof RateLimiterRes)) throw e;
          opts.onReject?.(opts.name);
          return decide(e, false);
        },
      );
    },
  };
}
