// Resumable uploads for the upload form (issue 49): tus-js-client's browser build against the tus endpoint
// (API.md, "Resumable uploads"), then the server's `…/result` for the outcome. Loaded only when a file larger than
// one chunk is chosen: the form's own script stays small, this chunk is fetched once (docs/web-pages.md).
//
// The file goes in chunks of the form's size (1 MiB). A dropped chunk is retried by tus-js-client (HEAD for the
// server's offset, then on from there) after 1–15 s, 12 times without progress at most; while the browser is offline
// nothing is sent and no attempt is spent: the form waits for the `online` event. The upload's URL is kept in
// localStorage under the file's fingerprint (this visitor, the file's name, type, size and date), so a reload, or
// the same file chosen again with the same description, tags and privacy, goes on from the server's offset instead
// of starting over.
/** @import { ApiResult } from './api.js' */
/** @import { DetailedError, HttpResponse } from 'tus-js-client' */
import { defaultOptions, Upload } from 'tus-js-client';

export const TUS_PATH = '/api/uploads/resumable';
/** Waits before each attempt after a failure, ms: 12 attempts without progress, then the form gives up and says so. */
const RETRY_DELAYS = [1000, 2000, 4000, 8000, ...Array(8).fill(15000)];
/** An incomplete upload expires on the server after RESUMABLE_TTL (24 h): an older kept URL is dropped unasked. */
const KEPT_MS = 24 * 3600 * 1000;

/**
 * @typedef {{
 *   metadata: Record<string, string>,
 *   chunkSize: number,
 *   key: string,
 *   user: string,
 *   api: (method: string, path: string) => Promise<ApiResult>,
 *   onProgress: (sent: number, total: number) => void,
 *   onState: (text: string) => void,
 * }} TusOptions
 */

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

/** A network failure (no answer at all). */
const NETWORK = { ok: false, status: 0, data: { error: 'network' }, retryAfter: null };

/** @param {HttpResponse | null | undefined} res @returns {ApiResult} */
function answerOf(res) {
  if (!res) return NETWORK;
  const status = res.getStatus();
  let data = null;
  try {
    data = res.getBody() ? JSON.parse(res.getBody()) : null;
  } catch {
    // not JSON: no data
  }
  return { ok: status >= 200 && status < 300, status, data, retryAfter: res.getHeader('retry-after') ?? null };
}

/** 0 (no answer), 409 (the upload's lock is held), 423, 429 and 5xx are worth another attempt. @param {number} s */
const transient = (s) => s === 0 || s === 409 || s === 423 || s === 429 || s >= 500;

/**
 * Sends `file` resumably; resolves what `POST /api/v1/upload` would have answered (the result resource), the
 * refusal of the creation or of a chunk, or `null` when the server has no tus endpoint (the caller then sends it
 * directly).
 * @param {File} file
 * @param {TusOptions} o
 * @returns {Promise<ApiResult | null>}
 */
export function tusUpload(file, o) {
  return new Promise((resolve) => {
    let lost = false;
    /** Attempts after a Retry-After, which tus-js-client's retries cannot wait for. */
    let waits = 0;
    const upload = new Upload(file, {
      endpoint: new URL(TUS_PATH, location.href).href,
      metadata: o.metadata,
      chunkSize: o.chunkSize,
      // The first chunk in the creation request (creation-with-upload): one request less, and a file of one chunk
      // gets its answer in the creation's body.
      uploadDataDuringCreation: true,
      retryDelays: RETRY_DELAYS,
      // This visitor's uploads only: another account on the same browser starts its own.
      fingerprint: async (f, options) => `pixvote-${o.user}-${await defaultOptions.fingerprint(f, options)}`,
      removeFingerprintOnSuccess: true,
      // The same Idempotency-Key answers the same upload, so a creation whose answer was lost is retried safely.
      onBeforeRequest(req) {
        if (req.getMethod() === 'POST') req.setHeader('Idempotency-Key', o.key);
      },
      onProgress: (sent, total) => o.onProgress(sent, total),
      onUploadUrlAvailable() {
        if (lost) o.onState('Connected again: resuming the upload…');
        lost = false;
      },
      onShouldRetry(err, attempt, options) {
        const res = err.originalResponse;
        const status = res?.getStatus() ?? 0;
        const creation = err.originalRequest.getMethod() === 'POST';
        // Offline: onError waits for the network without spending an attempt. A creation refused for the user's
        // own open uploads or rate (429), and any Retry-After, is onError's to answer or wait for.
        if (!navigator.onLine || res?.getHeader('retry-after') || (creation && status === 429)) return false;
        if (!transient(status) || (creation && (status === 404 || status === 405))) return false;
        lost = true;
        const wait = options.retryDelays?.[attempt] ?? 0;
        o.onState(`The connection was lost: trying again in ${Math.round(wait / 1000)} s…`);
        return true;
      },
      onError(err) {
        const e = /** @type {DetailedError} */ (err);
        const res = e.originalResponse;
        const status = res?.getStatus() ?? 0;
        const creation = e.originalRequest?.getMethod() === 'POST';
        if (creation && (status === 404 || status === 405)) return resolve(null);
        const later = (/** @type {number} */ ms) => {
          lost = true;
          void pause(ms).then(() => upload.start());
        };
        if (e.originalRequest && status === 0 && !navigator.onLine) {
          o.onState('You are offline: the upload goes on when the connection is back.');
          return later(0);
        }
        const retryAfter = Number(res?.getHeader('retry-after'));
        if (retryAfter > 0 && transient(status) && !(creation && status === 429) && ++waits <= RETRY_DELAYS.length) {
          o.onState(`The server is busy: trying again in ${Math.ceil(retryAfter)} s…`);
          return later(retryAfter * 1000);
        }
        resolve(answerOf(res));
      },
      onSuccess({ lastResponse }) {
        // A creation that brought the whole file answers the use case's result in its body; else it is asked for.
        const result = lastResponse.getStatus() === 201 ? answerOf(lastResponse).data?.result : null;
        if (result)
          return resolve({ ok: result.status < 300, status: result.status, data: result.body, retryAfter: null });
        o.onState('Processing the image…');
        void outcome(new URL(/** @type {string} */ (upload.url)).pathname, o).then(resolve);
      },
    });
    void resumeOrStart(upload, o.metadata);
  });
}

/**
 * Goes on with this file's earlier upload when one is kept with the same metadata, else starts a new one; kept URLs
 * older than the server keeps incomplete uploads are dropped.
 * @param {Upload} upload
 * @param {Record<string, string>} metadata
 */
async function resumeOrStart(upload, metadata) {
  const same = (/** @type {Record<string, string>} */ m) =>
    Object.keys(m).length === Object.keys(metadata).length && Object.entries(metadata).every(([k, v]) => m[k] === v);
  try {
    const previous = await upload.findPreviousUploads();
    const storage = upload.options.urlStorage;
    for (const p of previous)
      if (Date.now() - Date.parse(p.creationTime) > KEPT_MS) await storage?.removeUpload(p.urlStorageKey);
    const match = previous.find((p) => Date.now() - Date.parse(p.creationTime) <= KEPT_MS && same(p.metadata));
    if (match) upload.resumeFromPreviousUpload(match);
  } catch {
    // No localStorage (a sandboxed frame, storage refused): a new upload.
  }
  upload.start();
}

/**
 * What the complete upload became (`GET …/result`): 202 while the server still checks it, then the direct
 * upload's answer.
 * @param {string} path
 * @param {TusOptions} o
 * @returns {Promise<ApiResult>}
 */
async function outcome(path, o) {
  let failures = 0;
  for (let polls = 0; ; polls++) {
    const r = await o.api('GET', `${path}/result`);
    if (r.status === 202 && polls < 60) {
      await pause(1000);
      continue;
    }
    if (!transient(r.status) || r.status === 409 || ++failures > RETRY_DELAYS.length) return r;
    if (!navigator.onLine) {
      failures--;
      o.onState('You are offline: the upload goes on when the connection is back.');
    }
    await pause(Number(r.retryAfter) * 1000 || RETRY_DELAYS[failures - 1] || 15000);
  }
}
