// Resumable uploads for the upload form (issue 49): a small tus 1.0 client (creation, HEAD, PATCH; the server's
// `…/result` for the outcome), 1.0 KB more for the form's script with Brotli, where tus-js-client would add 14 KB
// (docs/web-pages.md). The file goes in 1 MiB chunks; when the network drops, the page waits (until the browser is
// back online, or with backoff), asks the server's offset (HEAD) and goes on from there, so a drop costs at most
// the chunk in flight. Checksums are left to TCP and TLS here (the CLI sends them).
/** @import { ApiResult } from './api.js' */
import { api } from './api.js';

export const TUS_PATH = '/api/uploads/resumable';
/** Bytes per PATCH; files up to this size go in one direct request instead (they gain nothing from resuming). */
export const CHUNK = 1024 * 1024;
/** Waits between attempts, ms; the last repeats until the give-up below. */
const BACKOFF = [1000, 2000, 4000, 8000, 15000];
/** Attempts without progress (offline time not counted) before the form gives up and says so. */
const MAX_FAILURES = 12;

/**
 * @typedef {{ status: number, data: any, header: (name: string) => string | null }} Answer
 * @typedef {{
 *   metadata: Record<string, string>,
 *   key: string,
 *   onProgress: (sent: number, total: number) => void,
 *   onState: (text: string) => void,
 * }} TusOptions
 */

/** @param {string} s */
const b64 = (s) => btoa(Array.from(new TextEncoder().encode(s), (b) => String.fromCharCode(b)).join(''));

/**
 * One request by XHR (fetch reports no upload progress). Never rejects: a network failure is status 0.
 * @param {string} method
 * @param {string} url
 * @param {Record<string, string>} headers
 * @param {Blob} [body]
 * @param {(loaded: number) => void} [onSent]
 * @returns {Promise<Answer>}
 */
function send(method, url, headers, body, onSent) {
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, url);
    xhr.setRequestHeader('Tus-Resumable', '1.0.0');
    for (const [k, v] of Object.entries(headers)) xhr.setRequestHeader(k, v);
    if (onSent) xhr.upload.addEventListener('progress', (p) => onSent(p.loaded));
    const header = (/** @type {string} */ name) => xhr.getResponseHeader(name);
    xhr.addEventListener('load', () => {
      let data = null;
      try {
        data = xhr.responseText ? JSON.parse(xhr.responseText) : null;
      } catch {
        // not JSON: no data
      }
      resolve({ status: xhr.status, data, header });
    });
    for (const e of ['error', 'timeout', 'abort'])
      xhr.addEventListener(e, () => resolve({ status: 0, data: { error: 'network' }, header: () => null }));
    xhr.send(body ?? null);
  });
}

/** @param {Answer} a @returns {ApiResult} */
const result = (a) => ({
  ok: a.status >= 200 && a.status < 300,
  status: a.status,
  data: a.data,
  retryAfter: a.header('retry-after'),
});

/**
 * Waits `ms`, or while the browser is offline until it is back (then at once).
 * @param {number} ms
 */
function pause(ms) {
  return new Promise((resolve) => {
    if (!navigator.onLine) return addEventListener('online', () => resolve(undefined), { once: true });
    setTimeout(resolve, ms);
  });
}

/**
 * Sends `file` resumably; resolves what `POST /api/v1/upload` would have answered (the result resource), the
 * refusal of the creation, or `null` when the server has no tus endpoint (the caller then sends it directly).
 * @param {File} file
 * @param {TusOptions} o
 * @returns {Promise<ApiResult | null>}
 */
export async function tusUpload(file, o) {
  const metadata = Object.entries(o.metadata)
    .map(([k, v]) => (v ? `${k} ${b64(v)}` : k))
    .join(',');
  let failures = 0;
  /**
   * After a failed request: waits (offline: until online, not counted), then tries again. False: give up.
   * @param {Answer} a
   */
  const lost = async (a) => {
    if (++failures > MAX_FAILURES) return false;
    const wait = Number(a.header('retry-after')) * 1000 || BACKOFF[Math.min(failures, BACKOFF.length) - 1] || 15000;
    if (!navigator.onLine) failures--;
    o.onState(
      navigator.onLine
        ? `The connection was lost: trying again in ${Math.round(wait / 1000)} s…`
        : 'You are offline: the upload goes on when the connection is back.',
    );
    await pause(wait);
    return true;
  };
  /** 0, 429 and 5xx are worth another attempt; anything else is the answer. @param {Answer} a */
  const transient = (a) => a.status === 0 || a.status === 429 || a.status >= 500;

  // Creation: the same Idempotency-Key answers the same upload, so a creation whose answer was lost is retried.
  let created;
  for (;;) {
    created = await send('POST', TUS_PATH, {
      'Upload-Length': String(file.size),
      'Upload-Metadata': metadata,
      'Idempotency-Key': o.key,
    });
    if (created.status === 404 || created.status === 405) return null;
    if (!(transient(created) && created.status !== 429 && (await lost(created)))) break;
  }
  const url = created.header('location');
  if (created.status !== 201 || !url) return result(created);
  let offset = Number(created.header('upload-offset')) || 0;

  while (offset < file.size) {
    const from = offset;
    const a = await send(
      'PATCH',
      url,
      { 'Content-Type': 'application/offset+octet-stream', 'Upload-Offset': String(from) },
      file.slice(from, from + CHUNK),
      (loaded) => o.onProgress(from + loaded, file.size),
    );
    const at = a.status === 204 ? Number(a.header('upload-offset')) : NaN;
    if (at > from) {
      offset = at;
      failures = 0;
      continue;
    }
    if (!transient(a) && a.status !== 409 && a.status !== 204) return result(a);
    // Where is the server? Asked until it answers, then on from there.
    for (;;) {
      if (!(await lost(a))) return result(a);
      const h = await send('HEAD', url, {});
      if (h.status === 200) {
        offset = Number(h.header('upload-offset'));
        o.onProgress(offset, file.size);
        o.onState('Connected again: resuming the upload…');
        break;
      }
      if (!transient(h)) return result(h);
    }
  }
  o.onState('Processing the image…');
  for (let polls = 0; ; polls++) {
    const r = await api('GET', `${url}/result`);
    const a = { status: r.status, data: r.data, header: () => r.retryAfter ?? null };
    // 202: another request is still running the checks on the complete file.
    if (r.status === 202 && polls < 60) await pause(1000);
    else if (!transient(a) || !(await lost(a))) return r;
  }
}
