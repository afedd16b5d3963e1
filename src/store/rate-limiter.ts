/**
 * Rate limiting through rate-limiter-flexible: in process memory by default; in Redis (shared by every
 * process) when configured, with an in-memory insurance limiter that takes over while Redis is down.
 */
import type { Redis } from 'ioredis';
import { RateLimiterCluster, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Rate } from '../domain/durations.ts';
import type { LimitDecision, Limiter } from '../domain/rate-limit.ts';

export type { LimitDecision, Limiter };

/** Where a limit's counts live: what `counter` asks near the limit, and sends its batches to. */
interface Store {
  consume(key: string, points: number): Promise<RateLimiterRes>;
}

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
    ? counter(
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
      ? counter(
          insured(new RateLimiterCluster({ ...base, timeoutMs: 1000 }), memory),
          limit,
          exactMargin(limit),
          decide,
        )
      : counter(memory, limit, 0, decide, MAX_UNCOUNTED);
  return { name: opts.name, rate: opts.rate, consume };
}

/** The store, or `fallback` when the store fails (rather than refuses). */
function insured(store: Store, fallback: Store): Store {
  return {
    consume: (key, points) =>
      store.consume(key, points).catch((e: unknown) =>
        e instanceof RateLimiterRes
          ? // rate-limiter-flexible rejects with a RateLimiterRes (not an Error) to refuse: passed on as its callers expect.
            // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
            Promise.reject(e)
          : fallback.consume(key, points),
      ),
  };
}

/** Below this many points left in a window, every request of a key is counted in Redis before it is answered. */
export const exactMargin = (points: number): number => Math.max(64, Math.ceil(points / 4));
const MAX_UNCOUNTED = 1024;
/**
 * How many of a key's requests one process may admit before Redis has counted them (unsent or
 * unanswered; past it, requests wait for Redis): an eighth of the margin (at most 1024), so eight
 * processes together cannot overrun a limit. Half of it goes to Redis at once; the rest at least every 25 ms.
 */
export const maxUncounted = (margin: number): number => Math.min(MAX_UNCOUNTED, Math.max(1, Math.floor(margin / 8)));
const FLUSH_MS = 25;

interface KeyState {
  /** The total the store last reported for this window, which includes every point sent before that answer. */
  known: number;
  /** Points sent and not yet answered. */
  sending: number;
  /** Points admitted here and not yet sent. */
  unsent: number;
  /** When the window ends (ms since epoch); Infinity until the store first answers. */
  resetAt: number;
}

/**
 * A limit whose store (rate-limiter-flexible's, in memory or in Redis) is asked only near the limit, so
 * most decisions need no promise and, with Redis, no round trip. Far from the limit, a key's requests are
 * admitted here and their count sent to Redis in batches (one INCRBY at least every 25 ms, or at once when
 * half of `maxUncounted` is waiting); once fewer than `exactMargin(points)` points remain in the window
 * (max(64, 25 %)), every request is counted in Redis before it is answered, exactly as without batching
 * (in memory, where this process's count is the whole count, the margin is 0). A key over its limit is
 * refused here until its window ends (the count only grows within a window). Limits of 64 or fewer points
 * (the default auth, upload and vote limits) are therefore always exact; a larger one can be overrun only
 * if more than eight processes each hold their most uncounted requests of one key at the same moment
 * (600/15m: 18 each against a margin of 150; 1 000 000/1h: 1024 each against 250 000).
 */
function counter(
  shared: Store,
  points: number,
  margin: number,
  decide: (remaining: number, msBeforeNext: number, allowed: boolean) => LimitDecision,
  uncounted = maxUncounted(margin),
): (key: string) => LimitDecision | Promise<LimitDecision> {
  const sendAt = uncounted / 2;
  const keys = new Map<string, KeyState>();
  const dirty = new Set<string>();
  let timer: NodeJS.Timeout | null = null;
  let sinceSweep = 0;

  /** Sends `n` points of `key` to the store; resolves with the window total that includes them. */
  const send = (key: string, s: KeyState, n: number): Promise<RateLimiterRes> => {
    s.sending += n;
    const answered = (res: RateLimiterRes) => {
      s.sending -= n;
      // The store answers one connection's commands in order: this total includes all of ours sent so far.
      s.known = res.consumedPoints;
      s.resetAt = Date.now() + res.msBeforeNext;
      return res;
    };
    return shared.consume(key, n).then(answered, (e: unknown) => {
      if (e instanceof RateLimiterRes) return answered(e);
      s.sending -= n;
      throw e;
    });
  };

  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    const now = Date.now();
    for (const key of dirty) {
      const s = keys.get(key);
      if (!s || s.unsent === 0) continue;
      const n = s.unsent;
      s.unsent = 0;
      // Admitted in a window that has ended: they count for nothing now.
      if (now < s.resetAt) void send(key, s, n).catch(() => {});
    }
    dirty.clear();
  };

  const sweep = (now: number) => {
    for (const [key, s] of keys) if (now >= s.resetAt && s.sending === 0 && s.unsent === 0) keys.delete(key);
  };

  return (key) => {
    const now = Date.now();
    let s = keys.get(key);
    if (s && now >= s.resetAt && s.sending === 0) {
      keys.delete(key);
      s = undefined;
    }
    if (s && now < s.resetAt && s.resetAt !== Infinity) {
      const used = s.known + s.sending + s.unsent;
      const msBeforeNext = s.resetAt - now;
      if (used >= points) return decide(0, msBeforeNext, false);
      if (used + 1 <= points - margin && s.unsent + s.sending < uncounted) {
        s.unsent++;
        dirty.add(key);
        if (s.unsent >= sendAt) flush();
        else timer ??= setTimeout(flush, FLUSH_MS).unref();
        return decide(points - used - 1, msBeforeNext, true);
      }
    }
    if (!s) {
      s = { known: 0, sending: 0, unsent: 0, resetAt: Infinity };
      keys.set(key, s);
      if (++sinceSweep >= 1024) {
        sinceSweep = 0;
        sweep(now);
      }
    }
    // Exact: this request and any still unsent go to Redis together; it is the last of them (unsent ones
    // of a window that has ended count for nothing).
    const n = (now < s.resetAt ? s.unsent : 0) + 1;
    s.unsent = 0;
    return send(key, s, n).then((res) => decide(res.remainingPoints, res.msBeforeNext, res.consumedPoints <= points));
  };
}
