/**
 * Decode stage: validate the header against the limits, then decode the original exactly once into a
 * working raw buffer. Every later stage (hash, detection input, variants, thumbhash) derives from that
 * buffer through `derive`, never from the original bytes.
 */
import sharp from 'sharp';
import type { Metadata, OutputInfo } from 'sharp';
import type { ImageFormat } from '../../domain/image-format.ts';
import { gifBlocks } from './gif-blocks.ts';
import { VARIANT_MAX_SIDE } from './types.ts';
import type { RawImage, StageRejection } from './types.ts';

export const DECODE_LIMITS = Object.freeze({
  /** Pixels of the original, all frames together (API.md: > 50 MP is `invalid_image`). */
  maxPixels: 50_000_000,
  maxFrames: 200,
  /** Long side of the working buffer: the largest variant needs no more. */
  maxSide: VARIANT_MAX_SIDE.full,
  /** Working-buffer pixels of an animation, all frames: 64 MB of RGBA; longer animations get smaller frames. */
  maxAnimationPixels: 16_000_000,
});

// 'error' rejects truncated and undecodable data (premature end of JPEG, PNG CRC or zlib errors, bad GIF
// frames) yet still accepts images whose decoder only warns, e.g. the extraneous bytes before a marker
// that many camera JPEGs carry, or an invalid embedded ICC profile.
const FAIL_ON = 'error';

export interface DecodedImage {
  format: ImageFormat;
  /** Displayed size of the original (EXIF orientation applied), of one frame. */
  width: number;
  height: number;
  frames: number;
  animated: boolean;
  /** Working pixels, at most `maxSide` on the long side, sRGB; an animation's frames are stacked vertically. */
  raw: RawImage & { channels: 3 | 4 };
  /** Height of one frame in `raw` (equals `raw.height` for a still image). */
  pageHeight: number;
  /** Frame delays (ms) and loop count of an animation. */
  delay?: number[];
  loop?: number;
}

export type DecodeResult = { ok: true; image: DecodedImage } | StageRejection;

const invalid = (message: string): StageRejection => ({ ok: false, code: 'invalid_image', message });

/** Megapixels for messages, rounded up so a value over the limit never prints as equal to it. */
const mp = (pixels: number): string => `${Math.ceil(pixels / 100_000) / 10} MP`;

const firstLine = (err: unknown): string =>
  String((err as Error)?.message ?? err)
    .split('\n')[0]!
    .slice(0, 200);

/**
 * Reads the header (no pixel data is decoded, so a 100000×100000 header costs nothing), rejects images over
 * the pixel or frame limits, then decodes once: auto-oriented (still images), shrunk to fit the working size
 * (which lets JPEG shrink on load), converted to sRGB, to raw pixels. Animated GIF and WebP keep every frame.
 */
export async function decode(bytes: Uint8Array, ctx: { format: ImageFormat }): Promise<DecodeResult> {
  // libvips takes an animated GIF cut short as the frames it has (gif-blocks.ts).
  if (ctx.format === 'gif') {
    const blocks = gifBlocks(bytes);
    if (!blocks.ok) return invalid(`image data is truncated: ${blocks.problem}, at byte ${bytes.length}`);
  }
  let header: Metadata;
  try {
    header = await sharp(bytes, { pages: -1, limitInputPixels: false, failOn: FAIL_ON }).metadata();
  } catch (err) {
    return invalid(`image header is unreadable: ${firstLine(err)}`);
  }
  const frames = header.pages ?? 1;
  const width = header.width;
  const pageHeight = header.pageHeight ?? header.height;
  if (frames > DECODE_LIMITS.maxFrames) {
    return invalid(`animation has ${frames} frames; the limit is ${DECODE_LIMITS.maxFrames}`);
  }
  const pixels = width * pageHeight * frames;
  if (pixels > DECODE_LIMITS.maxPixels) {
    const size =
      frames > 1 ? `animation is ${width}×${pageHeight} × ${frames} frames` : `image is ${width}×${pageHeight}`;
    return invalid(`${size} = ${mp(pixels)}; the limit is ${mp(DECODE_LIMITS.maxPixels)}`);
  }

  const animated = frames > 1;
  let scale = Math.min(1, DECODE_LIMITS.maxSide / Math.max(width, pageHeight));
  if (animated) scale = Math.min(scale, Math.sqrt(DECODE_LIMITS.maxAnimationPixels / pixels));
  const target = Math.max(1, Math.floor(Math.max(width, pageHeight) * scale));

  const srgbProfile = header.icc !== undefined && isSrgbProfile(header.icc);
  let decoded: { data: Buffer; info: OutputInfo };
  try {
    let pipeline = sharp(bytes, {
      pages: animated ? -1 : 1,
      failOn: FAIL_ON,
      limitInputPixels: DECODE_LIMITS.maxPixels,
      // sharp cannot rotate a multi-page image by 90°; GIF has no EXIF and animated WebP rarely does.
      autoOrient: !animated,
      // sharp converts an embedded profile to sRGB before resizing: wasted work when it is sRGB (bench/README.md).
      ignoreIcc: srgbProfile,
    }).resize({ width: target, height: target, fit: 'inside', withoutEnlargement: true });
    // With 16-bit input sharp converts an embedded profile to Display P3, not sRGB: ask for sRGB explicitly.
    if (header.icc && !srgbProfile && header.depth === 'ushort') pipeline = pipeline.withIccProfile('srgb');
    decoded = await pipeline.toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
  } catch (err) {
    return invalid(`image data is corrupt or truncated: ${firstLine(err)}`);
  }
  const { data, info } = decoded;
  if (info.channels !== 3 && info.channels !== 4) throw new Error(`decode produced ${info.channels} channels`);

  const oriented = animated ? { width, height: pageHeight } : header.autoOrient;
  return {
    ok: true,
    image: {
      format: ctx.format,
      width: oriented.width,
      height: oriented.height,
      frames,
      animated,
      raw: {
        data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
        width: info.width,
        height: info.height,
        channels: info.channels,
      },
      pageHeight: animated ? (info.pageHeight ?? info.height / frames) : info.height,
      ...(animated && header.delay ? { delay: header.delay } : {}),
      ...(animated && header.loop !== undefined ? { loop: header.loop } : {}),
    },
  };
}

export interface DeriveOptions {
  width: number;
  height: number;
  /** 'fill' stretches to exactly width×height; 'inside' keeps the aspect ratio within the box. */
  fit: 'fill' | 'inside';
  /** 1 = grey, 3 = RGB (alpha flattened on white), 4 = RGBA. */
  channels: 1 | 3 | 4;
  /** Which frame of an animation; the first by default. */
  frame?: number;
  /** Allow a result larger than the working buffer (default false; `fill` always gives the exact size asked). */
  enlarge?: boolean;
}

/** Resamples one frame of the decoded working buffer into a small raw image for hashing or detection. */
export async function derive(image: DecodedImage, opts: DeriveOptions): Promise<RawImage> {
  const { width, channels } = image.raw;
  const frameBytes = width * image.pageHeight * channels;
  const at = (opts.frame ?? 0) * frameBytes;
  const frame = image.raw.data.subarray(at, at + frameBytes); // a view: the working buffer is not copied
  let pipeline = sharp(frame, { raw: { width, height: image.pageHeight, channels } }).resize({
    width: opts.width,
    height: opts.height,
    fit: opts.fit,
    // `fill` asks for exactly width × height (the hash inputs): an image smaller than that on either side
    // is stretched up, or sharp would clamp that side and the hash would get the wrong number of pixels.
    withoutEnlargement: !opts.enlarge && opts.fit !== 'fill',
  });
  if (opts.channels === 4) pipeline = pipeline.ensureAlpha();
  else if (image.raw.channels === 4) pipeline = pipeline.flatten({ background: '#ffffff' });
  const { data, info } = await pipeline.raw().toBuffer({ resolveWithObject: true });
  const want = opts.channels === 1 ? 3 : opts.channels;
  if (info.channels !== want) throw new Error(`derive produced ${info.channels} channels, wanted ${want}`);
  const rgb = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  // sharp's greyscale() runs before the resize, over the whole working buffer: converting after is far cheaper
  // (bench/README.md, "Media pipeline").
  const pixels = opts.channels === 1 ? luma(rgb) : rgb;
  return { data: pixels, width: info.width, height: info.height, channels: opts.channels };
}

/** Rec. 601 luma of packed RGB, as most perceptual-hash implementations use. */
function luma(rgb: Uint8Array): Uint8Array {
  const grey = new Uint8Array(rgb.length / 3);
  for (let i = 0, j = 0; i < grey.length; i++, j += 3) {
    grey[i] = Math.round(0.299 * rgb[j]! + 0.587 * rgb[j + 1]! + 0.114 * rgb[j + 2]!);
  }
  return grey;
}

/** Whether an ICC profile describes itself as sRGB (most camera and phone JPEGs carry such a profile). */
export function isSrgbProfile(icc: Uint8Array): boolean {
  const view = new DataView(icc.buffer, icc.byteOffset, icc.byteLength);
  const text = (at: number, length: number) => String.fromCharCode(...icc.subarray(at, at + length));
  if (icc.length < 132 || text(16, 4) !== 'RGB ') return false;
  const tags = view.getUint32(128);
  for (let i = 0; i < tags && 144 + i * 12 <= icc.length; i++) {
    const entry = 132 + i * 12;
    if (text(entry, 4) !== 'desc') continue;
    const at = view.getUint32(entry + 4);
    if (at + 28 > icc.length) return false;
    let name = '';
    if (text(at, 4) === 'desc') {
      name = text(at + 12, Math.min(view.getUint32(at + 8), 128));
    } else if (text(at, 4) === 'mluc') {
      const length = view.getUint32(at + 20);
      const start = at + view.getUint32(at + 24);
      const utf16 = icc.subarray(start, Math.min(start + length, start + 256, icc.length));
      for (let j = 0; j + 1 < utf16.length; j += 2) name += String.fromCharCode((utf16[j]! << 8) | utf16[j + 1]!);
    }
    return /\bsRGB\b/.test(name);
  }
  return false;
}
