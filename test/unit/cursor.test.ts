/**
 * Cursors are signed (issue 44, hardening): a client can hand back only a cursor the server made for that listing.
 * The property tests feed the decoder what a client may send (any string, and every one-byte edit of a real cursor)
 * and check it either returns exactly what was encoded or refuses with invalid_cursor, never anything else.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Cursors, listingId, type Cursor } from '../../src/domain/feeds/cursor.ts';
import { AppError } from '../../src/domain/errors.ts';

const listing = listingId(['feed', 'top', 20]);
const cursor: Cursor = {
  page: 3,
  after: {
    since: new Date('2026-11-29T00:00:00.000Z'),
    pos: { key: 12.5, createdAt: new Date('2026-11-28T10:00:00.000Z'), id: '0b5d7f7e-2a1c-4c1e-9a43-2a0c1f5e9d11' },
  },
};

const refused = (f: () => unknown): boolean => {
  try {
    f();
    return false;
  } catch (e) {
    if (e instanceof AppError && e.code === 'invalid_cursor') return true;
    throw e;
  }
};

test('a cursor round-trips under its key, and only there', () => {
  const a = new Cursors('a server secret of at least 32 characters');
  const text = a.encode(listing, cursor);
  assert.match(text, /^[A-Za-z0-9_-]+$/);
  assert.deepEqual(a.decode(listing, text), cursor);
  assert.deepEqual(new Cursors('a server secret of at least 32 characters').decode(listing, text), cursor);
  assert.ok(refused(() => new Cursors('another server secret, also 32 characters+').decode(listing, text)));
  assert.ok(
    refused(() => a.decode(listingId(['feed', 'new', 20]), text)),
    'another listing',
  );
});

test('a position forged within the same listing is refused as tampered with', () => {
  const a = new Cursors('a server secret of at least 32 characters');
  const bytes = Buffer.from(a.encode(listing, cursor), 'base64url');
  const json = bytes.subarray(0, -16).toString().replace('"0b5d7f7e', '"0b5d7f7f');
  const forged = Buffer.concat([Buffer.from(json), bytes.subarray(-16)]).toString('base64url');
  assert.throws(() => a.decode(listing, forged), { code: 'invalid_cursor', message: /tampered/ });
});

test('property: any string a client sends decodes to nothing but invalid_cursor', () => {
  const a = new Cursors('a server secret of at least 32 characters');
  const b64 = fc.stringMatching(/^[A-Za-z0-9_-]{0,600}$/);
  fc.assert(
    fc.property(fc.oneof(fc.string({ maxLength: 700 }), b64), (text) => refused(() => a.decode(listing, text))),
  );
});

test('property: every one-byte edit of a real cursor is refused', () => {
  const a = new Cursors('a server secret of at least 32 characters');
  const bytes = Buffer.from(a.encode(listing, cursor), 'base64url');
  fc.assert(
    fc.property(fc.nat({ max: bytes.length - 1 }), fc.integer({ min: 1, max: 255 }), (at, xor) => {
      const edited = Buffer.from(bytes);
      edited[at]! ^= xor;
      return refused(() => a.decode(listing, edited.toString('base64url')));
    }),
  );
});
