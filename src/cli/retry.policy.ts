/**
 * When to retry a request and how long to wait. 429 and 503 carry `Retry-After` (whole seconds, or an HTTP
 * date): that wait is honoured exactly and does not use up a retry, unless it is longer than `maxWaitMs`, in
 * which case the run stops at once (WaitTooLongError) instead of sleeping through it. Without it (network
 * errors, 502/504), p-retry's exponential backoff with jitter, `retries` times.
 */

export interface RetryPolicy {
  /** Retries after the first attempt, for failures without a Retry-After. */
  retries: number;
  /** The longest Retry-After the client waits out; a longer one stops the run. */
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

/** `59:58`, `1:02:05`: a wait as people read it. */
export function formatWait(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (h) return `${h} h ${m} min`;
  if (m) return `${m} min ${sec} s`;
  return `${sec} s`;
}

/** The server asked for a wait longer than the client may wait (`--max-wait`): the run stops instead. */
export class WaitTooLongError extends Error {
  override name = 'WaitTooLongError';
  readonly waitMs: number;
  readonly maxWaitMs: number;
  /** `429 rate_limited: upload limit of 20 per 1h reached` */
  readonly reason: string;
  /** When the server will accept the request again. */
  readonly until: Date;
  constructor(waitMs: number, maxWaitMs: number, reason: string, now = Date.now()) {
    super(
      `the server asks to wait ${formatWait(waitMs)} (${reason}), ` +
        `longer than --max-wait ${Math.round(maxWaitMs / 1000)} s; ` +
        `try again after ${new Date(now + waitMs).toISOString().slice(0, 19).replace('T', ' ')} UTC`,
    );
    this.waitMs = waitMs;
    this.maxWaitMs = maxWaitMs;
    this.reason = reason;
    this.until = new Date(now + waitMs);
  }
}

/** The run was interrupted (SIGINT): requests in flight and waits are abandoned. */
export class InterruptedError extends Error {
  override name = 'InterruptedError';
  constructor() {
    super('interrupted');
  }
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
