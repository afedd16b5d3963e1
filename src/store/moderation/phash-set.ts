/**
 * A set of perceptual hashes asked "is any of you within d of this hash?" many times: multi-index hashing in
 * memory, over the blocklist's four 16-bit chunks (hamming.ts). Two layouts of the same buckets, as PdqSet's:
 * - `expand` (the hold job's scan: a few thousand entries, a million queries): each hash is filed under every value
 *   within its chunk's radius (chunkRadii: at d = 8, 137 values for the first chunk and 17 for each other), so a
 *   query reads four buckets and checks the distance of the few hashes in them;
 * - `probe` (the upload's check: 100k entries, one query per upload): each hash is filed under its own four chunk
 *   values (four postings per entry, ~1 MB at 100k), and a query reads the buckets within each chunk's radius of
 *   its chunks (188 at d = 8; 548 when every chunk was searched within ⌊d/4⌋), at any distance it asks.
 * Buckets are one flat array per chunk (CSR: offsets, then members); the hashes are kept as two 32-bit halves, so a
 * check is two XORs and popcounts, not four string parses (the job's scan checks every stored hash against ~50
 * members: bench/README.md, Blocklist).
 */
import { BLOCKLIST_CHUNKS, HASH_HEX, chunkMasks, neighbourMasks, popcount32 } from '../similarity/hamming.ts';

/** The masks each of the four chunks is searched with at `maxDistance` (none for a chunk not searched). */
const masksAt = (maxDistance: number) => chunkMasks(maxDistance, BLOCKLIST_CHUNKS.length);

export class PhashSet {
  readonly #hi: Uint32Array;
  readonly #lo: Uint32Array;
  readonly #maxDistance: number;
  readonly #probe: boolean;
  readonly #offsets: Uint32Array[] = [];
  readonly #members: Int32Array[] = [];

  constructor(hashes: readonly string[], maxDistance: number, layout: 'expand' | 'probe' = 'expand') {
    for (const h of hashes) if (!HASH_HEX.test(h)) throw new Error(`expected 16 lowercase hex characters, got "${h}"`);
    const n = hashes.length;
    this.#hi = Uint32Array.from(hashes, (h) => parseInt(h.slice(0, 8), 16));
    this.#lo = Uint32Array.from(hashes, (h) => parseInt(h.slice(8, 16), 16));
    this.#maxDistance = maxDistance;
    this.#probe = layout === 'probe';
    // Typed arrays only, no array per hash (as PdqSet): the upload's copy of 100k entries is built on the event loop.
    const filed = this.#probe ? null : masksAt(maxDistance);
    for (let c = 0; c < 4; c++) {
      const masks = filed ? filed[c]! : neighbourMasks(0);
      const half = c < 2 ? this.#hi : this.#lo;
      const shift = c % 2 ? 0 : 16;
      const counts = new Uint32Array(65537);
      for (let i = 0; i < n; i++) {
        const v = (half[i]! >>> shift) & 0xffff;
        for (let m = 0; m < masks.length; m++) counts[(v ^ masks[m]!) + 1]!++;
      }
      for (let v = 1; v <= 65536; v++) counts[v]! += counts[v - 1]!;
      const members = new Int32Array(counts[65536]!);
      const fill = counts.slice(0, 65536);
      for (let i = 0; i < n; i++) {
        const v = (half[i]! >>> shift) & 0xffff;
        for (let m = 0; m < masks.length; m++) members[fill[v ^ masks[m]!]!++] = i;
      }
      this.#offsets.push(counts);
      this.#members.push(members);
    }
  }

  /**
   * Whether a hash of the set lies within the distance of `phash`: the set's own, or in the probe layout any
   * `maxDistance` asked.
   */
  matches(phash: string, maxDistance = this.#maxDistance): boolean {
    if (!HASH_HEX.test(phash)) throw new Error(`expected 16 lowercase hex characters, got "${phash}"`);
    if (!this.#probe && maxDistance !== this.#maxDistance)
      throw new Error(`this set answers within ${this.#maxDistance} bits only, not ${maxDistance}`);
    if (maxDistance < 0) return false;
    const hi = parseInt(phash.slice(0, 8), 16);
    const lo = parseInt(phash.slice(8, 16), 16);
    const searched = this.#probe ? masksAt(maxDistance) : null;
    const his = this.#hi;
    const los = this.#lo;
    for (let c = 0; c < 4; c++) {
      const masks = searched ? searched[c]! : neighbourMasks(0);
      const offsets = this.#offsets[c]!;
      const members = this.#members[c]!;
      // The chunks as chunksOf has them: ph0..ph3, most significant first.
      const chunk = ((c < 2 ? hi : lo) >>> (c % 2 ? 0 : 16)) & 0xffff;
      for (let j = 0; j < masks.length; j++) {
        const v = chunk ^ masks[j]!;
        for (let k = offsets[v]!, end = offsets[v + 1]!; k < end; k++) {
          const m = members[k]!;
          // The high half alone is over the distance for most candidates of a miss: the low half is not read.
          const high = popcount32((his[m]! ^ hi) >>> 0);
          if (high <= maxDistance && high + popcount32((los[m]! ^ lo) >>> 0) <= maxDistance) return true;
        }
      }
    }
    return false;
  }
}
