/**
 * A small HTTP client for tests: real requests over loopback, JSON in and out. Every reply is checked against the
 * OpenAPI document (support/conformance.ts) unless the request says why not.
 *
 * It sends what `fetch` sends (its default headers; a string body as text/plain) and reads what `fetch` reads (the
 * body decoded from gzip or deflate, the headers as `Headers`), through undici's `request` where the body is bytes or
 * a string: `fetch`'s streams cost ~250 µs more CPU per request (2026-12-01, against a bare node:http server: 348–557
 * against 98–254 µs for the two), and the suite sends hundreds of thousands. Other bodies (FormData, Blob, streams)
 * go through `fetch` itself.
 */
import { promisify } from 'node:util';
import { brotliDecompress, gunzip, inflate } from 'node:zlib';
import { request as undiciRequest, type Dispatcher } from 'undici';
import { checkConformance } from './conformance.ts';

/** What `fetch` adds to every request that does not set them (undici's fetch, over http:). */
const FETCH_DEFAULTS: Record<string, string> = {
  accept: '*/*',
  'accept-language': '*',
  'sec-fetch-mode': 'cors',
  'user-agent': 'node',
  'accept-encoding': 'gzip, deflate',
};
/** Decoded here, not by undici's `decompress` interceptor: that one drops Content-Encoding, which `fetch` keeps and
 * tests read (a gzipped feed page). One coding per answer, as the app sends. */
const DECODERS: Record<string, (b: Buffer) => Promise<Buffer>> = {
  gzip: promisify(gunzip),
  'x-gzip': promisify(gunzip),
  deflate: promisify(inflate),
  br: promisify(brotliDecompress),
};

/** One request as `fetch` would send it and read its answer; `fetch` itself for bodies other than bytes. */
async function send(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: RequestInit['body'],
): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  if (body != null && typeof body !== 'string' && !(body instanceof Uint8Array)) {
    const res = await fetch(url, { method, headers, body, redirect: 'manual' });
    return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
  }
  const sent: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) sent[k.toLowerCase()] = v;
  for (const [k, v] of Object.entries(FETCH_DEFAULTS)) sent[k] ??= v;
  if (typeof body === 'string') sent['content-type'] ??= 'text/plain;charset=UTF-8';
  return readAnswer(await undiciRequest(url, { method, headers: sent, body: body ?? null }));
}

/**
 * An undici answer as `fetch` reads it: the headers as `Headers`, the body decoded from its Content-Encoding (for a
 * test that sends through an undici `Client` of its own: test/http/api-fuzz.test.ts).
 */
export async function readAnswer(
  res: Dispatcher.ResponseData,
): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const replyHeaders = new Headers();
  for (const [k, v] of Object.entries(res.headers)) for (const one of [v ?? []].flat()) replyHeaders.append(k, one);
  let bytes: Buffer = Buffer.from(await res.body.arrayBuffer());
  const coding = (replyHeaders.get('content-encoding') ?? '').trim().toLowerCase();
  if (bytes.length && DECODERS[coding]) bytes = await DECODERS[coding](bytes);
  return { status: res.statusCode, headers: replyHeaders, bytes };
}

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
    const res = await send(url + path, method, headers, body);
    const bytes = res.bytes;
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
