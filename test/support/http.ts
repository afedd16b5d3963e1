/**
 * A small fetch-based HTTP client for tests: real requests over loopback, JSON in and out. Every reply is
 * checked against the OpenAPI document (support/conformance.ts) unless the request says why not.
 */
import { checkConformance } from './conformance.ts';

export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
  /** The raw body (images). */
  bytes: Buffer;
}

export interface RequestOptions {
  token?: string;
  headers?: Record<string, string>;
  /** Raw body (string/FormData/Buffer); `json` is ignored when set. */
  raw?: NonNullable<RequestInit['body']>;
  /** Skips the OpenAPI conformance check, for deliberate probes of unknown routes; says why. */
  unchecked?: string;
}

export interface Client {
  url: string;
  request<T = any>(method: string, path: string, json?: unknown, opts?: RequestOptions): Promise<Reply<T>>;
  get<T = any>(path: string, opts?: RequestOptions): Promise<Reply<T>>;
  post<T = any>(path: string, json?: unknown, opts?: RequestOptions): Promise<Reply<T>>;
  patch<T = any>(path: string, json?: unknown, opts?: RequestOptions): Promise<Reply<T>>;
  del<T = any>(path: string, opts?: RequestOptions): Promise<Reply<T>>;
}

export function client(url: string): Client {
  async function request<T>(
    method: string,
    path: string,
    json?: unknown,
    opts: RequestOptions = {},
  ): Promise<Reply<T>> {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let body: RequestInit['body'] = opts.raw;
    if (body === undefined && json !== undefined) {
      headers['content-type'] ??= 'application/json';
      body = JSON.stringify(json);
    }
    const res = await fetch(url + path, { method, headers, body, redirect: 'manual' });
    const bytes = Buffer.from(await res.arrayBuffer());
    const text = bytes.toString('utf8');
    if (!opts.unchecked) checkConformance({ method, url: url + path, status: res.status, headers: res.headers, text });
    let parsed: unknown = undefined;
    if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: res.status, headers: res.headers, body: parsed as T, text, bytes };
  }
  return {
    url,
    request,
    get: (p, o) => request('GET', p, undefined, o),
    post: (p, j, o) => request('POST', p, j, o),
    patch: (p, j, o) => request('PATCH', p, j, o),
    del: (p, o) => request('DELETE', p, undefined, o),
  };
}
