/**
 * A set of perceptual hashes asked "is any of you within d of this hash?" many times: multi-index hashing in
 * memory. Each hash is filed under every 16-bit value within ⌊d/4⌋ flips of each of its four chunks (the same
 * neighbourhoods as the database lookup, hamming.ts), so a query reads four buckets and checks the distance of
 * the few hashes in them. Buckets are one flat array per chunk (CSR: offsets, then members).
 */
import { chunksOf, chunkCandidates, hammingHex } from '../similarity/hamming.ts';

export class PhashSet {
  readonly #hashes: string[];
  readonly #maxDistance: number;
  readonly #offsets: Uint32Array[] = [];
  readonly #members: Int32Array[] = [];

  constructor(hashes: readonly string[], maxDistance: number) {
    this.#hashes = [...hashes];
    this.#maxDistance = maxDistance;
    const neighbourhoods = this.#hashes.map((h) => chunkCandidates(h, maxDistance));
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
    const chunks = chunksOf(phash);
    for (let c = 0; c < 4; c++) {
      const offsets = this.#offsets[c]!;
      const members = this.#members[c]!;
      const v = chunks[c]!;
      for (let k = offsets[v]!; k < offsets[v + 1]!; k++) {
        if (hammingHex(this.#hashes[members[k]!]!, phash) <= this.#maxDistance) return true;
      }
    }
    return false;
  }
}
