/**
 * Encode stage: the three WebP variants, written to the task's staging directory.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import type { WebpOptions } from 'sharp';
import type { DecodedImage } from './decode.stage.ts';
import { VARIANT_MAX_SIDE } from './types.ts';
import type { EncodedVariant, RawImage, VariantName } from './types.ts';

/**
 * Effort 2: the best trade of encoding time against bytes among efforts 0–6 (sharp's default is 4); the
 * figures per effort are in bench/README.md, "Media pipeline" (`npm run bench:pipeline -- --webp-efforts`).
 */
export const WEBP_OPTIONS: Readonly<WebpOptions> = Object.freeze({ quality: 80, effort: 2 });

/** Largest first: each variant is resampled from the pixels of the one before it. */
const ORDER: readonly VariantName[] = ['full', 'medium', 'thumb'];

export interface EncodeContext {
  stagingDir: string;
  baseName: string;
  /** Overrides WEBP_OPTIONS (benchmarks). */
  webp?: Readonly<WebpOptions>;
}

/** Where a variant of this task is staged. */
export const variantPath = (ctx: EncodeContext, name: VariantName): string =>
  path.join(ctx.stagingDir, `${ctx.baseName}.${name}.webp`);

/** Fits width×height inside a max×max box, never enlarging, rounding to the nearest pixel. */
export function fitInside(width: number, height: number, max: number): { width: number; height: number } {
  const scale = max / Math.max(width, height);
  if (scale >= 1) return { width, height };
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

interface Pixels {
  data: Uint8Array;
  width: number;
  pageHeight: number;
}

export interface EncodedVariants {
  /** thumb, medium, full. */
  variants: EncodedVariant[];
}

/**
 * The pixels of each variant, all frames stacked, in the working buffer's channels: full is the working buffer
 * itself, medium is resampled from it and thumb from medium. Made before detection so that the detector reads
 * the thumb (≤ 320 px, its input size) instead of resizing the working buffer again, and the WebP encoding,
 * the costly part, runs only for images detection lets through.
 */
export interface VariantPixels {
  /** thumb, medium, full; an animation's frames stacked vertically, `height` being one frame's. */
  readonly thumb: StackedPixels;
  readonly medium: StackedPixels;
  readonly full: StackedPixels;
}

/** Raw pixels of every frame, stacked vertically; `height` is one frame's. */
export interface StackedPixels extends RawImage {
  channels: 3 | 4;
  frames: number;
}

const sourceOf = (image: DecodedImage) => {
  const { channels } = image.raw;
  const frames = image.animated ? image.frames : 1;
  return (p: Pixels) =>
    image.animated
      ? sharp(p.data, {
          raw: { width: p.width, height: p.pageHeight * frames, channels, pageHeight: p.pageHeight },
          pages: -1,
        })
      : sharp(p.data, { raw: { width: p.width, height: p.pageHeight, channels } });
};

/** The first frame of stacked pixels, as a view (the ThumbHash reads the thumb's). */
export function firstFrame(stack: StackedPixels): RawImage {
  const { data, width, height, channels } = stack;
  return { data: data.subarray(0, width * height * channels), width, height, channels };
}

/** Resamples the working buffer into each variant's size, largest first (each from the one before it). */
export async function resampleVariants(image: DecodedImage): Promise<VariantPixels> {
  const source = sourceOf(image);
  const { channels } = image.raw;
  const frames = image.animated ? image.frames : 1;
  let p: Pixels = { data: image.raw.data, width: image.raw.width, pageHeight: image.pageHeight };
  const out: Partial<Record<VariantName, StackedPixels>> = {};
  for (const name of ORDER) {
    const size = fitInside(image.raw.width, image.pageHeight, VARIANT_MAX_SIDE[name]);
    if (p.width !== size.width || p.pageHeight !== size.height) {
      const { data, info } = await source(p)
        .resize(size.width, size.height, { fit: 'fill' })
        .raw()
        .toBuffer({ resolveWithObject: true });
      p = { data, width: info.width, pageHeight: info.pageHeight ?? info.height };
    }
    out[name] = { data: p.data, width: p.width, height: p.pageHeight, channels, frames };
  }
  return out as VariantPixels;
}

/**
 * Encodes thumb (≤ 320), medium (≤ 1024) and full (≤ 2048) WebP variants from their pixels (`resampleVariants`,
 * made here when not given). The input is raw pixels, so no EXIF, GPS, XMP or ICC can reach the output; the
 * pixels are already auto-oriented and in sRGB, which is what a WebP without a profile means. An animation
 * stays animated at every size, with its frame delays and loop count. Variants of equal size are encoded once.
 */
export async function encodeVariants(
  image: DecodedImage,
  ctx: EncodeContext,
  resampled?: VariantPixels,
): Promise<EncodedVariants> {
  const animation = image.animated ? { delay: image.delay, loop: image.loop ?? 0 } : {};
  const source = sourceOf(image);
  const pixels = resampled ?? (await resampleVariants(image));

  const encoded = new Map<string, Promise<Buffer>>();
  const jobs = ORDER.map(async (name): Promise<EncodedVariant> => {
    const { data, width, height } = pixels[name];
    const key = `${width}x${height}`;
    let webp = encoded.get(key);
    if (!webp) {
      webp = source({ data, width, pageHeight: height })
        .webp({ ...(ctx.webp ?? WEBP_OPTIONS), ...animation })
        .toBuffer();
      encoded.set(key, webp);
    }
    const bytes = await webp;
    const file = variantPath(ctx, name);
    await writeFile(file, bytes);
    return { name, width, height, bytes: bytes.length, path: file };
  });
  // Wait for every job, failed or not, so no write lands after the caller has cleaned the staging dir.
  const settled = await Promise.allSettled(jobs);
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  return { variants: settled.map((s) => (s as PromiseFulfilledResult<EncodedVariant>).value).reverse() };
}
