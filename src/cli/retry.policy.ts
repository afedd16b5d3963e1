/**
 * When to retry a request and how long to wait. 429 and 503 carry `Retry-After` (whole seconds, or an
 * HTTP date); it is honoured up to a cap, plus a little jitter so many clients do not return in lockstep.
 * Without it (network errors, 502/504), exponential backoff with jitter.
 */

export interface RetryPolicy {
  /** Retries after the first attempt. */
  retries: number;
  /** No single wait is longer than this, whatever Retry-After says. */
  maxWaitMs: number;
  /** First backoff step when the server gave no Retry-After. */
  baseDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 8, maxWaitMs: 300_000, baseDelayMs: 500 };

/** Statuses worth another attempt: limits, a busy or restarting server, a proxy that lost its upstream. */
export const RETRYABLE_STATUS = new Set([429, 502, 503, 504]);

/** Milliseconds a `Retry-After` value asks for, or null when it is absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/**
 * The wait before retry number `attempt` (1-based). With a Retry-After, never earlier than it asks (capped),
 * plus up to 10 % (at most 1 s) of jitter; otherwise between half and all of base × 2^(attempt-1), capped.
 */
export function retryDelay(attempt: number, retryAfterMs: number | null, policy: RetryPolicy, random: () => number = Math.random): number {
  if (retryAfterMs !== null) {
    const wait = Math.min(retryAfterMs, policy.maxWaitMs);
    return Math.round(wait + random() * Math.min(1000, wait * 0.1 + 100));
  }
  const ceiling = Math.min(policy.maxWaitMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** Errors of the connection itself (refused, reset, timed out, DNS): the request may not have arrived. */
export function isNetworkError(err: unknown): boolean {
  const e = err as { name?: string; cause?: { code?: string } } | null;
  if (!e) return false;
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return true;
  // fetch() reports every connection failure as a TypeError with the reason in `cause`.
  return e.name === 'TypeError' && e.cause !== undefined;
}

export const describeNetworkError = (err: unknown): string => {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError') return 'timed out';
  return e.cause?.code ?? e.cause?.message ?? e.message ?? String(err);
};
