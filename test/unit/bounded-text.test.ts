/**
 * The free-text rule of every request field with a limit in characters (`boundedText`, src/gateway/schemas/
 * common.schemas.ts), against oracles that do not share its code: what UTF-8 makes of the text (the databases store
 * UTF-8: a text is well-formed when it survives the round trip) and how many characters UTF-8 encodes (its bytes that
 * are not continuation bytes). Texts mix ASCII, scripts with combining marks, astral characters (two UTF-16 units)
 * and lone surrogates, high or low, at any place, around each limit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { boundedText, charCount } from '../../src/gateway/schemas/common.schemas.ts';

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** Well-formed: UTF-8 can carry it unchanged (a lone surrogate becomes U+FFFD on the way). */
const wellFormed = (s: string) => decoder.decode(encoder.encode(s)) === s;
/** Characters as UTF-8 counts them: its leading bytes (a well-formed text only). */
const utf8Chars = (s: string) => encoder.encode(s).filter((b) => (b & 0xc0) !== 0x80).length;

const piece = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 4 }) },
  { weight: 3, arbitrary: fc.constantFrom('é', 'हिन्दी', 'ש\u05b8', '中', 'ß', '\u0301', 'İ') },
  { weight: 3, arbitrary: fc.integer({ min: 0x10000, max: 0x10ffff }).map((c) => String.fromCodePoint(c)) },
  { weight: 1, arbitrary: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)) },
);
/** Around a limit: up to ~1.5× it, often just over or under. */
const around = (max: number) =>
  fc.array(piece, { minLength: Math.floor(max / 2), maxLength: max }).map((parts) => parts.join(''));

test('accepted exactly when well-formed and within the limit counted in characters; the message says which', () => {
  let accepted = 0;
  let tooLong = 0;
  let lone = 0;
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 40 }).chain((max) => fc.tuple(fc.constant(max), around(max))),
      ([max, s]) => {
        const r = boundedText('field', { max }).safeParse(s);
        const ok = wellFormed(s) && utf8Chars(s) <= max;
        assert.equal(r.success, ok, JSON.stringify(s));
        if (r.success) {
          accepted++;
          assert.equal(r.data, s);
          return;
        }
        const message = r.error.issues.map((i) => i.message).join('; ');
        assert.match(message, /^field /);
        if (!wellFormed(s)) {
          lone++;
          assert.match(message, /lone UTF-16 surrogate \(\\u[0-9a-f]{4} at character \d+\)/);
        } else {
          tooLong++;
          assert.equal(message, `field is ${utf8Chars(s)} characters; the limit is ${max}`);
        }
      },
    ),
    { numRuns: 2000 },
  );
  // The generator reaches every outcome (measured over seeds: ~430 accepted, ~370 too long, ~1 200 lone of 2 000), so
  // a generator that stopped making one would fail here rather than pass vacuously; the bar sits far under each.
  for (const [what, n] of Object.entries({ accepted, tooLong, lone })) assert.ok(n >= 150, `${what}: ${n} of 2000`);
});

test('the place a lone surrogate is named at is its place in characters', () => {
  fc.assert(
    fc.property(around(20), fc.integer({ min: 0xd800, max: 0xdfff }), around(20), (head, unit, tail) => {
      fc.pre(wellFormed(head));
      // A high surrogate before a low one at the start of the tail would pair with it: not lone.
      fc.pre(!(unit <= 0xdbff && /^[\udc00-\udfff]/.test(tail)));
      const s = head + String.fromCharCode(unit) + tail;
      const r = boundedText('note', { max: 10_000 }).safeParse(s);
      assert.equal(r.success, false);
      assert.ok(
        r.error.issues[0]!.message.includes(`\\u${unit.toString(16)} at character ${utf8Chars(head) + 1})`),
        r.error.issues[0]!.message,
      );
    }),
    { numRuns: 500 },
  );
});

test('a minimum counts characters too, trimming comes first, and charCount agrees with UTF-8', () => {
  const password = boundedText('password', { max: 256, min: 8, minMessage: 'password must be at least 8 characters' });
  assert.equal(password.safeParse('🐈'.repeat(8)).success, true);
  assert.equal(password.safeParse('🐈'.repeat(7)).error?.issues[0]?.message, 'password must be at least 8 characters');
  const name = boundedText('name', { max: 3, min: 1, minMessage: 'name must not be empty', trim: true });
  assert.equal(name.safeParse('  🐈🐈🐈  ').data, '🐈🐈🐈');
  assert.equal(name.safeParse('   ').error?.issues[0]?.message, 'name must not be empty');
  fc.assert(
    fc.property(fc.string({ unit: 'binary' }), (s) => assert.equal(charCount(s), utf8Chars(s))),
    { numRuns: 1000 },
  );
});
