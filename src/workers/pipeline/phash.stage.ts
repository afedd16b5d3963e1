/**
 * Perceptual hash stage: a 64-bit DCT pHash, compared by Hamming distance for near-duplicate search.
 */
import type { RawImage } from './types.ts';

/** Side of the grey square the hash is computed from (derived from the working buffer by `derive`). */
export const PHASH_INPUT_SIZE = 32;
/** Low-frequency block the bits come from: the top-left 8×8 of the DCT. */
const BLOCK = 8;

const N = PHASH_INPUT_SIZE;
// COS[k * N + n] = cos(π(2n+1)k / 2N): the DCT-II basis, only for the frequencies the hash reads.
const COS = new Float64Array(BLOCK * N);
for (let k = 0; k < BLOCK; k++)
  for (let n = 0; n < N; n++) COS[k * N + n] = Math.cos((Math.PI * (2 * n + 1) * k) / (2 * N));

/**
 * Hashes a 32×32 grey image: 2-D DCT, keep the top-left 8×8 block, one bit per coefficient set when it is
 * above the median of the 63 AC coefficients. The DC term (mean brightness) is left out of the median and its
 * bit is always 0. Returns 16 lowercase hex characters, most significant bit = coefficient (0,0), row-major.
 */
export function phash(grey: RawImage): string {
  if (grey.channels !== 1 || grey.width !== N || grey.height !== N || grey.data.length !== N * N) {
    throw new TypeError(
      `phash expects a ${N}×${N} grey image but received ${grey.width}×${grey.height}×${grey.channels}`,
    );
  }
  // Separable DCT: along columns for the first 8 vertical frequencies, then along those rows.
  const cols = new Float64Array(BLOCK * N);
  for (let v = 0; v < BLOCK; v++) {
    for (let x = 0; x < N; x++) {
      let sum = 0;
      for (let y = 0; y < N; y++) sum += COS[v * N + y]! * grey.data[y * N + x]!;
      cols[v * N + x] = sum;
    }
  }
  const coef = new Float64Array(BLOCK * BLOCK);
  for (let v = 0; v < BLOCK; v++) {
    for (let u = 0; u < BLOCK; u++) {
      let sum = 0;
      for (let x = 0; x < N; x++) sum += COS[u * N + x]! * cols[v * N + x]!;
      // Rounded so that floating-point noise (±1e-12 on a flat image) cannot set bits: a blank image hashes to 0.
      coef[v * BLOCK + u] = Math.round(sum * 1e6) / 1e6;
    }
  }
  const median = coef.slice(1).sort()[31]!;
  let hex = '';
  for (let nibble = 0; nibble < 16; nibble++) {
    let bits = 0;
    for (let b = 0; b < 4; b++) {
      const i = nibble * 4 + b;
      bits = (bits << 1) | (i > 0 && coef[i]! > median ? 1 : 0);
    }
    hex += bits.toString(16);
  }
  return hex;
}
