/**
 * Sends one file through the server's tus 1.0 endpoint (API.md "Resumable uploads"), with the CLI's own HTTP
 * client rather than tus-js-client: the protocol subset is four requests (creation, HEAD, PATCH, the result), and
 * this way every request shares the run's Retry-After pause, its --max-wait, its halt on Ctrl-C and its retry
 * notices, and the CLI gains no runtime dependency.
 *
 * The file goes in chunks (`--chunk-size`), each with `Upload-Checksum: sha256 …`, the first in the creation request
 * (creation-with-upload: a file of one chunk is one request, its answer in the creation's body). A PATCH is sent
 * once: after any failure (the connection dropped, 409, 460, 5xx) the client asks the server's offset (HEAD) and
 * continues from there, so a cut costs at most the chunk in flight. The upload's URL goes into the resume file as
 * soon as it is created, with the file's size, modification time and SHA-256: the next run HEADs it and continues
 * from its offset; an upload the server no longer has (404 expired or deleted, 410) is created afresh. The outcome
 * is read from `GET …/result` (or the creation's body), which answers exactly what the direct upload would have
 * (record, duplicate notice, error body).
 */
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { basename } from 'node:path';
import { NetworkError, type ApiClient, type ApiResponse, type RetryNotice } from './api.client.ts';
import type { ImageFile } from './image-files.walker.ts';
import type { ResumeFile } from './resume.store.ts';

export const TUS_PATH = '/api/uploads/resumable';
const TUS = { 'tus-resumable': '1.0.0' };

export const MIN_CHUNK = 64 * 1024;
export const MAX_CHUNK = 10 * 1024 * 1024;
/** 1 MiB: a cut re-sends at most this; a 10 MiB file is ten PATCHes (each spends RATE_LIMIT_GENERAL once). */
export const DEFAULT_CHUNK = 1024 * 1024;

/**
 * `--chunk-size`: bytes, or KiB/MiB with a suffix (`512k`, `1m`, `2MiB`), from 64 KiB to 10 MiB; anything else is
 * null (the caller names the flag and the range).
 */
export function parseChunkSize(text: string): number | null {
  const m = /^(\d{1,9})\s*(?:(k|m)(?:i?b)?|b)?$/i.exec(text.trim());
  if (!m) return null;
  const n = Number(m[1]) * (m[2] ? (m[2].toLowerCase() === 'k' ? 1024 : 1024 * 1024) : 1);
  return n >= MIN_CHUNK && n <= MAX_CHUNK ? n : null;
}

export interface ResumableSend {
  file: ImageFile;
  sha256: string;
  chunkSize: number;
  idempotencyKey: string;
  tags: readonly string[];
  isPrivate: boolean;
  resume: ResumeFile;
  onRetry: (n: RetryNotice) => void;
  /** A line for the progress (resuming from an offset, starting afresh). */
  note: (line: string) => void;
  /** Counts every chunk's bytes as they are sent (tests and the summary of bytes sent twice). */
  onChunk?: (bytes: number) => void;
}

/** The server has no tus endpoint (an older pixvote): the caller sends the file directly instead. */
export class NoResumableEndpoint extends Error {
  override name = 'NoResumableEndpoint';
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

/** `Upload-Metadata`: comma-separated `key base64(value)` pairs. */
export function uploadMetadata(m: Record<string, string>): string {
  return Object.entries(m)
    .map(([k, v]) => (v === '' ? k : `${k} ${b64(v)}`))
    .join(',');
}

/** The headers of a request carrying `chunk`: its type and its sha256 (a mismatch is refused with 460). */
const octets = (chunk: Buffer) => ({
  'content-type': 'application/offset+octet-stream',
  'upload-checksum': `sha256 ${createHash('sha256').update(chunk).digest('base64')}`,
});

/** A header that must be a non-negative integer, or null. */
function offsetHeader(r: ApiResponse, name = 'upload-offset'): number | null {
  const v = r.headers.get(name);
  return v !== null && /^\d{1,15}$/.test(v) ? Number(v) : null;
}

/**
 * Sends the file resumably and resolves the result resource's final answer (not 202), or the refusal that ended
 * it (the creation's 413, a 401…), to be read exactly like the direct upload's response.
 */
export async function sendResumable(
  client: ApiClient,
  s: ResumableSend,
): Promise<{ response: ApiResponse; replayed: boolean }> {
  let replayed = false;
  const response = await send(client, s, () => (replayed = true));
  return { response, replayed };
}

async function send(client: ApiClient, s: ResumableSend, onReplayed: () => void): Promise<ApiResponse> {
  const { file } = s;
  const policy = client.retryPolicy;
  const fh = await open(file.path, 'r');
  try {
    let url: string | null = null;
    let offset = 0;
    let restarted = false;

    /** The file's bytes from `at`, at most a chunk. */
    const chunkAt = async (at: number): Promise<Buffer> => {
      const length = Math.min(s.chunkSize, file.size - at);
      const chunk = Buffer.alloc(length);
      const { bytesRead } = await fh.read(chunk, 0, length, at);
      if (bytesRead !== length) throw new Error(`${file.path} changed while it was being sent`);
      return chunk;
    };

    /**
     * Creates the upload with its first chunk in the same request (creation-with-upload): a file of one chunk is
     * one request, and the creation's body then carries the use case's answer. Resolves that answer, or the refusal
     * that ends the file, or null to go on with PATCHes from `offset`.
     */
    const create = async (): Promise<ApiResponse | null> => {
      const first = await chunkAt(0);
      s.onChunk?.(first.length);
      const r = await client.request('POST', TUS_PATH, {
        raw: first,
        headers: {
          ...TUS,
          ...octets(first),
          'upload-length': String(file.size),
          'upload-metadata': uploadMetadata({
            upload_type: 'image',
            filename: basename(file.path),
            ...(s.tags.length ? { tags: s.tags.join(',') } : {}),
            is_private: String(s.isPrivate),
          }),
          // The key of the upload too: a creation whose answer was lost answers the same upload when retried.
          'idempotency-key': s.idempotencyKey,
        },
        onRetry: s.onRetry,
      });
      if (r.status === 404 || r.status === 405) throw new NoResumableEndpoint(`${r.status} on POST ${TUS_PATH}`);
      const location = r.headers.get('location');
      if (r.status !== 201 || !location) return r;
      url = new URL(location, client.baseUrl + '/').pathname;
      offset = offsetHeader(r) ?? 0;
      // The same key created this upload before, and it is complete: an earlier run sent it all.
      if (r.headers.get('idempotent-replayed') === 'true' && offset === file.size) onReplayed();
      const answer = (r.body as { result?: { status: number; body: unknown } } | null)?.result;
      if (offset === file.size && answer) return { status: answer.status, headers: r.headers, body: answer.body };
      await s.resume.begin(file, s.sha256, url);
      return null;
    };

    /** The server's offset of the upload; null when it no longer has it (expired, deleted: 404, 410). */
    const head = async (u: string): Promise<number | ApiResponse | null> => {
      const r = await client.request('HEAD', u, { headers: TUS, onRetry: s.onRetry });
      if (r.status === 404 || r.status === 410) return null;
      const at = offsetHeader(r);
      if (r.status !== 200 || at === null) return r;
      if (offsetHeader(r, 'upload-length') !== file.size) return null;
      return at;
    };

    const earlier = s.resume.partialOf(file, s.sha256);
    if (earlier) {
      const at = await head(earlier.url);
      if (typeof at === 'number') {
        url = earlier.url;
        offset = at;
        s.note(`resuming ${file.path} at ${offset} of ${file.size} bytes (${earlier.url})`);
      } else if (at === null) {
        s.resume.forget(file);
        s.note(`the server no longer has the upload ${file.path} began (expired or deleted): sending it afresh`);
      } else return at;
    }
    if (!url) {
      const refused = await create();
      if (refused) return refused;
    }

    let failures = 0;
    while (offset < file.size) {
      const chunk = await chunkAt(offset);
      let r: ApiResponse | null = null;
      try {
        s.onChunk?.(chunk.length);
        r = await client.request('PATCH', url!, {
          raw: chunk,
          headers: { ...TUS, ...octets(chunk), 'upload-offset': String(offset) },
          retries: 0,
          onRetry: s.onRetry,
        });
      } catch (e) {
        if (!(e instanceof NetworkError)) throw e;
      }
      const at = r?.status === 204 ? offsetHeader(r) : null;
      if (at !== null && at > offset) {
        offset = at;
        failures = 0;
        continue;
      }
      if (r && (r.status === 404 || r.status === 410) && !restarted) {
        // Gone mid-run (expired): once, afresh.
        restarted = true;
        s.resume.forget(file);
        const refused = await create();
        if (refused) return refused;
        continue;
      }
      if (r && r.status !== 204 && r.status !== 409 && r.status !== 460 && r.status < 500) return r;
      // The chunk did not land (a dropped connection, a conflict, a bad checksum, a server error): back off, ask
      // where the server is, and go on from there.
      if (++failures > policy.retries)
        throw new NetworkError(
          `PATCH ${client.baseUrl}${url}: no progress after ${policy.retries} retries` +
            (r ? ` (last answer ${r.status})` : ''),
        );
      const waitMs = policy.baseDelayMs * 2 ** (failures - 1);
      s.onRetry({
        attempt: failures,
        retries: policy.retries,
        waitMs,
        reason: r ? `${r.status} on a chunk` : 'the connection dropped mid-chunk',
        retryAfter: false,
      });
      await client.wait(waitMs);
      const now = await head(url!);
      if (now === null) {
        if (restarted) throw new NetworkError(`the server lost the upload of ${file.path} twice`);
        restarted = true;
        s.resume.forget(file);
        const refused = await create();
        if (refused) return refused;
      } else if (typeof now === 'number') offset = now;
      else return now;
    }

    // Complete: the PATCH that brought the last byte ran the upload use case; its answer is the result resource.
    for (let polls = 0; ; polls++) {
      const r = await client.request('GET', `${url!}/result`, { onRetry: s.onRetry });
      if (r.status !== 202 || polls >= policy.retries) return r;
      await client.wait(policy.baseDelayMs * 2 ** polls);
    }
  } finally {
    await fh.close();
  }
}
