/**
 * PDQ stage: Meta's 256-bit perceptual hash (the one trust-and-safety hash sharing speaks), with its quality
 * metric. A port of the reference `pdqhashing` (facebook/ThreatExchange, pdq/python/pdqhashing/hasher/pdq_hasher.py
 * and pdq/cpp/hashing/pdqhashing.cpp), step for step: RGB → float luma, two X/Y passes of Jarosz box filters
 * (a tent filter) with windows from the image size, decimation to 64×64, quality from the gradient sum, the
 * 16×16 low-frequency block of the 2-D DCT, one bit per coefficient above the (Torben) median. Conformance with
 * the reference: test/unit/pdq.test.ts and bench/README.md ("PDQ conformance").
 */
import { decode, derive } from './decode.stage.ts';
import type { RawImage } from './types.ts';

/**
 * An image larger than this on either side is shrunk to fit inside this square (aspect kept) before hashing, as
 * the reference Python does (`img.thumbnail((512, 512))`): the filter is costly on large images and the hash only
 * sees 64×64. (The C++ stretches to 512×512 instead: 10 bits from the Python test data on its bridge, against 2.)
 */
export const PDQ_MAX_INPUT_SIDE = 512;

/** Hashes of quality < 50 are too featureless to share or match (pdq/README.md; matches are at distance ≤ 31). */
export const PDQ_MIN_QUALITY = 50;

const LUMA_R = 0.299;
const LUMA_G = 0.587;
const LUMA_B = 0.114;
/** Two X,Y passes of 1-D box filters make a 2-D tent filter (Jarosz, 'Fast Image Convolutions'). */
const JAROSZ_PASSES = 2;
/** Each pass's window is 1/128 of the side (rounded up): two passes cover the 1/64 that becomes one pixel. */
const JAROSZ_WINDOW_DIVISOR = 128;

// DCT[i * 64 + j] = √(2/64)·cos(π/128 · (i+1)(2j+1)): the DCT-II rows for frequencies 1..16 (no DC).
const DCT = new Float64Array(16 * 64);
for (let i = 0; i < 16; i++)
  for (let j = 0; j < 64; j++)
    DCT[i * 64 + j] = Math.sqrt(2 / 64) * Math.cos((Math.PI / 2 / 64) * (i + 1) * (2 * j + 1));

export interface PdqHash {
  /** 64 lowercase hex characters, printed as the reference prints them. */
  hash: string;
  /** 0–100; below PDQ_MIN_QUALITY the hash is not worth matching. */
  quality: number;
}

/** Hashes RGB (or grey) pixels. The caller shrinks them to fit PDQ_MAX_INPUT_SIDE first, as the reference does. */
export function pdq(image: RawImage): PdqHash {
  const { width: numCols, height: numRows, channels, data } = image;
  if (channels === 4 || data.length !== numCols * numRows * channels || numCols < 1 || numRows < 1) {
    throw new TypeError(`pdq expects RGB or grey pixels but received ${numCols}×${numRows}×${channels}`);
  }
  const n = numRows * numCols;
  const buffer1 = new Float64Array(n);
  if (channels === 3) {
    for (let p = 0, q = 0; p < n; p++, q += 3) {
      buffer1[p] = LUMA_R * data[q]! + LUMA_G * data[q + 1]! + LUMA_B * data[q + 2]!;
    }
  } else {
    for (let p = 0; p < n; p++) buffer1[p] = data[p]!;
  }
  const buffer2 = new Float64Array(n);
  const windowAlongRows = Math.floor((numCols + JAROSZ_WINDOW_DIVISOR - 1) / JAROSZ_WINDOW_DIVISOR);
  const windowAlongCols = Math.floor((numRows + JAROSZ_WINDOW_DIVISOR - 1) / JAROSZ_WINDOW_DIVISOR);
  for (let pass = 0; pass < JAROSZ_PASSES; pass++) {
    for (let i = 0; i < numRows; i++) box1D(buffer1, buffer2, i * numCols, numCols, 1, windowAlongRows);
    for (let j = 0; j < numCols; j++) box1D(buffer2, buffer1, j, numRows, numCols, windowAlongCols);
  }

  // Decimate: the filtered pixel at the centre of each of the 64×64 cells.
  const small = new Float64Array(64 * 64);
  for (let i = 0; i < 64; i++) {
    const ini = Math.floor(((i + 0.5) * numRows) / 64);
    for (let j = 0; j < 64; j++) {
      const inj = Math.floor(((j + 0.5) * numCols) / 64);
      small[i * 64 + j] = buffer1[ini * numCols + inj]!;
    }
  }

  const quality = qualityOf(small);

  // B = D·A·Dᵗ, only its 16×16 block: T = D·A (16×64), then B = T·Dᵗ.
  const t = new Float64Array(16 * 64);
  for (let i = 0; i < 16; i++) {
    for (let j = 0; j < 64; j++) {
      let sum = 0;
      for (let k = 0; k < 64; k++) sum += DCT[i * 64 + k]! * small[k * 64 + j]!;
      t[i * 64 + j] = sum;
    }
  }
  const b = new Float64Array(256);
  for (let i = 0; i < 16; i++) {
    for (let j = 0; j < 16; j++) {
      let sum = 0;
      for (let k = 0; k < 64; k++) sum += t[i * 64 + k]! * DCT[j * 64 + k]!;
      b[i * 16 + j] = sum;
    }
  }

  // Torben's median of 256 values is the 128th smallest; a bit is set when its coefficient is above it.
  const median = Float64Array.from(b).sort()[127]!;
  // Bit i·16+j is bit j of 16-bit word i; the reference prints the words from 15 down to 0, 4 hex digits each.
  let hash = '';
  for (let i = 15; i >= 0; i--) {
    let word = 0;
    for (let j = 0; j < 16; j++) if (b[i * 16 + j]! > median) word |= 1 << j;
    hash += word.toString(16).padStart(4, '0');
  }
  return { hash, quality };
}

/**
 * The reference's 1-D box filter over `length` values `stride` apart from `start`: a running mean whose window
 * grows over the first half-window and shrinks over the last (the edges average fewer values, not padding).
 */
function box1D(input: Float64Array, output: Float64Array, start: number, length: number, stride: number, full: number) {
  const half = Math.floor((full + 2) / 2); // 7 → 4, 8 → 5
  const phase1 = half - 1;
  const phase2 = full - half + 1;
  const phase3 = length - full;
  const phase4 = half - 1;
  let li = start; // left edge of the window, for subtracts
  let ri = start; // right edge, for adds
  let oi = start;
  let sum = 0;
  let count = 0;
  for (let i = 0; i < phase1; i++, ri += stride) {
    sum += input[ri]!;
    count++;
  }
  for (let i = 0; i < phase2; i++, ri += stride, oi += stride) {
    sum += input[ri]!;
    count++;
    output[oi] = sum / count;
  }
  for (let i = 0; i < phase3; i++, li += stride, ri += stride, oi += stride) {
    sum += input[ri]!;
    sum -= input[li]!;
    output[oi] = sum / count;
  }
  for (let i = 0; i < phase4; i++, li += stride, oi += stride) {
    sum -= input[li]!;
    count--;
    output[oi] = sum / count;
  }
}

/** The reference's heuristic: significant gradients of the 64×64 image, quantised as the reference does. */
function qualityOf(small: Float64Array): number {
  let gradientSum = 0;
  for (let i = 0; i < 63; i++) {
    for (let j = 0; j < 64; j++) {
      gradientSum += Math.abs(Math.trunc(((small[i * 64 + j]! - small[(i + 1) * 64 + j]!) * 100) / 255));
    }
  }
  for (let i = 0; i < 64; i++) {
    for (let j = 0; j < 63; j++) {
      gradientSum += Math.abs(Math.trunc(((small[i * 64 + j]! - small[i * 64 + j + 1]!) * 100) / 255));
    }
  }
  return Math.min(100, Math.trunc(gradientSum / 90));
}

/**
 * PDQ of an encoded image (a stored variant): decoded and shrunk as the pipeline's pdq stage does its upload (the
 * first frame, fit inside 512 px, alpha on white). For images stored before PDQ was computed (`pixvote media
 * backfill-pdq`): their originals are gone, so the hash is of the `full` variant (≤ 2048 px WebP), a few bits
 * from the original's, well inside the match distance.
 */
export async function pdqOfEncoded(bytes: Uint8Array): Promise<PdqHash | null> {
  const decoded = await decode(bytes, { format: 'webp' });
  if (!decoded.ok) return null;
  const rgb = await derive(decoded.image, {
    width: PDQ_MAX_INPUT_SIDE,
    height: PDQ_MAX_INPUT_SIDE,
    fit: 'inside',
    channels: 3,
  });
  return pdq(rgb);
}
