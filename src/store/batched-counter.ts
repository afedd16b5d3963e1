/**
 * Why this exists: rate-limiter-flexible asks its store (memory, the cluster primary, Redis) for every point,
 * and answers with a promise; on every request that is a microtask chain and, with Redis, a round trip, for
 * limits that are nowhere near spent. This counter sits in front of the store and keeps the library's
 * answers exact where they matter: far from a limit a key's points are admitted here and sent in batches
 * (one INCRBY at least every 25 ms, or at once when half of `maxUncounted` is waiting); near it (fewer than
 * `exactMargin(points)` left) every request is counted by the store before it is answered, as without
 * batching. docs/scaling.md describes the guarantees.
 */
import { RateLimiterRes } from 'rate-limiter-flexible';
import type { LimitDecision } from '../domain/rate-limit.ts';

/** Where a limit's counts live: what the counter asks near the limit, and sends its batches to. */
export interface Store {
  consume(key: string, points: number): Promise<RateLimiterRes>;
}

/** Shapes a decision from what the counter or the store knows (and counts refusals). */
export type Decide = (remaining: number, msBeforeNext: number, allowed: boolean) => LimitDecision;

/** Below this many points left in a window, every request of a key is counted in Redis before it is answered. */
export const exactMargin = (points: number): number => Math.max(64, Math.ceil(points / 4));
/** The most points of a key admitted before the store has counted them (the whole count in one process). */
export const MAX_UNCOUNTED = 1024;
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
export function batchedCounter(
  shared: Store,
  points: number,
  margin: number,
  decide: Decide,
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
