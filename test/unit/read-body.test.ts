/**
 * readBody, the one reading of a resumable upload's body (the whole-file path, the disk parts and the object-store
 * parts): at most `max` bytes (413 payload_too_large past them, naming what was left), each chunk handed on with the
 * bytes before it, and a body that breaks off answered with what arrived, not thrown. Chunks of any sizes, with or
 * without a break, generated.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { readBody } from '../../src/domain/uploads/resumable.ts';
import { AppError } from '../../src/domain/errors.ts';

async function* body(chunks: Uint8Array[], breakAfter: number | null): AsyncIterable<Uint8Array> {
  for (const [i, c] of chunks.entries()) {
    if (i === breakAfter) throw Object.assign(new Error('aborted'), { code: 'ECONNRESET' });
    yield c;
  }
}

test('readBody: every byte up to max handed on in order, 413 past it, a broken body answers what arrived', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.integer({ min: 0, max: 300 }), { maxLength: 12 }),
      // The limit near the body's length, often exactly it: where an off-by-one would show.
      fc.oneof(fc.constant(0), fc.integer({ min: -40, max: 40 })),
      fc.option(fc.nat({ max: 12 }), { nil: null }),
      async (sizes, slack, breakAt) => {
        const chunks = sizes.map((n, i) => new Uint8Array(n).fill(i));
        const max = Math.max(0, sizes.reduce((a, b) => a + b, 0) + slack);
        const seen: Array<[number, number]> = [];
        const breakAfter = breakAt !== null && breakAt < chunks.length ? breakAt : null;
        const delivered = breakAfter === null ? chunks : chunks.slice(0, breakAfter);
        // Where the body would first go past max (before a break cuts it short), if it does.
        let total = 0;
        let over = false;
        for (const c of delivered) {
          if (total + c.length > max) {
            over = true;
            break;
          }
          total += c.length;
        }
        const run = readBody(body(chunks, breakAfter), max, (c, at) => void seen.push([at, c.length]));
        if (over) {
          await assert.rejects(run, (e: unknown) => {
            assert.ok(e instanceof AppError);
            assert.equal(e.code, 'payload_too_large');
            assert.match(e.message, new RegExp(`\\(${max} bytes were left to send\\)`));
            return true;
          });
        } else {
          assert.deepEqual(await run, { size: total, broken: breakAfter !== null });
        }
        // Handed on in order, each with the bytes before it, never past max.
        let at = 0;
        for (const [from, n] of seen) {
          assert.equal(from, at);
          at += n;
        }
        assert.ok(at <= max);
        assert.equal(at, total);
      },
    ),
    { numRuns: 300 },
  );
});

test('readBody: a failure of the receiver is a broken body (as the disk store had it), a 413 is not', async () => {
  const two = [new Uint8Array(10), new Uint8Array(10)];
  let calls = 0;
  const r = await readBody(body(two, null), 100, () => {
    if (++calls === 2) throw new Error('EIO');
  });
  assert.deepEqual(r, { size: 10, broken: true });
});
