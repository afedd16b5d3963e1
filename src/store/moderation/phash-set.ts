/**
 * A set of perceptual hashes asked "is any of you within d of this hash?" many times: multi-index hashing in
 * memory. Each hash is filed under every 16-bit value within ⌊d/4⌋ flips of each of its four chunks (the same
 * neighbourhoods as the blocklist's lookup in the database, hamming.ts), so a query reads four buckets and checks
 * the distance of the few hashes in them. Buckets are one flat array per chunk (CSR: offsets, then members); the
 * hashes are kept as two 32-bit halves, so a check is two XORs and popcounts, not four string parses (the job's
 * scan checks every stored hash against ~50 members: bench/README.md, Blocklist).
 */
import { HASH_HEX, chunkCandidates, popcount32 } from '../similarity/hamming.ts';

export class PhashSet {
  readonly #hi: Uint32Array;
  readonly #lo: Uint32Array;
  readonly #maxDistance: number;
  readonly #offsets: Uint32Array[] = [];
  readonly #members: Int32Array[] = [];

  constructor(hashes: readonly string[], maxDistance: number) {
    this.#hi = Uint32Array.from(hashes, (h) => parseInt(h.slice(0, 8), 16));
    this.#lo = Uint32Array.from(hashes, (h) => parseInt(h.slice(8, 16), 16));
    this.#maxDistance = maxDistance;
    const neighbourhoods = hashes.map((h) => chunkCandidates(h, maxDistance));
    for (let c = 0; c < 4; c++) {
      const counts = new Uint32Array(65537);
      for (const n of neighbourhoods) for (const v of n[c]!) counts[v + 1]!++;
      for (let v = 1; v <= 65536; v++) counts[v]! += counts[v - 1]!;
      const members = new Int32Array(counts[65536]!);
      const fill = counts.slice(0, 65536);
      neighbourhoods.forEach((n, i) => {
        for (const v of n[c]!) members[fill[v]!++] = i;
      });
      this.#offsets.push(counts);
      this.#members.push(members);
    }
  }

  /** Whether a hash of the set lies within the distance of `phash`. */
  matches(phash: string): boolean {
    if (!HASH_HEX.test(phash)) throw new Error(`expected 16 lowercase hex characters, got "${phash}"`);
    const hi = parseInt(phash.slice(0, 8), 16);
    const lo = parseInt(phash.slice(8, 16), 16);
    for (let c = 0; c < 4; c++) {
      const offsets = this.#offsets[c]!;
      const members = this.#members[c]!;
      // The chunks as chunksOf has them: ph0..ph3, most significant first.
      const v = ((c < 2 ? hi : lo) >>> (c % 2 ? 0 : 16)) & 0xffff;
      for (let k = offsets[v]!; k < offsets[v + 1]!; k++) {
        const m = members[k]!;
        if (popcount32((this.#hi[m]! ^ hi) >>> 0) + popcount32((this.#lo[m]! ^ lo) >>> 0) <= this.#maxDistance)
          return true;
      }
    }
    return false;
  }
}
