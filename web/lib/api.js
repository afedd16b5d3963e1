// The public API, as the pages call it: with the visitor's cookie, refusals explained in plain words.
import { limits } from './limits.js';
import { plural } from './dom.js';

/**
 * An API answer: `data` is the parsed JSON body (null when empty), as API.md describes it per route.
 * @typedef {{ ok: boolean, status: number, data: any, retryAfter?: string | null }} ApiResult
 */

/** @param {number} seconds */
function formatWait(seconds) {
  if (!Number.isFinite(seconds) || seconds <= 0) return 'a moment';
  if (seconds < 60) return plural(Math.ceil(seconds), 'second', 'seconds');
  if (seconds < 3600) return plural(Math.ceil(seconds / 60), 'minute', 'minutes');
  return plural(Math.ceil(seconds / 3600), 'hour', 'hours');
}

/**
 * Calls the public API with the visitor's cookie; never throws (a network failure is status 0).
 * @param {string} method
 * @param {string} path
 * @param {unknown} [json]
 * @returns {Promise<ApiResult>}
 */
export async function api(method, path, json) {
  /** @type {Record<string, string>} */
  const headers = {};
  /** @type {RequestInit} */
  const init = { method, headers, cache: 'no-cache', credentials: 'same-origin' };
  if (json !== undefined) {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(json);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch {
    return { ok: false, status: 0, data: { error: 'network' }, retryAfter: null };
  }
  // An empty or non-JSON body (a 304 answered from the cache never gets here) is null.
  const data = /** @type {unknown} */ (await res.json().catch(() => null));
  return { ok: res.ok, status: res.status, data, retryAfter: res.headers.get('retry-after') };
}

/**
 * An API refusal in plain words.
 * @param {ApiResult} r
 * @returns {string}
 */
export function explain(r) {
  const code = r.data?.error;
  const wait = r.retryAfter ? formatWait(Number(r.retryAfter)) : null;
  switch (code) {
    case 'network':
      return 'The server could not be reached. Check your connection and try again.';
    case 'rate_limited':
      return `You are doing that too often. Please wait ${wait ?? 'a while'} and try again.`;
    case 'human_detected':
      return 'This image seems to show a person. pixvote does not accept pictures of people.';
    case 'blocked_content':
      return 'This image is blocked by the moderators and cannot be uploaded.';
    case 'payload_too_large':
      return `The file is too large: images can be at most ${megabytes(limits.maxFileBytes)} MB.`;
    case 'unsupported_format':
      return 'That file is not an image pixvote can take: use JPEG, PNG, GIF or WebP.';
    case 'invalid_image':
      return 'The image could not be read: it may be damaged, or too big (over 50 megapixels or 200 frames).';
    case 'fetch_failed':
      return 'The image at that address could not be fetched. Check that the URL leads straight to an image.';
    case 'unauthorized':
      return 'You need to sign in again.';
    case 'forbidden':
      return 'You are not allowed to do that.';
    case 'conflict':
      return 'That username or email is already taken.';
    case 'busy':
    case 'storage_unavailable':
      return `The server is busy right now. Please try again in ${wait ?? 'a moment'}.`;
    case 'not_found':
      return 'It is not there any more.';
    case 'removed':
      return 'The moderators removed it.';
    case 'invalid_cursor':
      return 'This link to a later page is not one this feed made. Start again from its first page.';
    case 'page_too_deep':
      return 'Pages this deep are not opened by number. Start from the first page and scroll on.';
    default:
      // The API's message names the field and the limit ("description is 612 characters; the limit is 500").
      return r.data?.message ?? `Something went wrong (HTTP ${r.status}). Please try again.`;
  }
}

/**
 * Bytes as the pages name sizes: megabytes of 1024 × 1024 bytes (10 MB is 10 MiB).
 * @param {number} bytes
 */
export function megabytes(bytes) {
  return Math.round((bytes / 1024 / 1024) * 10) / 10;
}
