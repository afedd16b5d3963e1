import { createHash } from 'node:crypto';
import { Transform } from 'node:stream';
import type { Readable, TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import { AppError, errors } from '../domain/errors.ts';
import { sniffFormat } from '../domain/image-format.ts';

/** sniffFormat needs at most this many leading bytes. */
const SNIFF_BYTES = 16;

export type ResponseHeaders = Record<string, string | string[] | undefined>;

export interface ImageBody {
  bytes: Buffer;
  sha256: string;
  contentType: string | null;
}

/**
 * Reads an HTTP response body that must be an image: at most `maxBytes` (after decoding a Content-Encoding, which
 * the request asked the server not to use), hashed with SHA-256 as it streams, and abandoned as soon as the first
 * bytes show it is not JPEG/PNG/GIF/WebP. Throws `fetch_failed` naming the rule that stopped it.
 */
export async function readImageBody(
  body: Readable,
  headers: ResponseHeaders,
  maxBytes: number,
  signal: AbortSignal,
): Promise<ImageBody> {
  const contentType = mediaType(headers['content-type']);
  const encoding = contentEncoding(headers['content-encoding']);
  // pipeline() may report a teardown AbortError instead of what a stage threw, so the first rule broken is kept here.
  let broken = null as AppError | null; // set by `fail` in the stages: not narrowed to null here
  const fail = (err: AppError) => (broken ??= err);
  const tooBig = () => fail(errors.fetchFailed(`image_url body exceeds ${maxBytes} bytes`));
  // Content-Length is only trusted to fail early, never to size a buffer.
  if (encoding === 'identity' && Number(single(headers['content-length'])) > maxBytes) throw tooBig();

  const hash = createHash('sha256');
  const chunks: Buffer[] = [];
  let total = 0;
  let sniffed = false;
  const sniff = () => {
    sniffed = true;
    if (sniffFormat(Buffer.concat(chunks, Math.min(total, SNIFF_BYTES))) === null) {
      throw fail(errors.fetchFailed(`image_url is not an image (${contentType ?? 'no content type'})`));
    }
  };
  async function collect(source: AsyncIterable<Buffer>): Promise<void> {
    for await (const chunk of source) {
      total += chunk.length;
      if (total > maxBytes) throw tooBig();
      chunks.push(chunk);
      hash.update(chunk);
      if (!sniffed && total >= SNIFF_BYTES) sniff();
    }
    if (!sniffed) sniff();
  }

  const decoder = makeDecoder(encoding);
  try {
    if (decoder === null) await pipeline(body, collect, { signal });
    // The cap counts inflated bytes (a gzip bomb stops at maxBytes); the raw cap only bounds the wire.
    else await pipeline(body, rawCap(maxBytes, tooBig), decoder, collect, { signal });
  } catch (err) {
    if (broken !== null) throw broken;
    if (err instanceof AppError || signal.aborted) throw err;
    if (decoder !== null && isZlibError(err))
      throw errors.fetchFailed(`image_url body could not be decoded (${encoding})`);
    throw errors.fetchFailed('image_url connection closed before the body was complete');
  }
  return { bytes: Buffer.concat(chunks, total), sha256: hash.digest('hex'), contentType };
}

function makeDecoder(encoding: string): Transform | null {
  switch (encoding) {
    case 'identity':
      return null;
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip();
    case 'deflate':
      return zlib.createInflate();
    case 'br':
      return zlib.createBrotliDecompress();
    default:
      // Also refuses stacked codings ("gzip, br"): no image server needs them.
      throw errors.fetchFailed('image_url uses an unsupported content encoding');
  }
}

function rawCap(maxBytes: number, tooBig: () => AppError): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback) {
      seen += chunk.length;
      if (seen > maxBytes) done(tooBig());
      else done(null, chunk);
    },
  });
}

function contentEncoding(value: string | string[] | undefined): string {
  const v = Array.isArray(value) ? value.join(',') : (value ?? '');
  const normalized = v.trim().toLowerCase();
  return normalized === '' ? 'identity' : normalized;
}

/** The declared media type if it looks like one; remote text never reaches a message otherwise. */
function mediaType(value: string | string[] | undefined): string | null {
  const essence = (single(value) ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? '';
  return /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}$/.test(essence) ? essence : null;
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function isZlibError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return (
    typeof code === 'string' &&
    (code.startsWith('Z_') || code.startsWith('ERR_BROTLI') || code === 'ERR_ZLIB_INITIALIZATION_FAILED')
  );
}
