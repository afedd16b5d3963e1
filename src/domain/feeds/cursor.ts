/**
 * Keyset positions (API.md, Listing and feeds): `next_cursor` names the last row of a page by its order's key, and
 * `cursor=` starts the next page right after it, reading only that page's rows however deep it is.
 *
 * A cursor is opaque to clients: base64url of a small JSON array and its MAC (HMAC-SHA256 under a key derived from
 * the server's secret, truncated to 128 bits), so a position a client made up, even within the same listing, is
 * refused as tampered with (`invalid_cursor`). It carries
 * - the listing it belongs to (a digest of its filters, sort and limit): another listing's cursor is refused;
 * - the page number it leads to (the envelope's `page` keeps counting);
 * - when the traversal began (its first page's rows were read): a ranked listing shows an upload whose ranks moved
 *   after that at the keys it had then (a journal of rank moves keeps them for RANK_MOVES_WINDOW_MS), so every
 *   upload is shown exactly once however votes move it; past that window it skips such uploads (at most once);
 * - the last row's key: its rank (absent for orders by time), creation time and id.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { AppError } from '../errors.ts';

/** Where a page ends: the last row's rank (null for orders by time), creation time and id. */
export interface ListPosition {
  key: number | null;
  createdAt: Date;
  id: string;
}

/** Where a page starts: after `pos`, skipping rows whose ranks moved after `since`. */
export interface ListAfter {
  since: Date;
  pos: ListPosition;
}

/**
 * Where a page starts: a number of rows in (at most MAX_OFFSET), or right after a cursor's position. After a cursor
 * of a ranked sort, `frozen`: the uploads whose ranks moved after `since` are listed at the keys they had then
 * (the journal of rank moves still covers `since`); else they are skipped.
 */
export type PageStart = { offset: number } | { after: ListAfter; frozen?: boolean };

/**
 * How long the journal of rank moves serves cursors: a ranked cursor whose traversal began longer ago than this
 * skips the uploads whose ranks moved since (at most once, as API.md allows) instead of listing them exactly once.
 */
export const RANK_MOVES_WINDOW_MS = 60 * 60_000;
/** The journal keeps its rows this much longer than the window: a page that began inside it finds them all. */
export const RANK_MOVES_KEEP_MS = RANK_MOVES_WINDOW_MS + 10 * 60_000;
/** Rows pruned per DELETE: a short write, however many are due. */
export const RANK_MOVES_PRUNE_BATCH = 1_000;

export interface Cursor {
  after: ListAfter;
  /** The page number the cursor leads to. */
  page: number;
}

/** Number pages stay as the spec says while `(page − 1) × limit` is at most this; deeper pages need a cursor. */
export const MAX_OFFSET = 10_000;
const VERSION = 1;
const MAX_CURSOR_LENGTH = 512;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const invalidCursor = (why: string) =>
  new AppError('invalid_cursor', `cursor is not a cursor of this listing (${why}): use next_cursor as it was given`);

/** A short digest of what makes a listing: its cursor is refused by any other. */
export function listingId(parts: ReadonlyArray<string | number | undefined | null>): string {
  return createHash('sha256')
    .update(parts.map((p) => String(p ?? '')).join('\u0000'))
    .digest('base64url')
    .slice(0, 12);
}

function payloadOf(listing: string, c: Cursor): Buffer {
  const { since, pos } = c.after;
  const json = [VERSION, listing, c.page, since.getTime(), pos.key, pos.createdAt.getTime(), pos.id];
  return Buffer.from(JSON.stringify(json));
}

function cursorOf(listing: string, payload: Buffer): Cursor {
  let value: unknown;
  try {
    value = JSON.parse(payload.toString('utf8'));
  } catch {
    throw invalidCursor('malformed');
  }
  if (!Array.isArray(value) || value.length !== 7 || value[0] !== VERSION) throw invalidCursor('malformed');
  const [, from, page, since, key, createdAt, id] = value as unknown[];
  if (from !== listing) throw invalidCursor('it belongs to another listing, sort or limit');
  const time = (t: unknown) => (Number.isSafeInteger(t) && (t as number) >= 0 ? new Date(t as number) : null);
  const sinceAt = time(since);
  const created = time(createdAt);
  if (
    !Number.isSafeInteger(page) ||
    (page as number) < 2 ||
    !sinceAt ||
    !created ||
    !(key === null || (typeof key === 'number' && Number.isFinite(key))) ||
    typeof id !== 'string' ||
    !UUID.test(id)
  ) {
    throw invalidCursor('malformed');
  }
  return {
    page: page as number,
    after: { since: sinceAt, pos: { key, createdAt: created, id } },
  };
}

/** Bytes of MAC a cursor ends with. */
const MAC_BYTES = 16;

/**
 * Encodes and checks cursors under one key. Every process that serves the same listings must use the same secret
 * (main.ts derives the key from JWT_SECRET, which they already share); without one (tests that build a service
 * alone) a random key serves this instance only.
 */
export class Cursors {
  readonly #key: Buffer;

  constructor(secret?: string) {
    this.#key = secret
      ? createHash('sha256').update('pixvote cursor mac v1\u0000').update(secret).digest()
      : randomBytes(32);
  }

  #mac(payload: Buffer): Buffer {
    return createHmac('sha256', this.#key).update(payload).digest().subarray(0, MAC_BYTES);
  }

  encode(listing: string, c: Cursor): string {
    const payload = payloadOf(listing, c);
    return Buffer.concat([payload, this.#mac(payload)]).toString('base64url');
  }

  decode(listing: string, text: string): Cursor {
    if (text.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(text)) throw invalidCursor('malformed');
    const bytes = Buffer.from(text, 'base64url');
    if (bytes.length <= MAC_BYTES) throw invalidCursor('malformed');
    const payload = bytes.subarray(0, bytes.length - MAC_BYTES);
    if (!timingSafeEqual(bytes.subarray(bytes.length - MAC_BYTES), this.#mac(payload)))
      throw invalidCursor('tampered with, or made by another server');
    return cursorOf(listing, payload);
  }
}

/** `page` beyond the number pages' ceiling: 400 `page_too_deep`, naming the way on. */
export function checkPageDepth(page: number, limit: number): void {
  if ((page - 1) * limit > MAX_OFFSET) {
    throw new AppError(
      'page_too_deep',
      `page ${page} at limit ${limit} starts past row ${MAX_OFFSET}: page on with cursor=<next_cursor> instead`,
    );
  }
}
