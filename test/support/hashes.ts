/**
 * 64-bit hashes (a pHash in 16 hex digits) for the near-duplicate tests and benchmarks: a seeded generator and
 * a hash at an exact Hamming distance from another.
 */

/** A linear congruential generator: deterministic, so a failure reproduces. */
export function lcgRandom(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32;
}

/** Eight hex digits of a 32-bit number. */
export const hex8 = (n: number): string => (n >>> 0).toString(16).padStart(8, '0');

/**
 * `hash` with exactly `bits` distinct bits flipped, drawn by `r` among the lowest `span` bits (64: any bit;
 * 63: never the top bit, which a pHash never sets).
 */
export function flipBits(hash: string, bits: number, r: () => number, span = 64): string {
  let v = BigInt(`0x${hash}`);
  const picked = new Set<number>();
  while (picked.size < bits) picked.add(Math.floor(r() * span));
  for (const b of picked) v ^= 1n << BigInt(b);
  return v.toString(16).padStart(16, '0');
}

/** A random 256-bit PDQ hash (64 hex digits). */
export const randomPdq = (r: () => number): string =>
  Array.from({ length: 8 }, () => hex8(Math.floor(r() * 2 ** 32))).join('');

/** A PDQ hash with exactly `bits` distinct random bits flipped. */
export function flipPdqBits(hash: string, bits: number, r: () => number): string {
  let v = BigInt(`0x${hash}`);
  const picked = new Set<number>();
  while (picked.size < bits) picked.add(Math.floor(r() * 256));
  for (const b of picked) v ^= 1n << BigInt(b);
  return v.toString(16).padStart(64, '0');
}
