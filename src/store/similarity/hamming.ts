/**
 * 64-bit perceptual hashes as 16 hex characters, their chunks for multi-index hashing, and chunk neighbourhoods.
 *
 * Two layouts: the uploads' three chunks of 22, 21 and 21 bits (columns mih0..mih2), and the blocklist's four of
 * 16 (ph0..ph3, which PhashSet's in-memory buckets also use). Within a distance d, two hashes agree within ⌊d/m⌋
 * bits on at least one of m chunks (pigeonhole), so each chunk is looked up with its neighbourhood of a radius
 * (chunkRadii: some chunks one bit less). With three chunks the default d = 4 needs radius 1 on two chunks and 0 on
 * the third (23 + 22 + 1 lookups), and each lookup matches N ÷ 2²¹ stored hashes instead of N ÷ 2¹⁶: about 220
 * candidates at 10M uploads instead of ~10 000 (bench/README.md, "Near-duplicate lookup").
 */

export const HASH_HEX = /^[0-9a-f]{16}$/;

/** A chunk layout: the chunks' widths in bits, most significant first, summing to 64. */
export type ChunkLayout = readonly number[];

/** The uploads' layout (m021): a pHash never sets its top bit, so each chunk has 21 bits that vary. */
export const UPLOAD_CHUNKS: ChunkLayout = [22, 21, 21];
/** The blocklist's layout (m009), and PhashSet's. */
export const BLOCKLIST_CHUNKS: ChunkLayout = [16, 16, 16, 16];

/** `width` bits of the hash from bit `shift` up (bit 0 the least significant): one chunk's value. */
export function bitsOf(hex: string, shift: number, width: number): number {
  return bits(parseHash(hex), shift, width);
}

/** The hash split into chunks of `layout`, most significant first (parsed once). */
export function chunksOf(hex: string, layout: ChunkLayout = BLOCKLIST_CHUNKS): number[] {
  const value = parseHash(hex);
  let shift = 64;
  return layout.map((width) => bits(value, (shift -= width), width));
}

function parseHash(hex: string): bigint {
  if (!HASH_HEX.test(hex)) throw new Error(`expected 16 lowercase hex characters for a perceptual hash, got "${hex}"`);
  return BigInt(`0x${hex}`);
}

function bits(value: bigint, shift: number, width: number): number {
  return Number((value >> BigInt(shift)) & ((1n << BigInt(width)) - 1n));
}

type ChunkColumns<K extends string> = Record<K, number | null>;

/** The uploads' chunk columns of a hash (null for none), as every writer of an upload row stores them. */
export function uploadChunkColumns(phash: string | null): ChunkColumns<'mih0' | 'mih1' | 'mih2'> {
  const [mih0 = null, mih1 = null, mih2 = null] = phash ? chunksOf(phash, UPLOAD_CHUNKS) : [];
  return { mih0, mih1, mih2 };
}

/** The blocklist's chunk columns of a hash (null for none). */
export function blocklistChunkColumns(phash: string | null): ChunkColumns<'ph0' | 'ph1' | 'ph2' | 'ph3'> {
  const [ph0 = null, ph1 = null, ph2 = null, ph3 = null] = phash ? chunksOf(phash, BLOCKLIST_CHUNKS) : [];
  return { ph0, ph1, ph2, ph3 };
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

/** Every `bits`-bit value within `radius` bit flips of `value` (for 16 bits: 1 + 16 + 120 + … values). */
export function neighbours(value: number, radius: number, bits = 16): number[] {
  const out = [value];
  const walk = (v: number, from: number, left: number) => {
    for (let bit = from; bit < bits; bit++) {
      const flipped = v ^ (1 << bit);
      out.push(flipped);
      if (left > 1) walk(flipped, bit + 1, left - 1);
    }
  };
  if (radius > 0) walk(value, 0, radius);
  return out;
}

const masks = new Map<number, Int32Array>();

/**
 * `neighbours(0, radius)` of 16-bit values, listed once per radius: a value's neighbours are the value XOR each.
 * The in-memory sets read buckets by these without allocating per query.
 */
export function neighbourMasks(radius: number): Int32Array {
  let m = masks.get(radius);
  if (!m) masks.set(radius, (m = Int32Array.from(neighbours(0, Math.max(radius, 0)))));
  return m;
}

/** How many values `neighbours` returns, without listing them: Σ C(bits, k) for k ≤ radius. */
export function neighbourhoodSize(radius: number, bits: number): number {
  let total = 0;
  let c = 1;
  for (let k = 0; k <= Math.min(radius, bits); k++) {
    total += c;
    c = (c * (bits - k)) / (k + 1);
  }
  return total;
}

/**
 * The radius each of `chunks` chunks is searched within for every match at `maxDistance` (−1: that chunk is not
 * searched). With d = m·r + a (0 ≤ a < m), a match lies within r bits on one of the first a + 1 chunks or within
 * r − 1 on one of the others: were the first a + 1 chunks each ≥ r + 1 bits apart and the rest ≥ r, the hashes would
 * differ by ≥ m·r + a + 1 = d + 1 bits (Norouzi, Punjani and Fleet, "Fast Search in Hamming Space with Multi-Index
 * Hashing", CVPR 2012, proposition 1). Plain pigeonhole (every chunk within r) probes more for the same answers: at
 * d = 8 over four 16-bit chunks 4 × 137 = 548 values against 137 + 3 × 17 = 188; at d = 4 over the uploads' three
 * 67 against 46. When a = m − 1 (PDQ at 31 over 16 chunks) the two agree.
 */
export function chunkRadii(maxDistance: number, chunks: number): number[] {
  if (maxDistance < 0) return Array.from({ length: chunks }, () => -1);
  const r = Math.floor(maxDistance / chunks);
  const a = maxDistance - r * chunks;
  return Array.from({ length: chunks }, (_, i) => (i <= a ? r : r - 1));
}

const radiusMasks = new Map<string, Int32Array[]>();

/**
 * Per chunk, the masks its 16-bit buckets are read (or filed) with at `maxDistance`: neighbourMasks of its
 * chunkRadii radius, none for a chunk not searched. Listed once per distance, for the in-memory sets.
 */
export function chunkMasks(maxDistance: number, chunks: number): Int32Array[] {
  const key = `${maxDistance}/${chunks}`;
  let m = radiusMasks.get(key);
  if (!m) {
    const radii = chunkRadii(maxDistance, chunks);
    radiusMasks.set(key, (m = radii.map((r) => (r < 0 ? new Int32Array(0) : neighbourMasks(r)))));
  }
  return m;
}

/**
 * Multi-index hashing: each chunk's neighbourhood of its radius (chunkRadii; empty for a chunk not searched) —
 * exact, not a filter, for any d; the lists grow with d (neighbourhoodSize).
 */
export function chunkCandidates(hex: string, maxDistance: number, layout: ChunkLayout = BLOCKLIST_CHUNKS): number[][] {
  const radii = chunkRadii(maxDistance, layout.length);
  return chunksOf(hex, layout).map((c, i) => (radii[i]! < 0 ? [] : neighbours(c, radii[i]!, layout[i])));
}

/** The number of values chunkCandidates would list for a distance: what a lookup probes. */
export function candidateCount(maxDistance: number, layout: ChunkLayout): number {
  const radii = chunkRadii(maxDistance, layout.length);
  return layout.reduce((sum, bits, i) => sum + neighbourhoodSize(radii[i]!, bits), 0);
}
