import { randomUUID } from 'node:crypto';
import { open, rm } from 'node:fs/promises';
import { errors as formidableErrors } from 'formidable';
import { koaBody } from 'koa-body';
import { errors } from '../../domain/errors.ts';
import type { ByteSource } from '../../domain/uploads/create-upload.ts';
import type { MediaFiles } from '../../domain/uploads/ports.ts';
import type { AppContext } from '../context.ts';
import { MAX_FILE_BYTES } from '../../domain/uploads/limits.ts';
import { MULTIPART_FIELDS_BYTES as MAX_FIELDS_BYTES } from '../limits.ts';

const MAX_FIELDS = 20;

/** The received `file`: a temp file the request owns, read (whole, once) only if its bytes are processed. */
export interface UploadedFile extends ByteSource {
  path: string;
  size: number;
}

/**
 * Parses a multipart upload into a per-request temp directory with a hard 10 MiB cap (413 as soon as the
 * stream passes it, or at once when Content-Length already says so), computing the SHA-256 while the
 * bytes stream in. The directory is removed when the request ends, whatever happened.
 * JSON bodies (for image_url and link uploads) were already parsed by the app's body middleware.
 */
export function multipartUpload(opts: { media: MediaFiles; onReceived?: (seconds: number) => void }) {
  return async function multipartUpload(ctx: AppContext, next: () => Promise<unknown>) {
    if (!ctx.is('multipart/form-data')) {
      if (ctx.is('application/json')) return next();
      throw errors.invalid('upload must be sent as multipart/form-data (or JSON for image_url and link uploads)');
    }
    const dir = await opts.media.tempDir(randomUUID());
    const started = performance.now();
    try {
      const parsing = koaBody({
        multipart: true,
        json: false,
        urlencoded: false,
        text: false,
        formidable: {
          uploadDir: dir,
          maxFiles: 1,
          maxFileSize: MAX_FILE_BYTES,
          maxTotalFileSize: MAX_FILE_BYTES,
          maxFields: MAX_FIELDS,
          maxFieldsSize: MAX_FIELDS_BYTES,
          allowEmptyFiles: false,
          minFileSize: 1,
          hashAlgorithm: 'sha256',
          // Every file part counts against the one-file, 10 MiB caps, whatever its field name (a part
          // filtered out would be read to its end uncounted); a file in another field is refused below.
        },
        onError(err) {
          throw mapFormidable(err);
        },
      })(ctx, async () => {}) as Promise<void>;
      await untilBodyOrClose(ctx, parsing);
      opts.onReceived?.((performance.now() - started) / 1000);
      await next();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };
}

/**
 * `parsing`, unless the request closes before its body was read to the end: then 400 at once. A connection
 * that goes while its body is unread (Node's parser refused what followed the body, a timeout, the client
 * left) never delivers it, and formidable, waiting for an 'end' that cannot come, would hold the request and
 * its temp directory forever.
 */
async function untilBodyOrClose(ctx: AppContext, parsing: Promise<unknown>): Promise<void> {
  const req = ctx.req;
  let onClose: (() => void) | null = null;
  const closed = new Promise<never>((_, reject) => {
    onClose = () => {
      if (!req.readableEnded) reject(errors.invalid('the connection closed before the request body was read'));
    };
    if (req.destroyed) onClose();
    else req.once('close', onClose);
  });
  try {
    await Promise.race([parsing, closed]);
  } finally {
    req.off('close', onClose!);
    // The loser of the race settles later, unobserved.
    parsing.catch(() => {});
    closed.catch(() => {});
  }
}

const MALFORMED =
  'malformed multipart body: the parts must be delimited by the boundary of Content-Type, with CRLF line ends, ' +
  'each with a Content-Disposition, and end with the closing delimiter';

/** formidable's errors by their code (its messages name its own options): what a client can act on. */
function mapFormidable(err: Error): Error {
  switch ((err as Error & { code?: number }).code) {
    case formidableErrors.maxFilesExceeded:
      return errors.invalid(
        'only one file may be sent, in the field "file" (a part with a filename or a Content-Type counts as a file)',
      );
    case formidableErrors.biggerThanMaxFileSize:
    case formidableErrors.biggerThanTotalMaxFileSize:
      return errors.payloadTooLarge(`file exceeds the limit of 10 MiB (${MAX_FILE_BYTES} bytes)`);
    case formidableErrors.noEmptyFiles:
    case formidableErrors.smallerThanMinFileSize:
      return errors.invalid('file is empty');
    case formidableErrors.maxFieldsSizeExceeded:
      return errors.invalid(`form fields are too large (limit ${MAX_FIELDS_BYTES / 1024} KiB in total)`);
    case formidableErrors.maxFieldsExceeded:
      return errors.invalid(`too many form fields (limit ${MAX_FIELDS})`);
    case formidableErrors.aborted:
      return errors.invalid('request body was cut short');
    case formidableErrors.missingMultipartBoundary:
      return errors.invalid('Content-Type multipart/form-data needs its boundary parameter');
    case formidableErrors.malformedMultipart:
    case formidableErrors.unknownTransferEncoding:
      return errors.invalid(MALFORMED);
    default:
      return /boundary|multipart|Unexpected end/i.test(err.message ?? '') ? errors.invalid(MALFORMED) : err;
  }
}

/** The uploaded `file`, if one was sent. */
export function uploadedFile(ctx: AppContext): UploadedFile | null {
  const other = Object.keys(ctx.request.files ?? {}).find((name) => name !== 'file');
  if (other !== undefined)
    throw errors.invalid(`the image must be sent in the field "file", not "${other.slice(0, 64)}"`);
  const f = ctx.request.files?.file;
  if (!f) return null;
  if (Array.isArray(f)) throw errors.invalid('only one file may be sent, in the field "file"');
  const { filepath: path, size } = f;
  return {
    path,
    size,
    sha256: String(f.hash),
    originalName: f.originalFilename ?? null,
    read: () => readWhole(path, size),
  };
}

/** Reads a temp file into an ArrayBuffer of its own, so it can be moved (not copied) to a worker. */
async function readWhole(path: string, size: number): Promise<ArrayBuffer> {
  const buf = new ArrayBuffer(size);
  const fh = await open(path, 'r');
  try {
    let off = 0;
    while (off < size) {
      const { bytesRead } = await fh.read(new Uint8Array(buf, off), 0, size - off, off);
      if (bytesRead === 0) break;
      off += bytesRead;
    }
  } finally {
    await fh.close();
  }
  return buf;
}
