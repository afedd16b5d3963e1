/** 64-bit perceptual hashes as 16 hex characters, their four 16-bit chunks, and chunk neighbourhoods. */

export const HASH_HEX = /^[0-9a-f]{16}$/;

/** The hash split into four 16-bit chunks, most significant first (columns ph0..ph3). */
export function chunksOf(hex: string): [number, number, number, number] {
  if (!HASH_HEX.test(hex)) throw new Error(`expected 16 lowercase hex characters for a perceptual hash, got "${hex}"`);
  return [0, 4, 8, 12].map((i) => parseInt(hex.slice(i, i + 4), 16)) as [number, number, number, number];
}

/** Set bits of a 32-bit value (SWAR popcount). */
export function popcount32(v: number): number {
  v -= (v >>> 1) & 0x55555555;
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** Hamming distance of two 16-hex-digit hashes, as two 32-bit halves (no BigInt: this runs per candidate row). */
export function hammingHex(a: string, b: string): number {
  return (
    popcount32((parseInt(a.slice(0, 8), 16) ^ parseInt(b.slice(0, 8), 16)) >>> 0) +
    popcount32((parseInt(a.slice(8, 16), 16) ^ parseInt(b.slice(8, 16), 16)) >>> 0)
  );
}

/** Every 16-bit value within `radius` bit flips of `value` (1 + 16 + 120 + … values). */
export function neighbours16(value: number, radius: number): number[] {
  const out = [value];
  const walk = (v: number, from: number, left: number) => {
    for (let bit = from; bit < 16; bit++) {
      const flipped = v ^ (1 << bit);
      out.push(flipped);
      if (left > 1) walk(flipped, bit + 1, left - 1);
    }
  };
  if (radius > 0) walk(value, 0, radius);
  return out;
}

/**
 * Multi-index hashing: two hashes within distance d agree within ⌊d/4⌋ bits on at least one of the four
 * chunks (pigeonhole), so looking up each chunk's neighbourhood of that radius finds every match — exact,
 * not a filter, for any d (the lists grow: 17 values per chunk up to d = 7, 137 up to d = 11).
 */
export function chunkCandidates(hex: string, maxDistance: number): number[][] {
  const radius = Math.floor(maxDistance / 4);
  return chunksOf(hex).map((c) => neighbours16(c, radius));
}
