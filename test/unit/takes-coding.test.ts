/**
 * `takesCoding` (src/gateway/fresh.ts) reads a plain Accept-Encoding list itself, on the feed's hot path and for
 * the web pages and assets, and leaves q-values and `*` to Koa's negotiation: for any header a client could send,
 * whether br or gzip is acceptable must be what Koa's `acceptsEncodings` answers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import fc from 'fast-check';
import Koa from 'koa';
import { takesCoding } from '../../src/gateway/fresh.ts';

const koa = new Koa();
const contextFor = (header: string | undefined) =>
  koa.createContext(
    { headers: header === undefined ? {} : { 'accept-encoding': header }, url: '/', method: 'GET' } as IncomingMessage,
    {} as ServerResponse,
  );
const koaSays = (header: string | undefined, coding: 'br' | 'gzip') =>
  contextFor(header).acceptsEncodings(coding) === coding;

const coding = fc.constantFrom('gzip', 'GZIP', 'Gzip', 'x-gzip', 'br', 'BR', 'deflate', 'zstd', 'identity', '*', '');
// Plain lists (no q-value) are what takesCoding reads itself: most headers generated are such.
const q = fc.oneof(
  { weight: 4, arbitrary: fc.constant('') },
  {
    weight: 1,
    arbitrary: fc.constantFrom(';q=0', ';q=0.0', ';q=1', ';q=0.5', ';Q=0', ';q=0.001', ' ; q=0', ';level=1'),
  },
);
const header = fc
  .array(fc.tuple(coding, q, fc.constantFrom('', ' ', '  ', '\t')), { maxLength: 5 })
  .map((parts) => parts.map(([c, w, s]) => `${s}${c}${w}`).join(','));

test('takesCoding answers as Koa negotiates, for br and gzip and any Accept-Encoding', () => {
  const fixed = [
    [undefined, false, false],
    ['', false, false],
    ['gzip, deflate, br, zstd', true, true],
    ['gzip', false, true],
    ['*', true, true],
    ['*,identity', true, true],
    ['br;q=0, gzip', false, true],
    ['gzip;q=0, identity', false, false],
    ['identity, gzip', false, true],
  ] as const;
  for (const [h, br, gzip] of fixed) {
    assert.equal(takesCoding(contextFor(h), 'br'), br, `br: ${JSON.stringify(h)}`);
    assert.equal(takesCoding(contextFor(h), 'gzip'), gzip, `gzip: ${JSON.stringify(h)}`);
    assert.equal(koaSays(h, 'br'), br, `Koa, br: ${JSON.stringify(h)}`);
    assert.equal(koaSays(h, 'gzip'), gzip, `Koa, gzip: ${JSON.stringify(h)}`);
  }
  fc.assert(
    fc.property(
      fc.oneof(header, fc.string({ maxLength: 40 })),
      fc.constantFrom('br' as const, 'gzip' as const),
      (h, c) => takesCoding(contextFor(h), c) === koaSays(h, c),
    ),
    { numRuns: 5000 },
  );
});
