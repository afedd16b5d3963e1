/**
 * `wantsGzip` (src/gateway/fresh.ts) reads a plain Accept-Encoding list itself, on the feed's hot path, and leaves
 * q-values to Koa's negotiation: for any header a client could send, it must answer what Koa's `acceptsEncodings`
 * answers (gzip preferred over identity when both are acceptable).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import fc from 'fast-check';
import Koa from 'koa';
import { wantsGzip } from '../../src/gateway/fresh.ts';

const koa = new Koa();
const contextFor = (header: string | undefined) =>
  koa.createContext(
    { headers: header === undefined ? {} : { 'accept-encoding': header }, url: '/', method: 'GET' } as IncomingMessage,
    {} as ServerResponse,
  );
const koaSays = (header: string | undefined) => contextFor(header).acceptsEncodings('gzip', 'identity') === 'gzip';

const coding = fc.constantFrom('gzip', 'GZIP', 'Gzip', 'x-gzip', 'br', 'deflate', 'zstd', 'identity', '*', 'gzip2', '');
// Plain lists (no q-value) are what wantsGzip reads itself: most headers generated are such.
const q = fc.oneof(
  { weight: 4, arbitrary: fc.constant('') },
  {
    weight: 1,
    arbitrary: fc.constantFrom(';q=0', ';q=0.0', ';q=1', ';q=0.5', ';Q=0', ';q=0.001', ' ; q=0', ';level=1'),
  },
);
const header = fc
  .array(fc.tuple(coding, q, fc.constantFrom('', ' ', '  ')), { maxLength: 5 })
  .map((parts) => parts.map(([c, w, s]) => `${s}${c}${w}`).join(','));

test('wantsGzip answers as Koa negotiates, for any Accept-Encoding', () => {
  for (const h of [
    undefined,
    '',
    'gzip',
    'gzip, deflate, br',
    'br',
    '*',
    'identity',
    'gzip;q=0, identity',
    ' gzip ',
    // Found by the property below: an explicit identity outranks gzip matched by `*`, and an earlier one a later gzip.
    '*,identity',
    'identity, gzip',
    'gzip, identity',
    'GZIP, IDENTITY',
  ]) {
    assert.equal(wantsGzip(contextFor(h)), koaSays(h), JSON.stringify(h));
  }
  fc.assert(
    fc.property(fc.oneof(header, fc.string({ maxLength: 40 })), (h) => wantsGzip(contextFor(h)) === koaSays(h)),
    { numRuns: 5000 },
  );
});
