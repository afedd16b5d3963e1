import type { Readable } from 'node:stream';
import { AppError, errors } from '../domain/errors.ts';
import { isForbiddenAddress } from './address-policy.ts';
import { guardedConnector, systemResolver } from './guarded-connector.ts';
import type { AddressPolicy, Resolver } from './guarded-connector.ts';
import { readImageBody } from './image-body.ts';
import { loadUndici } from './undici.ts';

export interface FetchImageOptions {
  /** Bounds the whole fetch: every DNS lookup, connect, TLS handshake, header and body of every hop. */
  timeoutMs: number;
  /** Cap on the (decoded) body, enforced while it streams. */
  maxBytes: number;
  /** Lifts the address rule only (FETCH_ALLOW_PRIVATE, tests). */
  allowPrivate: boolean;
  /** Redirects followed, each re-validated. Default 3. */
  maxRedirects?: number;
  signal?: AbortSignal;
  userAgent?: string;
  /** Test seam: the DNS resolver (default: the system resolver). Lets a test simulate rebinding. */
  resolve?: Resolver;
  /** Test seam: the address rule (default: isForbiddenAddress). Lets a test treat one loopback address as public. */
  addressPolicy?: AddressPolicy;
}

export interface FetchedImage {
  bytes: Buffer;
  /** Hex SHA-256 of `bytes`. */
  sha256: string;
  /** The URL the image was finally served from, after redirects. */
  finalUrl: string;
  /** The declared media type (essence only), or null. The bytes decide the format, not this. */
  contentType: string | null;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const MAX_URL_LENGTH = 2048;
const DEFAULT_USER_AGENT = 'pixvote-image-fetcher/0.1';

/**
 * Fetches a user-supplied `image_url` without letting it reach the service's own network (SSRF):
 * http/https only, no userinfo, every connection checked at connect time against the address policy,
 * at most `maxRedirects` manual redirects, the whole fetch bounded by `timeoutMs`, the body capped at `maxBytes`
 * and required to start like an image. Every failure is an `AppError` `fetch_failed` naming the rule.
 */
export async function fetchImage(rawUrl: string, opts: FetchImageOptions): Promise<FetchedImage> {
  const { Agent, request } = await loadUndici();
  const maxRedirects = opts.maxRedirects ?? 3;
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(errors.fetchFailed(`image_url took longer than ${opts.timeoutMs} ms`)),
    opts.timeoutMs,
  );
  const onCallerAbort = () => controller.abort(errors.fetchFailed('image_url fetch was cancelled'));
  if (opts.signal?.aborted) onCallerAbort();
  opts.signal?.addEventListener('abort', onCallerAbort, { once: true });

  // One agent per fetch: its connector carries this fetch's policy, resolver and deadline, and no
  // connection outlives the fetch.
  const agent = new Agent({
    connect: guardedConnector({
      allowPrivate: opts.allowPrivate,
      policy: opts.addressPolicy ?? isForbiddenAddress,
      resolve: opts.resolve ?? systemResolver,
      signal: controller.signal,
    }),
  });
  const headers = {
    accept: 'image/webp,image/png,image/jpeg,image/gif,image/*;q=0.8',
    'accept-encoding': 'identity',
    'user-agent': opts.userAgent ?? DEFAULT_USER_AGENT,
  };

  try {
    let url = checkUrl(rawUrl, 'image_url');
    for (let redirects = 0; ; redirects++) {
      const res = await request(url, { method: 'GET', headers, dispatcher: agent, signal: controller.signal });
      if (REDIRECTS.has(res.statusCode)) {
        discard(res.body);
        if (redirects >= maxRedirects) throw errors.fetchFailed(`image_url redirected more than ${maxRedirects} times`);
        url = checkUrl(redirectTarget(res.headers.location, res.statusCode, url), 'image_url redirect target');
        continue;
      }
      if (res.statusCode !== 200) {
        discard(res.body);
        throw errors.fetchFailed(`image_url answered HTTP ${res.statusCode}`);
      }
      try {
        const body = await readImageBody(res.body, res.headers, opts.maxBytes, controller.signal);
        return { bytes: body.bytes, sha256: body.sha256, finalUrl: url.href, contentType: body.contentType };
      } finally {
        discard(res.body);
      }
    }
  } catch (err) {
    throw asFetchError(err, controller.signal);
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onCallerAbort);
    agent.destroy().catch(() => {});
  }
}

/** Scheme, userinfo and length rules; port and address are checked when connecting. */
function checkUrl(raw: string, what: string): URL {
  if (raw.length > MAX_URL_LENGTH) throw errors.fetchFailed(`${what} is longer than ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw errors.fetchFailed(`${what} is not a valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw errors.fetchFailed(`${what} must be http or https`);
  if (url.username !== '' || url.password !== '')
    throw errors.fetchFailed(`${what} must not contain a user name or password`);
  url.hash = '';
  return url;
}

function redirectTarget(location: string | string[] | undefined, status: number, base: URL): string {
  const value = Array.isArray(location) ? location[0] : location;
  if (value === undefined || value === '')
    throw errors.fetchFailed(`image_url answered HTTP ${status} without a Location`);
  try {
    return new URL(value, base).href;
  } catch {
    throw errors.fetchFailed('image_url redirect target is not a valid URL');
  }
}

/** Drops a body we will not (or no longer) read; undici reports the abort on the stream, so swallow it there. */
function discard(body: Readable): void {
  body.on('error', () => {});
  body.destroy();
}

/** Keeps our own rule errors; anything else becomes a generic message so no internal detail leaks. */
function asFetchError(err: unknown, signal: AbortSignal): AppError {
  if (err instanceof AppError) return err;
  if (signal.aborted && signal.reason instanceof AppError) return signal.reason;
  return errors.fetchFailed('image_url could not be reached');
}
