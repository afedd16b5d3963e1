import type { IncomingMessage } from 'node:http';
import type { AppContext } from './context.ts';
import { errors, type AppError } from '../domain/errors.ts';
import { MAX_FILE_BYTES } from '../domain/uploads/limits.ts';

/** The largest JSON request body (API.md: 1 MiB; 413 past it). */
export const JSON_LIMIT_BYTES = 1024 * 1024;

/** Form fields of a multipart upload (description, tags, URLs) are small; this bounds them all together. */
export const MULTIPART_FIELDS_BYTES = 64 * 1024;

/** The largest request body any route takes: a multipart upload of a 10 MiB file, its fields and its part headers. */
export const MAX_REQUEST_BYTES = MAX_FILE_BYTES + MULTIPART_FIELDS_BYTES + 16 * 1024;

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\b/i;

/**
 * 413 payload_too_large for a request whose declared Content-Length is more than any route would read (more
 * than a JSON body may be, for JSON), or null. Known from the headers alone: it is answered before a byte of
 * the body is read, and the connection is closed so the client stops sending.
 */
export function declaredOversize(req: IncomingMessage): AppError | null {
  const header = req.headers['content-length'];
  // Most requests have no body, and most bodies are small: one string length says so.
  if (header === undefined || header.length < 7) return null;
  const declared = Number(header);
  if (declared > MAX_REQUEST_BYTES) {
    return errors.payloadTooLarge(
      `request body is ${declared} bytes; an upload may be at most ${MAX_REQUEST_BYTES} bytes ` +
        `(a file up to 10 MiB, ${MAX_FILE_BYTES} bytes, with its form fields)`,
    );
  }
  if (declared > JSON_LIMIT_BYTES && JSON_TYPE.test(req.headers['content-type'] ?? '')) {
    return errors.payloadTooLarge(`JSON body is ${declared} bytes; the limit is 1 MiB (${JSON_LIMIT_BYTES} bytes)`);
  }
  return null;
}

/**
 * 413 at once for a body declared larger than any route reads, before a byte of it is read (the connection
 * closes, so the client stops sending). Called first by the body and authentication layer (app.ts), after the IP
 * rate limit, so the refusal is counted and limited.
 */
export function refuseDeclaredOversize(ctx: AppContext): void {
  const oversize = declaredOversize(ctx.req);
  if (!oversize) return;
  ctx.state.bodyRefusedUnread = true;
  throw oversize;
}
