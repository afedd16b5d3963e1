/**
 * ThumbHash stage: a ~25-byte placeholder the client renders while the thumbnail loads. It is computed from
 * the pixels of the smallest variant, which the resample stage has already made (≤ 320 px), so it costs
 * a box filter over ~70k pixels and the ThumbHash DCT of ≤ 32×32: no resize of the working buffer of its own.
 */
import { rgbaToThumbHash } from 'thumbhash';
import { fitInside } from './encode.stage.ts';
import type { RawImage } from './types.ts';

/** ThumbHash reads at most 100×100 pixels. */
export const THUMBHASH_MAX_SIDE = 100;
/**
 * What it is given: 32 px on the long side. Its DCT keeps at most 7 frequencies per axis, which 32 samples
 * carry (the placeholder renders within ~2/255 of one from 100 px, test/unit/thumbhash.stage.test.ts), and the
 * reference encoder's loops, which V8 often runs unoptimized once per image, do a tenth of the work: 0.6–1 ms a
 * hash with the box filter, against 1.1–1.4 (spikes to 10–15 ms) from 100 px (bench/README.md).
 */
export const THUMBHASH_INPUT_SIDE = 32;

/** Encodes a ≤ 100×100 RGBA image (not premultiplied) as a base64 ThumbHash. */
export function thumbhash(rgba: RawImage): string {
  const { width, height, channels, data } = rgba;
  if (
    channels !== 4 ||
    width > THUMBHASH_MAX_SIDE ||
    height > THUMBHASH_MAX_SIDE ||
    data.length !== width * height * 4
  ) {
    throw new TypeError(
      `thumbhash expects RGBA of at most ${THUMBHASH_MAX_SIDE}×${THUMBHASH_MAX_SIDE} ` +
        `but received ${width}×${height}×${channels}`,
    );
  }
  return Buffer.from(rgbaToThumbHash(width, height, data)).toString('base64');
}

/** The ThumbHash of an RGB or RGBA image of any size (in practice the thumb variant's first frame), from ≤ 32 px. */
export function thumbhashOf(pixels: RawImage): string {
  return thumbhash(shrinkToRgba(pixels, THUMBHASH_INPUT_SIDE));
}

/**
 * Fits an RGB or RGBA image inside max×max as RGBA (never enlarging), each output pixel the mean of the
 * source pixels its area covers (a box filter: what ThumbHash's own low-pass DCT needs; ~0.4–0.7 ms on a
 * 320 px thumb, no libuv round trip). Colours are averaged weighted by alpha, so fully
 * transparent pixels do not bleed their (meaningless) colour into their neighbours.
 */
export function shrinkToRgba(pixels: RawImage, max: number): RawImage {
  const { width: w, height: h, channels: c, data } = pixels;
  if (c !== 3 && c !== 4) throw new TypeError(`shrinkToRgba expects RGB or RGBA but received ${c} channels`);
  if (data.length < w * h * c) throw new TypeError(`shrinkToRgba: ${data.length} bytes for ${w}×${h}×${c}`);
  // Never enlarged, so every output pixel covers at least one source pixel on each axis.
  const { width: tw, height: th } = fitInside(w, h, max);
  // The output column of each source column, and how many source columns each output column covers.
  const column = new Int32Array(w);
  const span = new Int32Array(tw);
  for (let x = 0; x < w; x++) span[(column[x] = Math.floor((x * tw) / w))]!++;
  const out = new Uint8Array(tw * th * 4);
  const sums = new Float64Array(tw * 4);
  let y = 0;
  for (let oy = 0; oy < th; oy++) {
    const y1 = Math.floor(((oy + 1) * h) / th);
    const rows = y1 - y;
    sums.fill(0);
    for (; y < y1; y++) {
      let at = y * w * c;
      if (c === 3) {
        for (let x = 0; x < w; x++, at += 3) {
          const s = column[x]! * 4;
          sums[s] = sums[s]! + data[at]!;
          sums[s + 1] = sums[s + 1]! + data[at + 1]!;
          sums[s + 2] = sums[s + 2]! + data[at + 2]!;
        }
      } else {
        for (let x = 0; x < w; x++, at += 4) {
          const s = column[x]! * 4;
          const alpha = data[at + 3]!;
          sums[s] = sums[s]! + data[at]! * alpha;
          sums[s + 1] = sums[s + 1]! + data[at + 1]! * alpha;
          sums[s + 2] = sums[s + 2]! + data[at + 2]! * alpha;
          sums[s + 3] = sums[s + 3]! + alpha;
        }
      }
    }
    for (let ox = 0, o = oy * tw * 4; ox < tw; ox++, o += 4) {
      const s = ox * 4;
      const n = rows * span[ox]!;
      // RGB: plain means, opaque. RGBA: colour means weighted by alpha (none when all of it is transparent).
      const weight = c === 3 ? n : sums[s + 3]!;
      out[o] = weight ? Math.round(sums[s]! / weight) : 0;
      out[o + 1] = weight ? Math.round(sums[s + 1]! / weight) : 0;
      out[o + 2] = weight ? Math.round(sums[s + 2]! / weight) : 0;
      out[o + 3] = c === 3 ? 255 : Math.round(weight / n);
    }
  }
  return { data: out, width: tw, height: th, channels: 4 };
}
