/**
 * The CLI's HTTP client: JSON or multipart in, JSON out, retries by the retry policy. A 429 or 503 pauses
 * every request of the run (they share one budget on the server), not just the one that got it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_RETRY, RETRYABLE_STATUS, describeNetworkError, isNetworkError, parseRetryAfter, retryDelay, type RetryPolicy } from './retry.policy.ts';

export interface ApiResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON, or the text when the response is not JSON. */
  body: any;
}

export interface RetryNotice {
  attempt: number;
  waitMs: number;
  /** `429 rate_limited`, `503 busy`, `ECONNREFUSED`… */
  reason: string;
}

export interface RequestOptions {
  json?: unknown;
  /** Built afresh for every attempt (a body stream can be read once). */
  form?: () => FormData | Promise<FormData>;
  headers?: Record<string, string>;
  /** Overrides the client's token (login uses the JWT it just got). */
  token?: string;
  onRetry?: (n: RetryNotice) => void;
}

export interface ApiClientOptions {
  baseUrl: string;
  token?: string | undefined;
  retry?: RetryPolicy;
  /** Per attempt, so a stalled connection is abandoned and retried. */
  timeoutMs?: number;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<unknown>;
  random?: () => number;
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

export class ApiClient {
  readonly baseUrl: string;
  readonly #token: string | undefined;
  readonly #retry: RetryPolicy;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;
  readonly #sleep: (ms: number) => Promise<unknown>;
  readonly #random: () => number;
  #notBefore = 0;

  constructor(opts: ApiClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.#token = opts.token;
    this.#retry = opts.retry ?? DEFAULT_RETRY;
    this.#timeoutMs = opts.timeoutMs ?? 120_000;
    this.#fetch = opts.fetch ?? fetch;
    this.#sleep = opts.sleep ?? ((ms) => sleep(ms));
    this.#random = opts.random ?? Math.random;
  }

  /** Sends with retries; returns the final response, whatever its status. Throws NetworkError when the server never answered. */
  async request(method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse> {
    for (let attempt = 1; ; attempt++) {
      const pause = this.#notBefore - Date.now();
      if (pause > 0) await this.#sleep(pause);
      let res: Response;
      let response: ApiResponse;
      try {
        res = await this.#fetch(this.baseUrl + path, await this.#init(method, opts));
        response = await read(res);
      } catch (err) {
        if (!isNetworkError(err) || attempt > this.#retry.retries) {
          throw new NetworkError(`${method} ${this.baseUrl}${path}: ${describeNetworkError(err)}`, { cause: err });
        }
        const waitMs = retryDelay(attempt, null, this.#retry, this.#random);
        opts.onRetry?.({ attempt, waitMs, reason: describeNetworkError(err) });
        await this.#sleep(waitMs);
        continue;
      }
      if (!RETRYABLE_STATUS.has(res.status) || attempt > this.#retry.retries) return response;
      const retryAfter = parseRetryAfter(res.headers.get('retry-after'));
      const waitMs = retryDelay(attempt, retryAfter, this.#retry, this.#random);
      if (retryAfter !== null) this.#notBefore = Math.max(this.#notBefore, Date.now() + waitMs);
      opts.onRetry?.({ attempt, waitMs, reason: `${res.status}${response.body?.error ? ` ${response.body.error}` : ''}` });
      if (retryAfter === null) await this.#sleep(waitMs);
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
    else if (opts.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(opts.json);
    }
    return { method, headers, body, redirect: 'error', signal: AbortSignal.timeout(this.#timeoutMs) };
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
  return new ApiError(r.status, `http_${r.status}`, `HTTP ${r.status}${typeof b === 'string' && b ? `: ${b.slice(0, 200)}` : ''}`);
}
