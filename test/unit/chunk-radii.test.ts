/**
 * Multi-index hashing searches some chunks one bit less than plain pigeonhole (hamming.ts's chunkRadii). A match it
 * missed would be a blocklisted image let through or a near duplicate not caught, so the rule is tried on the
 * adversarial shapes: the flips of a match spread over the chunks as evenly as the distance allows, every split
 * fast-check can find, at every distance up to where the lookups switch to a scan, for the three users of the rule
 * (the SQL lookups' value lists, PhashSet and PdqSet in both layouts), each against its brute-force distance.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  BLOCKLIST_CHUNKS,
  UPLOAD_CHUNKS,
  candidateCount,
  chunkCandidates,
  chunkRadii,
  chunksOf,
  hammingHex,
  neighbourhoodSize,
  type ChunkLayout,
} from '../../src/store/similarity/hamming.ts';
import { PhashSet } from '../../src/store/moderation/phash-set.ts';
import {
  PDQ_CHUNKS,
  PdqSet,
  pdqCandidateKeys,
  pdqChunkKeys,
  pdqDistance,
} from '../../src/store/similarity/pdq-hamming.ts';

/** PDQ's layout as chunkRadii sees it: PDQ_CHUNKS equal chunks of its 256 bits. */
const PDQ_LAYOUT = Array<number>(PDQ_CHUNKS).fill(256 / PDQ_CHUNKS);

/** Per chunk, how many of up to `maxUnits` flips land in it: every split of the flips over the chunks can come out. */
const split = (chunks: number, maxUnits: number) =>
  fc.array(fc.nat(chunks - 1), { maxLength: maxUnits }).map((owners) => {
    const counts = Array<number>(chunks).fill(0);
    for (const c of owners) counts[c] = counts[c]! + 1;
    return counts;
  });

/** A hash of `bits` bits as hex (most significant first), random, from fast-check. */
const hashOf = (bits: number) => fc.bigInt({ min: 0n, max: (1n << BigInt(bits)) - 1n });
const hex = (v: bigint, bits: number) => v.toString(16).padStart(bits / 4, '0');

/**
 * `value` with `counts[i]` distinct bits flipped in chunk i of `layout` (most significant chunk first), the bits
 * chosen by `pick`: a hash exactly Σ counts away whose flips fall chunk by chunk as asked.
 */
function flipped(value: bigint, layout: ChunkLayout, counts: number[], pick: number[]): bigint {
  let top = layout.reduce((a, b) => a + b, 0);
  let out = value;
  let p = 0;
  layout.forEach((width, i) => {
    top -= width;
    const positions = Array.from({ length: width }, (_, b) => b);
    for (let k = 0; k < counts[i]!; k++) {
      const [b] = positions.splice(pick[p++ % pick.length]! % positions.length, 1);
      out ^= 1n << BigInt(top + b!);
    }
  });
  return out;
}

describe('chunkRadii: one chunk within its radius for every split of a match', () => {
  test('every split of at most d flips over m chunks leaves a chunk within its radius', () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 1, max: 16 })
          .chain((m) =>
            fc.integer({ min: 0, max: 64 }).chain((d) => fc.tuple(fc.constant(m), fc.constant(d), split(m, d))),
          ),
        ([m, d, counts]) => {
          const radii = chunkRadii(d, m);
          assert.ok(
            counts.some((x, i) => x <= radii[i]!),
            `m=${m} d=${d} split ${counts} radii ${radii}`,
          );
        },
      ),
      { numRuns: 3000 },
    );
  });

  test('never more lookups than plain pigeonhole, and the radii as the proposition gives them', () => {
    for (let d = 0; d <= 40; d++)
      for (const layout of [UPLOAD_CHUNKS, BLOCKLIST_CHUNKS]) {
        const plain = layout.reduce((s, bits) => s + neighbourhoodSize(Math.floor(d / layout.length), bits), 0);
        assert.ok(candidateCount(d, layout) <= plain, `d=${d}`);
      }
    assert.deepEqual(chunkRadii(8, 4), [2, 1, 1, 1]);
    assert.deepEqual(chunkRadii(4, 3), [1, 1, 0]);
    assert.deepEqual(chunkRadii(31, 16), Array(16).fill(1));
    assert.deepEqual(chunkRadii(1, 3), [0, 0, -1]);
    assert.deepEqual(chunkRadii(-1, 3), [-1, -1, -1]);
  });
});

describe('the lookups built on it find every match and nothing further', () => {
  for (const [name, layout, maxD] of [
    ['uploads (22/21/21, the near-duplicate check)', UPLOAD_CHUNKS, 14],
    ['blocklist (16×4)', BLOCKLIST_CHUNKS, 16],
  ] as const)
    test(`the SQL lookups' value lists, ${name}: a match at d is under one of them`, () => {
      fc.assert(
        fc.property(
          hashOf(64),
          fc.integer({ min: 0, max: maxD }).chain((d) => fc.tuple(fc.constant(d), split(layout.length, d))),
          fc.array(fc.nat(), { minLength: 1, maxLength: 16 }),
          (q, [d, counts], pick) => {
            const stored = hex(flipped(q, layout, counts, pick), 64);
            const query = hex(q, 64);
            assert.ok(hammingHex(stored, query) <= d);
            const lists = chunkCandidates(query, d, layout);
            const chunks = chunksOf(stored, layout);
            assert.ok(
              lists.some((values, i) => values.includes(chunks[i]!)),
              `d=${d} split ${counts}`,
            );
          },
        ),
        { numRuns: 400 },
      );
    });

  // The two in-memory sets, each in both layouts: a match within d is found, and at its exact distance minus one
  // bit (the boundary) refused.
  for (const set of [
    { name: 'PhashSet', bits: 64, chunks: BLOCKLIST_CHUNKS, maxD: 16, runs: 300, make: PhashSet, dist: hammingHex },
    {
      name: 'PdqSet',
      bits: 256,
      chunks: PDQ_LAYOUT,
      maxD: 40,
      runs: 200,
      make: PdqSet,
      dist: pdqDistance,
    },
  ])
    test(`${set.name} in both layouts: a match within d is found, and refused one bit under its distance`, () => {
      fc.assert(
        fc.property(
          hashOf(set.bits),
          fc.integer({ min: 0, max: set.maxD }).chain((d) => fc.tuple(fc.constant(d), split(set.chunks.length, d))),
          fc.array(fc.nat(), { minLength: 1, maxLength: 16 }),
          (q, [d, counts], pick) => {
            const query = hex(q, set.bits);
            const near = hex(flipped(q, set.chunks, counts, pick), set.bits);
            const at = set.dist(near, query);
            assert.ok(at <= d);
            assert.equal(new set.make([near], 0, 'probe').matches(query, d), true, `d=${d} split ${counts}`);
            assert.equal(new set.make([near], d).matches(query), true, `expand d=${d} split ${counts}`);
            assert.equal(new set.make([near], 0, 'probe').matches(query, at - 1), false);
            if (at > 0) assert.equal(new set.make([near], at - 1).matches(query), false);
          },
        ),
        { numRuns: set.runs },
      );
    });

  test('the PDQ keys the SQL lookup reads: a match within d shares one with the stored entry', () => {
    fc.assert(
      fc.property(
        hashOf(256),
        fc.integer({ min: 0, max: 40 }).chain((d) => fc.tuple(fc.constant(d), split(PDQ_CHUNKS, d))),
        fc.array(fc.nat(), { minLength: 1, maxLength: 16 }),
        (q, [d, counts], pick) => {
          const stored = new Set(pdqChunkKeys(hex(flipped(q, PDQ_LAYOUT, counts, pick), 256)));
          assert.ok(
            pdqCandidateKeys(hex(q, 256), d).some((k) => stored.has(k)),
            `d=${d} split ${counts}`,
          );
        },
      ),
      { numRuns: 200 },
    );
  });
});
