/**
 * Test images, generated at test time: nothing binary is committed.
 *
 * Pixels are drawn in JavaScript and encoded by sharp from raw input, so no generator depends on a sharp
 * loader (setupSharp blocks every loader but JPEG, PNG, GIF and WebP, process-wide).
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { crc32, deflateSync } from 'node:zlib';
import sharp, { type Sharp } from 'sharp';

export interface Pixels {
  data: Uint8Array;
  width: number;
  height: number;
  channels: 3 | 4;
}

/** mulberry32: small, seeded, reproducible (test scenes, benchmark data). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const clamp = (v: number): number => (v < 0 ? 0 : v > 255 ? 255 : v);

/** A coarse value-noise grid, sampled bilinearly: smooth light and colour variation like a photo's. */
function noiseRows(rand: () => number, cols: number, rows: number, width: number, height: number) {
  const grid = Float32Array.from({ length: cols * rows }, () => rand() * 2 - 1);
  const xi = new Int32Array(width);
  const xf = new Float32Array(width);
  for (let x = 0; x < width; x++) {
    const gx = (x / Math.max(1, width - 1)) * (cols - 1);
    xi[x] = Math.min(cols - 2, Math.floor(gx));
    xf[x] = gx - xi[x]!;
  }
  const row = new Float32Array(cols);
  return (y: number): ((x: number) => number) => {
    const gy = (y / Math.max(1, height - 1)) * (rows - 1);
    const y0 = Math.min(rows - 2, Math.floor(gy));
    const fy = gy - y0;
    for (let c = 0; c < cols; c++) row[c] = grid[y0 * cols + c]! * (1 - fy) + grid[(y0 + 1) * cols + c]! * fy;
    return (x: number) => row[xi[x]!]! * (1 - xf[x]!) + row[xi[x]! + 1]! * xf[x]!;
  };
}

/**
 * A photo-like scene: sky/ground gradient with a horizon, large and medium-scale light variation, a dozen
 * textured shapes with hard edges, and sensor grain. The layout depends only on `seed` (in relative
 * coordinates), so one seed gives the same scene at every size; different seeds give unrelated scenes.
 */
export function photoPixels(width: number, height: number, seed = 1, alpha = false): Pixels {
  const rand = seededRandom(seed);
  const channels = alpha ? 4 : 3;
  const data = new Uint8Array(width * height * channels);
  const colour = () => [rand() * 255, rand() * 255, rand() * 255] as const;
  const top = colour();
  const horizonColour = colour();
  const ground = colour();
  const horizon = 0.3 + rand() * 0.4;
  // Own generators, and no grid finer than the pixels: the layout below stays the same at every size.
  const grid = (n: number, cols: number, rows: number) =>
    noiseRows(
      seededRandom(seed * 31 + n),
      Math.max(2, Math.min(cols, width)),
      Math.max(2, Math.min(rows, height)),
      width,
      height,
    );
  const coarse = grid(1, 6, 5);
  const medium = grid(2, 24, 18);
  const fine = grid(3, 160, 120);
  const detail = grid(4, 800, 600);
  const grain = seededRandom(seed ^ 0x9e3779b9);
  for (let y = 0; y < height; y++) {
    const c = coarse(y);
    const m = medium(y);
    const f = fine(y);
    const d = detail(y);
    const v = y / height;
    const t = v < horizon ? v / horizon : (v - horizon) / (1 - horizon);
    const from = v < horizon ? top : horizonColour;
    const to = v < horizon ? horizonColour : ground;
    const r0 = from[0] + (to[0] - from[0]) * t;
    const g0 = from[1] + (to[1] - from[1]) * t;
    const b0 = from[2] + (to[2] - from[2]) * t;
    let i = y * width * channels;
    for (let x = 0; x < width; x++, i += channels) {
      const light = 1 + 0.35 * c(x) + 0.12 * m(x) + 0.1 * f(x) + 0.08 * d(x);
      data[i] = clamp(r0 * light);
      data[i + 1] = clamp(g0 * light);
      data[i + 2] = clamp(b0 * light);
      if (alpha) data[i + 3] = 255;
    }
  }
  const shapes = 10 + Math.floor(rand() * 6);
  for (let s = 0; s < shapes; s++) {
    const [r, g, b] = colour();
    const cx = rand() * width;
    const cy = rand() * height;
    const rx = (0.04 + rand() * 0.16) * width;
    const ry = (0.04 + rand() * 0.16) * height;
    const round = rand() < 0.5;
    const period = (0.005 + rand() * 0.03) * width;
    const stripes = rand() < 0.5;
    const x0 = Math.max(0, Math.floor(cx - rx));
    const x1 = Math.min(width - 1, Math.ceil(cx + rx));
    const y0 = Math.max(0, Math.floor(cy - ry));
    const y1 = Math.min(height - 1, Math.ceil(cy + ry));
    for (let y = y0; y <= y1; y++) {
      const dy = (y - cy) / ry;
      for (let x = x0; x <= x1; x++) {
        const dx = (x - cx) / rx;
        if (round && dx * dx + dy * dy > 1) continue;
        const shade = stripes ? (Math.floor((x + y) / period) % 2 === 0 ? 1 : 0.7) : 1 - 0.3 * dy;
        const i = (y * width + x) * channels;
        data[i] = clamp(r * shade);
        data[i + 1] = clamp(g * shade);
        data[i + 2] = clamp(b * shade);
        if (alpha) data[i + 3] = 255;
      }
    }
  }
  for (let i = 0; i < data.length; i += channels) {
    const n = (grain() - 0.5) * 14;
    data[i] = clamp(data[i]! + n);
    data[i + 1] = clamp(data[i + 1]! + n);
    data[i + 2] = clamp(data[i + 2]! + n);
  }
  if (alpha) {
    // Transparent border fading into an opaque centre.
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const d = Math.min(x, y, width - 1 - x, height - 1 - y) / (Math.min(width, height) * 0.15);
        data[(y * width + x) * 4 + 3] = clamp(d * 255);
      }
    }
  }
  return { data, width, height, channels };
}

const fromPixels = (p: Pixels) => sharp(p.data, { raw: { width: p.width, height: p.height, channels: p.channels } });

/**
 * Where encoded fixtures are kept between the suite's processes (PIXVOTE_FIXTURE_CACHE, or under node_modules/.cache
 * like the photos of photos.ts). Drawing the pixels in JavaScript and encoding them was ~4 % of the SQLite pass's
 * time in a profile of every test process (docs/contributing.md, "Where the CPU goes"), much of it the same images
 * again: the pass that comes second asks for what the first drew, and many files for the same default photo.
 */
const FIXTURE_CACHE =
  process.env.PIXVOTE_FIXTURE_CACHE ??
  fileURLToPath(new URL('../../node_modules/.cache/pixvote-fixtures/', import.meta.url));

/**
 * What the bytes depend on besides the arguments: this file's drawing code and sharp's (libvips') encoders. Each
 * version has a folder of its own, and the first process to write one removes the others (~100 MB each).
 */
const FIXTURE_VERSION = createHash('sha256')
  .update(readFileSync(fileURLToPath(import.meta.url)))
  .update(JSON.stringify(sharp.versions))
  .digest('hex')
  .slice(0, 16);
const FIXTURE_DIR = join(FIXTURE_CACHE, FIXTURE_VERSION);
let pruned: Promise<void> | undefined;

const pruneOtherVersions = async () => {
  for (const name of await readdir(FIXTURE_CACHE).catch(() => []))
    if (name !== FIXTURE_VERSION) await rm(join(FIXTURE_CACHE, name), { recursive: true, force: true });
};

/**
 * `make()`'s bytes, read from the cache when an earlier process made them with the same code and arguments; written
 * there (atomically: a temp file renamed) otherwise. A cache that cannot be read or written only costs the time.
 */
async function kept(kind: string, args: unknown, make: () => Promise<Buffer>): Promise<Buffer> {
  const file = join(FIXTURE_DIR, createHash('sha256').update(kind).update(JSON.stringify(args)).digest('hex'));
  try {
    return await readFile(file);
  } catch {
    // not made yet
  }
  const bytes = await make();
  try {
    await (pruned ??= pruneOtherVersions());
    await mkdir(FIXTURE_DIR, { recursive: true });
    const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(tmp, bytes);
    await rename(tmp, file);
  } catch {
    // a read-only checkout: drawn again next time
  }
  return bytes;
}

/** 4:3 dimensions of about `megapixels` MP. */
export function sizeOf(megapixels: number): { width: number; height: number } {
  const width = Math.round(Math.sqrt((megapixels * 1e6 * 4) / 3));
  return { width, height: Math.round((width * 3) / 4) };
}

export interface PhotoOptions {
  width?: number;
  height?: number;
  seed?: number;
  quality?: number;
  /** EXIF orientation to write (the pixels are stored unrotated, as a camera does). */
  orientation?: number;
  /** Write GPS EXIF and XMP, and an sRGB ICC profile: everything the variants must not carry. */
  metadata?: boolean;
}

/** A photo-like JPEG, by default 640×480 with camera-style metadata (EXIF incl. GPS, XMP, ICC). */
export async function photoJpeg(opts: PhotoOptions = {}): Promise<Buffer> {
  const { width = 640, height = 480, seed = 1, quality = 88, orientation, metadata = true } = opts;
  return kept('photoJpeg', [width, height, seed, quality, orientation, metadata], () =>
    drawPhotoJpeg(width, height, seed, quality, orientation, metadata),
  );
}

function drawPhotoJpeg(
  width: number,
  height: number,
  seed: number,
  quality: number,
  orientation: number | undefined,
  metadata: boolean,
): Promise<Buffer> {
  let img = fromPixels(photoPixels(width, height, seed));
  if (metadata) {
    img = img
      .withMetadata(orientation ? { orientation } : {})
      .withExif({
        IFD0: { Make: 'PixvoteCam', Model: 'Fixture 1' },
        IFD3: {
          GPSLatitudeRef: 'N',
          GPSLatitude: '51/1 30/1 3230/100',
          GPSLongitudeRef: 'W',
          GPSLongitude: '0/1 7/1 4366/100',
        },
      })
      .withXmp(XMP_WITH_GPS);
  } else if (orientation) {
    img = img.withMetadata({ orientation });
  }
  return img.jpeg({ quality }).toBuffer();
}

const XMP_WITH_GPS = `<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description rdf:about="" xmlns:exif="http://ns.adobe.com/exif/1.0/" exif:GPSLatitude="51,30.5N" exif:GPSLongitude="0,7.7W"/>
</rdf:RDF></x:xmpmeta><?xpacket end="w"?>`;

export const pngImage = (width = 400, height = 300, seed = 2): Promise<Buffer> =>
  kept('pngImage', [width, height, seed], () =>
    fromPixels(photoPixels(width, height, seed))
      .png()
      .toBuffer(),
  );

/** RGBA PNG with a transparent border fading into an opaque centre. */
export const pngWithAlpha = (width = 400, height = 300, seed = 3): Promise<Buffer> =>
  kept('pngWithAlpha', [width, height, seed], () =>
    fromPixels(photoPixels(width, height, seed, true))
      .png()
      .toBuffer(),
  );

/** `frames` distinct RGBA frames stacked vertically, the layout sharp uses for animations. */
function framesStrip(width: number, height: number, frames: number, seed: number): Pixels {
  const data = new Uint8Array(width * height * frames * 4);
  for (let f = 0; f < frames; f++) data.set(photoPixels(width, height, seed + f, true).data, f * width * height * 4);
  return { data, width, height: height * frames, channels: 4 };
}

export interface AnimationOptions {
  width?: number;
  height?: number;
  frames?: number;
  seed?: number;
}

/** `frames` photo-like frames of `width`×`height`, 100 ms + 10 ms per frame each, encoded by `encode`. */
function animation(
  kind: string,
  opts: AnimationOptions,
  encode: (img: Sharp, delay: number[]) => Promise<Buffer>,
): Promise<Buffer> {
  const { width = 240, height = 160, frames = 3, seed = 10 } = opts;
  return kept(kind, [width, height, frames, seed], () => {
    const strip = framesStrip(width, height, frames, seed);
    const delay = Array.from({ length: frames }, (_, i) => 100 + 10 * i);
    const pages = { raw: { width, height: strip.height, channels: 4 as const, pageHeight: height }, pages: -1 };
    return encode(sharp(strip.data, pages), delay);
  });
}

export const animatedGif = (opts: AnimationOptions = {}): Promise<Buffer> =>
  animation('animatedGif', opts, (img, delay) => img.gif({ delay, loop: 0, keepDuplicateFrames: true }).toBuffer());

export const animatedWebp = (opts: AnimationOptions = {}): Promise<Buffer> =>
  animation('animatedWebp', opts, (img, delay) => img.webp({ delay, loop: 0, quality: 80 }).toBuffer());

/** A GIF with more frames than the service accepts (tiny frames, so it stays small). */
export const manyFramesGif = (frames = 201): Promise<Buffer> => animatedGif({ width: 8, height: 8, frames });

/**
 * A hand-built GIF whose frames are 1×1 pixel on a `width`×`height` canvas: a few hundred bytes that decode to
 * width × height × frames pixels (every GIF frame is composited onto the full canvas).
 */
export function gifCanvasBomb(width: number, height: number, frames: number): Buffer {
  const u16 = (v: number) => [v & 255, v >> 8];
  const parts: number[] = [
    ...Buffer.from('GIF89a', 'latin1'),
    ...u16(width),
    ...u16(height),
    0x80,
    0,
    0, // 2-colour global table
    0,
    0,
    0,
    255,
    255,
    255,
    0x21,
    0xff,
    0x0b,
    ...Buffer.from('NETSCAPE2.0', 'latin1'),
    3,
    1,
    0,
    0,
    0, // loop forever
  ];
  for (let f = 0; f < frames; f++) {
    parts.push(0x21, 0xf9, 4, 0, ...u16(10), 0, 0); // 100 ms
    parts.push(0x2c, ...u16(f % width), ...u16(0), ...u16(1), ...u16(1), 0);
    // LZW, minimum code size 2: clear (4), index 1, end (5) as 3-bit codes, least significant bit first.
    parts.push(2, 2, 0x4c, 0x01, 0);
  }
  parts.push(0x3b);
  return Buffer.from(parts);
}

/** A JPEG cut off part-way through its entropy-coded data. */
export async function truncatedJpeg(): Promise<Buffer> {
  const jpeg = await photoJpeg({ metadata: false });
  return jpeg.subarray(0, Math.floor(jpeg.length * 0.6));
}

/** A PNG whose IDAT data is damaged (its CRC no longer matches). */
export async function corruptPng(): Promise<Buffer> {
  const png = Buffer.from(await pngImage());
  const idat = png.indexOf('IDAT');
  for (let i = idat + 40; i < idat + 240; i += 7) png[i]! ^= 0x5a;
  return png;
}

function pngChunk(type: string, data: Uint8Array): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body) >>> 0);
  return Buffer.concat([length, body, crc]);
}

/** A tiny PNG whose IHDR (with a valid CRC) claims `width`×`height` RGB pixels: a decompression bomb's header. */
export function hugeHeaderPng(width = 100_000, height = 100_000): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // truecolour
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(Buffer.alloc(4096))),
    pngChunk('IEND', new Uint8Array(0)),
  ]);
}

export const nonImageBytes = (): Buffer => Buffer.from('%%% this is a text file, not an image %%%\n'.repeat(20));

export const svgImage = (): Buffer =>
  Buffer.from(
    '<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64">' +
      '<rect width="64" height="64" fill="#c33"/></svg>',
  );

export const tiffImage = (): Promise<Buffer> =>
  fromPixels(photoPixels(64, 48, 4))
    .tiff()
    .toBuffer();

export const avifImage = (): Promise<Buffer> =>
  fromPixels(photoPixels(64, 48, 5))
    .avif({ effort: 0 })
    .toBuffer();

export const pdfBytes = (): Buffer =>
  Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');

/** A 24-bit BMP, hand-built (sharp cannot write BMP). */
export function bmpImage(width = 16, height = 8): Buffer {
  const stride = Math.ceil((width * 3) / 4) * 4;
  const size = 54 + stride * height;
  const b = Buffer.alloc(size);
  b.write('BM', 0, 'latin1');
  b.writeUInt32LE(size, 2);
  b.writeUInt32LE(54, 10);
  b.writeUInt32LE(40, 14);
  b.writeInt32LE(width, 18);
  b.writeInt32LE(height, 22);
  b.writeUInt16LE(1, 26);
  b.writeUInt16LE(24, 28);
  b.writeUInt32LE(stride * height, 34);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) b[54 + y * stride + x * 3] = (x * 16) & 255;
  return b;
}

/** The formats the service refuses, by name, for table-driven tests. */
export async function refusedFormats(): Promise<Array<{ name: string; bytes: Buffer }>> {
  return [
    { name: 'SVG', bytes: svgImage() },
    { name: 'TIFF', bytes: await tiffImage() },
    { name: 'AVIF', bytes: await avifImage() },
    { name: 'BMP', bytes: bmpImage() },
    { name: 'PDF', bytes: pdfBytes() },
  ];
}

/** Copies a Node Buffer into a standalone ArrayBuffer, as the gateway hands the task its bytes. */
export function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  const out = new ArrayBuffer(bytes.byteLength);
  new Uint8Array(out).set(bytes);
  return out;
}

/** The chunk ids of a WebP (RIFF) file, e.g. ['VP8X', 'ANIM', 'ANMF', …]: metadata would show as EXIF, XMP or ICCP. */
export function riffChunks(webp: Uint8Array): string[] {
  const b = Buffer.from(webp.buffer, webp.byteOffset, webp.byteLength);
  if (b.toString('latin1', 0, 4) !== 'RIFF' || b.toString('latin1', 8, 12) !== 'WEBP')
    throw new Error('not a WebP file');
  const ids: string[] = [];
  for (let at = 12; at + 8 <= b.length; at += 8 + b.readUInt32LE(at + 4) + (b.readUInt32LE(at + 4) & 1)) {
    ids.push(b.toString('latin1', at, at + 4));
  }
  return ids;
}
