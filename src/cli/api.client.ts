/**
 * The CLI's HTTP client: JSON or multipart in, JSON out, retried with p-retry. A 429 or 503 pauses every
 * request of the run for exactly the `Retry-After` it carries (they share one budget on the server), and does
 * not use up a retry; a Retry-After longer than the policy's `maxWaitMs` stops the client at once
 * (WaitTooLongError). `halt()` abandons every request in flight and every wait, e.g. on SIGINT.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pRetry, { AbortError } from 'p-retry';
import {
  DEFAULT_RETRY,
  RETRYABLE_STATUS,
  WaitTooLongError,
  describeNetworkError,
  isNetworkError,
  parseRetryAfter,
  type RetryPolicy,
} from './retry.policy.ts';

export interface ApiResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON, or the text when the response is not JSON. */
  body: any;
}

export interface RetryNotice {
  /** Retries used so far (a Retry-After wait uses none). */
  attempt: number;
  retries: number;
  waitMs: number;
  /** `429 rate_limited: <the server's message>`, `503 busy: …`, `ECONNREFUSED`… */
  reason: string;
  /** The wait is the server's Retry-After, not a backoff. */
  retryAfter: boolean;
}

export interface RequestOptions {
  json?: unknown;
  /** Built afresh for every attempt (a body stream can be read once). */
  form?: () => FormData | Promise<FormData>;
  /** Raw bytes (a tus PATCH's chunk); its Content-Type goes in `headers`. */
  raw?: Uint8Array;
  headers?: Record<string, string>;
  /** Overrides the client's token (login uses the JWT it just got). */
  token?: string;
  onRetry?: (n: RetryNotice) => void;
  /** Overrides the policy's maxWaitMs for this request (login does not sit through a long limit). */
  maxWaitMs?: number;
  /**
   * Overrides the policy's retries (a Retry-After wait still uses none): a tus PATCH is sent once, and after a
   * failure the caller asks the server's offset (HEAD) rather than sending the same bytes again blindly.
   */
  retries?: number;
}

export interface ApiClientOptions {
  baseUrl: string;
  token?: string | undefined;
  retry?: RetryPolicy;
  /** Per attempt, so a stalled connection is abandoned and retried. */
  timeoutMs?: number;
  fetch?: typeof fetch;
  /** The Retry-After pause (tests record it instead of waiting); must reject when `signal` aborts. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<unknown>;
}

/** The server answered, and not with success: carries the contract's `{error, message}`. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

/** The server could not be reached, after every retry. */
export class NetworkError extends Error {
  override name = 'NetworkError';
}

/** A retryable answer, or a connection failure, inside the p-retry loop. */
class Retryable extends Error {
  readonly reason: string;
  readonly retryAfterMs: number | null;
  readonly response: ApiResponse | null;
  constructor(reason: string, retryAfterMs: number | null, response: ApiResponse | null, cause?: unknown) {
    super(reason, { cause });
    this.reason = reason;
    this.retryAfterMs = retryAfterMs;
    this.response = response;
  }
}

export class ApiClient {
  readonly baseUrl: string;
  readonly #token: string | undefined;
  readonly #retry: RetryPolicy;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;
  readonly #sleep: (ms: number, signal: AbortSignal) => Promise<unknown>;
  readonly #halt = new AbortController();
  #notBefore = 0;

  constructor(opts: ApiClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.#token = opts.token;
    this.#retry = opts.retry ?? DEFAULT_RETRY;
    this.#timeoutMs = opts.timeoutMs ?? 120_000;
    this.#fetch = opts.fetch ?? fetch;
    this.#sleep = opts.sleep ?? ((ms, signal) => sleep(ms, undefined, { signal }));
  }

  /** Abandons every request in flight and every wait: each rejects with `reason`. */
  halt(reason: Error): void {
    if (!this.#halt.signal.aborted) this.#halt.abort(reason);
  }

  get halted(): Error | null {
    return this.#halt.signal.aborted ? (this.#halt.signal.reason as Error) : null;
  }

  /** The policy's retries and first backoff step (the tus sender backs off between failed chunks by it). */
  get retryPolicy(): RetryPolicy {
    return this.#retry;
  }

  /** Waits `ms`, or rejects with the halt reason when the client is halted meanwhile. */
  async wait(ms: number): Promise<void> {
    const signal = this.#halt.signal;
    signal.throwIfAborted();
    try {
      await this.#sleep(ms, signal);
    } catch (e) {
      if (signal.aborted) throw signal.reason;
      throw e;
    }
  }

  /** When every request waits until (a Retry-After in force), or 0. */
  get pausedUntil(): number {
    return this.#notBefore > Date.now() ? this.#notBefore : 0;
  }

  /**
   * Sends with retries; returns the final response, whatever its status. Throws NetworkError when the server
   * never answered, WaitTooLongError when it asked for a longer wait than allowed, the halt reason after halt().
   */
  async request(method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse> {
    const signal = this.#halt.signal;
    const maxWaitMs = opts.maxWaitMs ?? this.#retry.maxWaitMs;
    const retries = opts.retries ?? this.#retry.retries;
    const attempt = async (): Promise<ApiResponse> => {
      const pause = this.#notBefore - Date.now();
      if (pause > 0) await this.#sleep(pause, signal);
      signal.throwIfAborted();
      let res: Response;
      let response: ApiResponse;
      try {
        res = await this.#fetch(this.baseUrl + path, await this.#init(method, opts));
        response = await read(res);
      } catch (err) {
        signal.throwIfAborted();
        if (!isNetworkError(err)) throw new AbortError(err as Error);
        throw new Retryable(describeNetworkError(err), null, null, err);
      }
      if (!RETRYABLE_STATUS.has(res.status)) return response;
      const b = response.body as { error?: string; message?: string } | undefined;
      const reason = `${res.status}${b?.error ? ` ${b.error}` : ''}${b?.message ? `: ${b.message}` : ''}`;
      const retryAfter = parseRetryAfter(res.headers.get('retry-after'));
      if (retryAfter !== null && retryAfter > maxWaitMs)
        throw new AbortError(new WaitTooLongError(retryAfter, maxWaitMs, reason));
      throw new Retryable(reason, retryAfter, response);
    };
    try {
      return await pRetry(attempt, {
        retries,
        minTimeout: this.#retry.baseDelayMs,
        maxTimeout: this.#retry.maxWaitMs,
        factor: 2,
        randomize: true,
        signal,
        // The server said when: wait exactly that (before the next attempt, for every request) and keep the retries.
        shouldConsumeRetry: ({ error }) => !(error instanceof Retryable && error.retryAfterMs),
        onFailedAttempt: ({ error, retriesConsumed, retriesLeft, retryDelay }) => {
          if (!(error instanceof Retryable)) return;
          if (error.retryAfterMs) {
            this.#notBefore = Math.max(this.#notBefore, Date.now() + error.retryAfterMs);
            opts.onRetry?.({
              attempt: retriesConsumed,
              retries,
              waitMs: error.retryAfterMs,
              reason: error.reason,
              retryAfter: true,
            });
          } else if (retriesLeft > 0) {
            opts.onRetry?.({
              attempt: retriesConsumed + 1,
              retries,
              waitMs: retryDelay,
              reason: error.reason,
              retryAfter: false,
            });
          }
        },
      });
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      if (err instanceof Retryable) {
        if (err.response) return err.response;
        throw new NetworkError(`${method} ${this.baseUrl}${path}: ${err.reason}`, { cause: err.cause });
      }
      throw err;
    }
  }

  /** `request`, then the JSON body of a 2xx, or an ApiError with the server's code and message. */
  async call(method: string, path: string, opts: RequestOptions = {}): Promise<any> {
    const r = await this.request(method, path, opts);
    if (r.status >= 200 && r.status < 300) return r.body;
    throw toApiError(r);
  }

  async #init(method: string, opts: RequestOptions): Promise<RequestInit> {
    const headers: Record<string, string> = { accept: 'application/json', ...opts.headers };
    const token = opts.token ?? this.#token;
    if (token) headers.authorization = `Bearer ${token}`;
    let body: RequestInit['body'];
    if (opts.form) body = await opts.form();
    else if (opts.raw) body = opts.raw;
    else if (opts.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(opts.json);
    }
    return {
      method,
      headers,
      body,
      redirect: 'error',
      signal: AbortSignal.any([this.#halt.signal, AbortSignal.timeout(this.#timeoutMs)]),
    };
  }
}

async function read(res: Response): Promise<ApiResponse> {
  const text = await res.text();
  let body: unknown = text;
  if ((res.headers.get('content-type') ?? '').includes('json') && text) {
    try {
      body = JSON.parse(text);
    } catch {
      // keep the text: the error message will show it
    }
  }
  return { status: res.status, headers: res.headers, body };
}

export function toApiError(r: ApiResponse): ApiError {
  const b = r.body as { error?: string; message?: string } | string;
  if (typeof b === 'object' && b?.error) return new ApiError(r.status, b.error, b.message ?? b.error);
  return new ApiError(
    r.status,
    `http_${r.status}`,
    `HTTP ${r.status}${typeof b === 'string' && b ? `: ${b.slice(0, 200)}` : ''}`,
  );
}
