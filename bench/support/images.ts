/**
 * Benchmark images: the test fixtures' photo-like generator (test/support/fixtures.ts), camera-style metadata
 * included, each image distinct (its own seed, so its own perceptual hash). Generating a 12 MP image costs
 * ~0.8 s of JavaScript, so they are cached under node_modules/.cache/pixvote-bench, keyed by the generator's
 * source: a clean CI machine generates them once per run.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { animatedGif, photoJpeg, pngImage, sizeOf } from '../../test/support/fixtures.ts';
import { writeFileAtomically } from '../../src/workers/detector/file-integrity.ts';

export interface BenchImage {
  name: string;
  kind: 'jpeg' | 'png' | 'gif';
  megapixels: number;
  bytes: Buffer;
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CACHE = path.join(ROOT, 'node_modules', '.cache', 'pixvote-bench');
let version: Promise<string> | undefined;

/** Changes whenever the fixture generator does, so a stale cache is never used. */
const generatorVersion = () =>
  (version ??= readFile(path.join(ROOT, 'test/support/fixtures.ts')).then((src) =>
    createHash('sha256').update(src).digest('hex').slice(0, 12),
  ));

async function cached(key: string, make: () => Promise<Buffer>): Promise<Buffer> {
  const file = path.join(CACHE, `${await generatorVersion()}-${key}`);
  try {
    return await readFile(file);
  } catch {
    const bytes = await make();
    await mkdir(CACHE, { recursive: true });
    // Whole or not at all: a run killed mid-write must not leave a cut-short image for the next one.
    await writeFileAtomically(file, bytes);
    return bytes;
  }
}

/** Seeds by size class, so that sets never share an image. */
const seedBase = (megapixels: number) => 10_000 + Math.round(megapixels * 1000);

/** `count` distinct photo-like JPEGs of about `megapixels` MP (4:3, quality 88, EXIF + GPS + XMP + ICC). */
export async function jpegs(megapixels: number, count: number, offset = 0): Promise<BenchImage[]> {
  const { width, height } = sizeOf(megapixels);
  const out: BenchImage[] = [];
  for (let i = offset; i < offset + count; i++) {
    const seed = seedBase(megapixels) + i;
    const bytes = await cached(`jpeg-${width}x${height}-${seed}.jpg`, () => photoJpeg({ width, height, seed }));
    out.push({ name: `${megapixels} MP JPEG #${i}`, kind: 'jpeg', megapixels, bytes });
  }
  return out;
}

/**
 * A realistic upload mix: mostly 2–4 MP phone-sized JPEGs, some 12 MP camera JPEGs, some PNG screenshots
 * and animated GIFs. `count` images in this proportion: 60 % 2–4 MP, 15 % 12 MP, 15 % PNG, 10 % GIF.
 */
export async function imageMix(count: number): Promise<BenchImage[]> {
  const n12 = Math.max(1, Math.round(count * 0.15));
  const nPng = Math.max(1, Math.round(count * 0.15));
  const nGif = Math.max(1, Math.round(count * 0.1));
  const nSmall = Math.max(1, count - n12 - nPng - nGif);
  const out: BenchImage[] = [];
  for (let i = 0; i < nSmall; i++) out.push(...(await jpegs(2 + (i % 3), 1, Math.floor(i / 3) + 100)));
  out.push(...(await jpegs(12, n12, 100)));
  for (let i = 0; i < nPng; i++) {
    const bytes = await cached(`png-1600x1200-${500 + i}.png`, () => pngImage(1600, 1200, 500 + i));
    out.push({ name: `1.9 MP PNG #${i}`, kind: 'png', megapixels: 1.92, bytes });
  }
  for (let i = 0; i < nGif; i++) {
    const bytes = await cached(`gif-480x360x12-${600 + i}.gif`, () =>
      animatedGif({ width: 480, height: 360, frames: 12, seed: 600 + i * 20 }),
    );
    out.push({ name: `480×360 × 12-frame GIF #${i}`, kind: 'gif', megapixels: 0.17 * 12, bytes });
  }
  return out;
}

/**
 * Animations for the detection cost of every frame: `distinct`, 480×360 GIFs of 12 different frames; `held`,
 * the same 12 frames each shown 4 times in a row (48 frames, as GIFs hold a picture), which the detector
 * should check as 12.
 */
export async function animations(count: number): Promise<{ distinct: BenchImage[]; held: BenchImage[] }> {
  const distinct: BenchImage[] = [];
  const held: BenchImage[] = [];
  for (let i = 0; i < count; i++) {
    const seed = 700 + i * 20;
    const bytes = await cached(`gif-480x360x12-${seed}.gif`, () =>
      animatedGif({ width: 480, height: 360, frames: 12, seed }),
    );
    distinct.push({ name: `480×360 × 12-frame GIF #${i}`, kind: 'gif', megapixels: 0.17 * 12, bytes });
    const holds = await cached(`gif-480x360x48-held4-${seed}.gif`, () => holdFrames(bytes, 4));
    held.push({ name: `480×360 × 48-frame GIF (12 held 4×) #${i}`, kind: 'gif', megapixels: 0.17 * 48, bytes: holds });
  }
  return { distinct, held };
}

/** The animation with each frame repeated `times` in a row. */
async function holdFrames(gif: Buffer, times: number): Promise<Buffer> {
  const { data, info } = await sharp(gif, { pages: -1 }).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const pageHeight = info.pageHeight ?? info.height;
  const frameBytes = info.width * pageHeight * 4;
  const frames = data.length / frameBytes;
  const out = Buffer.alloc(data.length * times);
  for (let f = 0; f < frames * times; f++)
    data.copy(out, f * frameBytes, Math.floor(f / times) * frameBytes, (Math.floor(f / times) + 1) * frameBytes);
  return sharp(out, {
    raw: { width: info.width, height: pageHeight * frames * times, channels: 4, pageHeight },
    pages: -1,
  })
    .gif({ delay: Array.from({ length: frames * times }, () => 40), loop: 0, keepDuplicateFrames: true })
    .toBuffer();
}

/** An ArrayBuffer of its own holding `bytes`, ready to be moved to a worker thread. */
export function ownBuffer(bytes: Uint8Array): ArrayBuffer {
  const copy = new ArrayBuffer(bytes.byteLength);
  new Uint8Array(copy).set(bytes);
  return copy;
}
