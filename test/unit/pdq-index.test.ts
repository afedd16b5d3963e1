/**
 * The PDQ blocklist's multi-index hashing (src/store/similarity/pdq-hamming.ts): the distance, the keys an entry is
 * stored under and looked up by, and the in-memory set the hold job scans with, each against a brute-force
 * Hamming distance, including the worst case of the pigeonhole (31 bits spread so that only one chunk is within
 * one bit).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  PdqSet,
  pdqCandidateKeys,
  pdqChunkKeys,
  pdqDistance,
  pdqRadii,
} from '../../src/store/similarity/pdq-hamming.ts';
import { flipPdqBits as flipRandom, lcgRandom, randomPdq } from '../support/hashes.ts';

/** `hash` with the given bit positions (0 = least significant) flipped. */
function flip(hash: string, bits: Iterable<number>): string {
  let v = BigInt(`0x${hash}`);
  for (const b of bits) v ^= 1n << BigInt(b);
  return v.toString(16).padStart(64, '0');
}

/** Hamming distance digit by digit (independent of the words and popcount the code uses). */
const brute = (a: string, b: string) => {
  let n = 0;
  for (let i = 0; i < a.length; i++) {
    let x = parseInt(a[i]!, 16) ^ parseInt(b[i]!, 16);
    while (x) {
      n += x & 1;
      x >>= 1;
    }
  }
  return n;
};

describe('PDQ multi-index hashing', () => {
  test('the distance is the popcount of the XOR of the 256 bits', () => {
    const r = lcgRandom(1);
    for (let i = 0; i < 200; i++) {
      const a = randomPdq(r);
      const b = i % 2 ? randomPdq(r) : flipRandom(a, i % 64, r);
      assert.equal(pdqDistance(a, b), brute(a, b));
    }
    assert.equal(pdqDistance('0'.repeat(64), 'f'.repeat(64)), 256);
    assert.throws(() => pdqDistance('0'.repeat(63), '0'.repeat(64)), /64 lowercase hex/);
  });

  test('16 keys per entry, 272 lookups at distance 31 (radius 1), and the entry is among them', () => {
    const r = lcgRandom(2);
    const h = randomPdq(r);
    assert.equal(pdqChunkKeys(h).length, 16);
    assert.deepEqual(pdqRadii(31), Array(16).fill(1));
    assert.deepEqual(pdqRadii(15), Array(16).fill(0));
    // 20 = 16 + 4: five chunks within one bit, the other eleven exact (hamming.ts's chunkRadii).
    assert.deepEqual(pdqRadii(20), [...Array(5).fill(1), ...Array(11).fill(0)]);
    assert.equal(pdqCandidateKeys(h, 20).length, 5 * 17 + 11);
    const keys = pdqCandidateKeys(h, 31);
    assert.equal(keys.length, 16 * 17);
    for (const k of pdqChunkKeys(h)) assert.ok(keys.includes(k));
    assert.equal(pdqCandidateKeys(h, 15).length, 16);
  });

  test('pigeonhole worst case: 31 bits with two in each of 15 chunks and one in the last still share a key', () => {
    const r = lcgRandom(3);
    for (let last = 0; last < 16; last++) {
      const h = randomPdq(r);
      const bits: number[] = [];
      for (let c = 0; c < 16; c++) {
        const base = (15 - c) * 16; // chunk c holds bits base..base+15 (chunk 0 most significant)
        bits.push(base + 3);
        if (c !== last) bits.push(base + 11);
      }
      const far = flip(h, bits);
      assert.equal(brute(h, far), 31);
      const stored = new Set(pdqChunkKeys(far));
      assert.ok(
        pdqCandidateKeys(h, 31).some((k) => stored.has(k)),
        `chunk ${last} (one bit off) is found`,
      );
      assert.ok(new PdqSet([far], 31).matches(h));
      assert.ok(new PdqSet([far], 31, 'probe').matches(h));
      // One bit more in that chunk: 32 bits, no chunk within one bit, and no match.
      const beyond = flip(far, [(15 - last) * 16 + 11]);
      assert.equal(brute(h, beyond), 32);
      assert.ok(!pdqCandidateKeys(h, 31).some((k) => new Set(pdqChunkKeys(beyond)).has(k)));
      assert.ok(!new PdqSet([beyond], 31).matches(h));
      assert.ok(!new PdqSet([beyond], 31, 'probe').matches(h));
    }
  });

  for (const layout of ['expand', 'probe'] as const)
    test(`PdqSet (${layout}) answers as a brute-force scan does, near the boundary and far from it`, () => {
      const r = lcgRandom(4);
      const entries = Array.from({ length: 500 }, () => randomPdq(r));
      const set = new PdqSet(entries, 31, layout);
      const queries = [
        ...Array.from({ length: 300 }, (_, i) => flipRandom(entries[i % entries.length]!, 25 + (i % 12), r)),
        ...Array.from({ length: 300 }, () => randomPdq(r)),
      ];
      let matched = 0;
      for (const q of queries) {
        const expected = entries.some((e) => brute(e, q) <= 31);
        assert.equal(set.matches(q), expected, q);
        if (expected) matched++;
      }
      assert.ok(matched > 100 && matched < 300, `both answers are exercised (${matched} matches)`);
    });

  test('PdqSet (probe) answers at any distance asked (the upload check’s copy, any BLOCKLIST_PDQ_DISTANCE)', () => {
    const r = lcgRandom(5);
    const entries = Array.from({ length: 200 }, () => randomPdq(r));
    const set = new PdqSet(entries, 0, 'probe');
    for (const d of [0, 15, 16, 40]) {
      const queries = Array.from({ length: 60 }, (_, i) => flipRandom(entries[i]!, Math.max(1, d - 3 + (i % 7)), r));
      for (const q of queries)
        assert.equal(
          set.matches(q, d),
          entries.some((e) => brute(e, q) <= d),
          `d=${d} ${q}`,
        );
    }
    assert.equal(set.matches(entries[0]!, -1), false, 'a negative distance: not checked');
    assert.throws(() => new PdqSet(entries, 31).matches(entries[0]!, 30), /within 31/);
  });
});
