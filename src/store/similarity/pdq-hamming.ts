/**
 * PDQ hashes (256 bits as 64 lowercase hex characters, as python-threatexchange writes them): their Hamming
 * distance, and multi-index hashing over sixteen 16-bit chunks. Two hashes within distance d differ by at most
 * ⌊d/16⌋ bits on at least one chunk (pigeonhole: sixteen chunks each ≥ ⌊d/16⌋ + 1 apart sum to more than d), so
 * looking up each chunk's values within that radius finds every match — exact, not a filter (under 31, some chunks
 * one bit less unless d mod 16 = 15: hamming.ts's chunkRadii). At d = 31 that is the
 * chunk's value and its 16 one-bit neighbours: 16 × 17 = 272 keys, each naming ~100k × 16 / 65 536 ≈ 25 entries
 * spread over 272 keys ≈ 420 candidates at 100k uniformly random entries (python-threatexchange's PDQ index and
 * HMA use the same scheme through faiss's binary multi-index hashing; 8-bit chunks would give ~12 500 candidates).
 * A key is `position × 65 536 + value`: one integer column, one index.
 */
import { chunkMasks, chunkRadii, neighbourMasks, neighbours, popcount32 } from './hamming.ts';

export const PDQ_HEX = /^[0-9a-f]{64}$/;
export const PDQ_CHUNKS = 16;

/** The hash as eight 32-bit words, most significant first. */
export function pdqWords(hex: string): Uint32Array {
  const out = new Uint32Array(8);
  writePdqWords(hex, out, 0);
  return out;
}

/** One hash's bytes, decoded by Buffer (several times faster than eight parseInt calls over slices). */
const scratch = Buffer.alloc(32);

/** Writes the hash's eight words into `out` from `at` on. */
function writePdqWords(hex: string, out: Uint32Array, at: number): void {
  if (!PDQ_HEX.test(hex)) throw new Error(`expected 64 lowercase hex characters for a PDQ hash, got "${hex}"`);
  scratch.write(hex, 'hex');
  for (let i = 0; i < 8; i++) out[at + i] = scratch.readUInt32BE(i * 4);
}

/** Hamming distance of two PDQ hashes as words. */
export function pdqDistanceWords(a: Uint32Array, b: Uint32Array, aAt = 0, bAt = 0): number {
  let n = 0;
  for (let i = 0; i < 8; i++) n += popcount32((a[aAt + i]! ^ b[bAt + i]!) >>> 0);
  return n;
}

/**
 * Whether the hash at `aAt` of `a` lies within `max` of `b`, stopping at the first words whose bits already differ
 * by more (two random hashes do after two or three of the eight: a miss, the common case, reads ~3 words per
 * candidate, not 8).
 */
export function pdqWithin(a: Uint32Array, aAt: number, b: Uint32Array, max: number): boolean {
  let n = 0;
  for (let i = 0; i < 8; i++) if ((n += popcount32((a[aAt + i]! ^ b[i]!) >>> 0)) > max) return false;
  return true;
}

/** Hamming distance of two PDQ hashes in hex. */
export function pdqDistance(a: string, b: string): number {
  return pdqDistanceWords(pdqWords(a), pdqWords(b));
}

/** The sixteen 16-bit chunks, most significant first. */
export function pdqChunks(hex: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < PDQ_CHUNKS; i++) out.push(parseInt(hex.slice(i * 4, i * 4 + 4), 16));
  return out;
}

/** The chunk keys an entry is stored under (one per chunk). */
export function pdqChunkKeys(hex: string): number[] {
  if (!PDQ_HEX.test(hex)) throw new Error(`expected 64 lowercase hex characters for a PDQ hash, got "${hex}"`);
  return pdqChunks(hex).map((v, i) => i * 65536 + v);
}

/**
 * The radius each chunk is searched within for matches at `maxDistance` (hamming.ts's chunkRadii: −1 for a chunk not
 * searched). At 31 every chunk within one bit; at 20 five chunks within one bit and eleven exactly (96 keys, not 272).
 */
export const pdqRadii = (maxDistance: number): number[] => chunkRadii(maxDistance, PDQ_CHUNKS);

/** The masks each chunk is searched with at `maxDistance` (none for a chunk not searched). */
const pdqMasks = (maxDistance: number) => chunkMasks(maxDistance, PDQ_CHUNKS);

/** The keys to look up for the hashes within `maxDistance` of `hex` (272 at distance 31). */
export function pdqCandidateKeys(hex: string, maxDistance: number): number[] {
  const radii = pdqRadii(maxDistance);
  return pdqChunks(hex).flatMap((v, i) => (radii[i]! < 0 ? [] : neighbours(v, radii[i]!).map((n) => i * 65536 + n)));
}

/**
 * A set of PDQ hashes asked "is any of you within d of this hash?". Two layouts of the same buckets (one flat array
 * per chunk: offsets, then members, as PhashSet's):
 * - `expand` (the hold job's scan: a few thousand entries, a million queries): each hash is filed under every value
 *   within the radius of each of its chunks (17 per chunk at d = 31), so a query reads sixteen buckets;
 * - `probe` (the upload's lookup: 100k entries, one query per upload): each hash is filed under its own sixteen
 *   chunk values (16 postings per entry, ~10 MB at 100k), and a query reads the 272 buckets within the radius.
 * Either way a candidate's distance is checked on its eight 32-bit words.
 */
export class PdqSet {
  readonly #words: Uint32Array;
  readonly #maxDistance: number;
  readonly #probe: boolean;
  readonly #offsets: Uint32Array[] = [];
  readonly #members: Int32Array[] = [];

  constructor(hashes: readonly string[], maxDistance: number, layout: 'expand' | 'probe' = 'expand') {
    this.#maxDistance = maxDistance;
    this.#probe = layout === 'probe';
    const n = hashes.length;
    this.#words = new Uint32Array(n * 8);
    hashes.forEach((h, i) => writePdqWords(h, this.#words, i * 8));
    // Typed arrays only, no array per hash: 300k entries build in tens of milliseconds, not seconds (the hold job
    // and the upload's cache build this on the event loop). A chunk's neighbours are its value XOR these masks.
    const filed = this.#probe ? null : pdqMasks(maxDistance);
    const words = this.#words;
    for (let c = 0; c < PDQ_CHUNKS; c++) {
      const masks = filed ? filed[c]! : neighbourMasks(0);
      const at = c >> 1;
      const shift = c & 1 ? 0 : 16;
      const counts = new Uint32Array(65537);
      for (let i = 0; i < n; i++) {
        const v = (words[i * 8 + at]! >>> shift) & 0xffff;
        for (let m = 0; m < masks.length; m++) counts[(v ^ masks[m]!) + 1]!++;
      }
      for (let v = 1; v <= 65536; v++) counts[v]! += counts[v - 1]!;
      const members = new Int32Array(counts[65536]!);
      const fill = counts.slice(0, 65536);
      for (let i = 0; i < n; i++) {
        const v = (words[i * 8 + at]! >>> shift) & 0xffff;
        for (let m = 0; m < masks.length; m++) members[fill[v ^ masks[m]!]!++] = i;
      }
      this.#offsets.push(counts);
      this.#members.push(members);
    }
  }

  get size(): number {
    return this.#words.length / 8;
  }

  /**
   * Whether a hash of the set lies within the distance of `hex`: the set's own, or in the probe layout any
   * `maxDistance` asked.
   */
  matches(hex: string, maxDistance = this.#maxDistance): boolean {
    if (!this.#probe && maxDistance !== this.#maxDistance)
      throw new Error(`this set answers within ${this.#maxDistance} bits only, not ${maxDistance}`);
    const q = pdqWords(hex);
    if (maxDistance < 0) return false;
    const searched = this.#probe ? pdqMasks(maxDistance) : null;
    for (let c = 0; c < PDQ_CHUNKS; c++) {
      const masks = searched ? searched[c]! : neighbourMasks(0);
      const offsets = this.#offsets[c]!;
      const members = this.#members[c]!;
      const chunk = (q[c >> 1]! >>> (c & 1 ? 0 : 16)) & 0xffff;
      for (let j = 0; j < masks.length; j++) {
        const v = chunk ^ masks[j]!;
        for (let k = offsets[v]!, end = offsets[v + 1]!; k < end; k++)
          if (pdqWithin(this.#words, members[k]! * 8, q, maxDistance)) return true;
      }
    }
    return false;
  }
}
