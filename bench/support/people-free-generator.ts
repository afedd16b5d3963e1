/**
 * People-free pictures made at run time with sharp (SVG rendered by librsvg; text in the system's fonts), for the
 * person filter's false-reject rate (issue 32): the reproduction (a colour gradient under rectangles and
 * ellipses at 320×240, 640×480 and 1600×1200), charts, UI-like screenshots, text-heavy memes and animated GIF/WebP
 * of moving shapes. Each picture is a pure function of (kind, seed, index): the same id always gives the same
 * bytes, so a verdict can be re-checked and a split by id is stable. Nothing here draws a person or a face.
 *
 * Shared by research/person-filter-eval.ts (the evaluation) and bench/person-filter.bench.ts (the bench:ci guard).
 */
import sharp from 'sharp';
import type { ImageFormat } from '../../src/domain/image-format.ts';
import { seededRandom } from '../../test/support/fixtures.ts';

export { seededRandom };

export const GENERATED_KINDS = ['shapes', 'chart', 'screenshot', 'meme', 'animated'] as const;
export type GeneratedKind = (typeof GENERATED_KINDS)[number];

export interface GeneratedImage {
  /** `${kind}-${seed}-${index}`: regenerates the same bytes. */
  id: string;
  kind: GeneratedKind;
  format: ImageFormat;
  bytes: Buffer;
  width: number;
  height: number;
}

/** A 32-bit FNV-1a hash of a string: per-picture seeds, and the evaluation's split. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h >>> 0;
}

type Rand = () => number;
const int = (r: Rand, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
const colour = (r: Rand) => `rgb(${int(r, 0, 255)},${int(r, 0, 255)},${int(r, 0, 255)})`;
const pale = (r: Rand) => `rgb(${int(r, 215, 255)},${int(r, 215, 255)},${int(r, 215, 255)})`;
const dark = (r: Rand) => `rgb(${int(r, 10, 70)},${int(r, 10, 70)},${int(r, 10, 80)})`;
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const WORDS = (
  'account amount annual apple archive average balance battery blue budget cache calendar chart cloud coffee ' +
  'commit compare config copper cost daily data delta design device disk draft energy engine export field ' +
  'filter forest garden graph green harbour index invoice kernel ladder lemon level limit market metric monday ' +
  'mountain network notes orange output packet planet policy price queue rain ratio report river router sales ' +
  'sample server settings signal spring storage summary system table target total traffic update upload usage ' +
  'valley volume weather weekly window winter yellow'
).split(' ');
const FONTS = ['DejaVu Sans', 'DejaVu Serif', 'DejaVu Sans Mono'];
const words = (r: Rand, n: number) => Array.from({ length: n }, () => pick(r, WORDS)).join(' ');

/** The sizes for the gradient-and-shapes pictures. */
export const SHAPE_SIZES: ReadonlyArray<readonly [number, number]> = [
  [320, 240],
  [640, 480],
  [1600, 1200],
];

function gradient(r: Rand, id: string): string {
  const angle = r() * Math.PI * 2;
  const x = Math.cos(angle) / 2;
  const y = Math.sin(angle) / 2;
  return (
    `<defs><linearGradient id="${id}" x1="${0.5 - x}" y1="${0.5 - y}" x2="${0.5 + x}" y2="${0.5 + y}">` +
    `<stop offset="0" stop-color="${colour(r)}"/><stop offset="1" stop-color="${colour(r)}"/></linearGradient></defs>`
  );
}

/** Rectangles and ellipses over a gradient (the reproduction); `shift` moves them (animation frames). */
function shapesSvg(r: Rand, width: number, height: number, shift = 0): string {
  const shapes: string[] = [];
  const n = int(r, 3, 9);
  for (let i = 0; i < n; i++) {
    const w = (0.05 + r() * 0.45) * width;
    const h = (0.05 + r() * 0.45) * height;
    const x = r() * (width - w) + shift * (r() - 0.5) * width * 0.2;
    const y = r() * (height - h) + shift * (r() - 0.5) * height * 0.2;
    const fill = colour(r);
    const opacity = (0.5 + r() * 0.5).toFixed(2);
    shapes.push(
      r() < 0.5
        ? `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${w.toFixed(1)}" height="${h.toFixed(1)}" ` +
            `rx="${(r() < 0.3 ? r() * 0.2 * Math.min(w, h) : 0).toFixed(1)}" fill="${fill}" opacity="${opacity}"/>`
        : `<ellipse cx="${(x + w / 2).toFixed(1)}" cy="${(y + h / 2).toFixed(1)}" rx="${(w / 2).toFixed(1)}" ` +
            `ry="${(h / 2).toFixed(1)}" fill="${fill}" opacity="${opacity}"/>`,
    );
  }
  return `${gradient(r, 'g')}<rect width="${width}" height="${height}" fill="url(#g)"/>${shapes.join('')}`;
}

function chartSvg(r: Rand, width: number, height: number): string {
  const font = pick(r, FONTS);
  const left = width * 0.12;
  const right = width * 0.95;
  const top = height * 0.15;
  const bottom = height * 0.85;
  const parts = [
    `<rect width="${width}" height="${height}" fill="${pale(r)}"/>`,
    `<text x="${width / 2}" y="${height * 0.08}" font-family="${font}" font-size="${Math.round(height / 22)}" ` +
      `text-anchor="middle" fill="#222">${esc(words(r, 3))}</text>`,
  ];
  const type = pick(r, ['bar', 'line', 'pie', 'scatter', 'area']);
  if (type === 'pie') {
    const cx = width / 2;
    const cy = height * 0.52;
    const radius = Math.min(width, height) * 0.32;
    const values = Array.from({ length: int(r, 3, 7) }, () => 0.2 + r());
    const total = values.reduce((a, b) => a + b, 0);
    let a0 = -Math.PI / 2;
    values.forEach((v, i) => {
      const a1 = a0 + (v / total) * Math.PI * 2;
      const large = a1 - a0 > Math.PI ? 1 : 0;
      const p = (a: number) => `${(cx + radius * Math.cos(a)).toFixed(1)},${(cy + radius * Math.sin(a)).toFixed(1)}`;
      parts.push(`<path d="M${cx},${cy} L${p(a0)} A${radius},${radius} 0 ${large} 1 ${p(a1)} Z" fill="${colour(r)}"/>`);
      parts.push(
        `<text x="${(cx + radius * 1.15 * Math.cos((a0 + a1) / 2)).toFixed(1)}" ` +
          `y="${(cy + radius * 1.15 * Math.sin((a0 + a1) / 2)).toFixed(1)}" font-family="${font}" ` +
          `font-size="${Math.round(height / 40)}" fill="#333" text-anchor="middle">` +
          `${esc(pick(r, WORDS))} ${i + 1}</text>`,
      );
      a0 = a1;
    });
    return parts.join('');
  }
  // Axes, grid lines and tick labels.
  parts.push(`<path d="M${left},${top} V${bottom} H${right}" stroke="#444" fill="none" stroke-width="2"/>`);
  for (let i = 0; i <= 5; i++) {
    const y = bottom - ((bottom - top) * i) / 5;
    parts.push(`<line x1="${left}" x2="${right}" y1="${y}" y2="${y}" stroke="#ccc"/>`);
    parts.push(
      `<text x="${left - 6}" y="${y + 4}" font-family="${font}" font-size="${Math.round(height / 45)}" ` +
        `text-anchor="end" fill="#555">${i * int(r, 5, 50)}</text>`,
    );
  }
  const n = int(r, 4, 16);
  const series = type === 'bar' ? 1 : int(r, 1, 3);
  const step = (right - left) / n;
  for (let s = 0; s < series; s++) {
    const c = colour(r);
    const ys = Array.from({ length: n }, () => bottom - r() * (bottom - top) * 0.95);
    if (type === 'bar') {
      ys.forEach((y, i) =>
        parts.push(
          `<rect x="${(left + i * step + step * 0.15).toFixed(1)}" y="${y.toFixed(1)}" ` +
            `width="${(step * 0.7).toFixed(1)}" height="${(bottom - y).toFixed(1)}" fill="${c}"/>`,
        ),
      );
    } else if (type === 'scatter') {
      for (let i = 0; i < n * 4; i++) {
        parts.push(
          `<circle cx="${(left + r() * (right - left)).toFixed(1)}" cy="${(top + r() * (bottom - top)).toFixed(1)}" ` +
            `r="${int(r, 2, 6)}" fill="${c}"/>`,
        );
      }
    } else {
      const points = ys.map((y, i) => `${(left + (i + 0.5) * step).toFixed(1)},${y.toFixed(1)}`).join(' ');
      if (type === 'area') {
        parts.push(
          `<polygon points="${left + step / 2},${bottom} ${points} ${left + (n - 0.5) * step},${bottom}" ` +
            `fill="${c}" opacity="0.5"/>`,
        );
      }
      parts.push(`<polyline points="${points}" fill="none" stroke="${c}" stroke-width="${int(r, 2, 4)}"/>`);
    }
  }
  for (let i = 0; i < n; i += Math.ceil(n / 8)) {
    parts.push(
      `<text x="${(left + (i + 0.5) * step).toFixed(1)}" y="${bottom + height / 30}" font-family="${font}" ` +
        `font-size="${Math.round(height / 45)}" text-anchor="middle" fill="#555">${esc(pick(r, WORDS))}</text>`,
    );
  }
  return parts.join('');
}

function screenshotSvg(r: Rand, width: number, height: number): string {
  const font = pick(r, FONTS);
  const size = Math.max(11, Math.round(Math.min(width, height) / int(r, 40, 60)));
  const dark_ = r() < 0.3;
  const bg = dark_ ? dark(r) : pale(r);
  const fg = dark_ ? '#ddd' : '#222';
  const accent = colour(r);
  const parts = [`<rect width="${width}" height="${height}" fill="${bg}"/>`];
  const bar = size * 2.5;
  parts.push(`<rect width="${width}" height="${bar}" fill="${accent}"/>`);
  parts.push(
    `<text x="${size}" y="${bar * 0.65}" font-family="${font}" font-size="${size * 1.1}" fill="#fff">` +
      `${esc(words(r, 2))}</text>`,
  );
  const sidebar = width > 600 && r() < 0.7 ? width * (0.15 + r() * 0.1) : 0;
  if (sidebar) {
    parts.push(`<rect y="${bar}" width="${sidebar}" height="${height - bar}" fill="${dark_ ? '#333' : '#eee'}"/>`);
    for (let y = bar + size * 2; y < height - size; y += size * 2) {
      parts.push(
        `<text x="${size}" y="${y}" font-family="${font}" font-size="${size}" fill="${fg}">` +
          `${esc(words(r, int(r, 1, 2)))}</text>`,
      );
    }
  }
  let y = bar + size * 2.5;
  const x = sidebar + size * 1.5;
  while (y < height - size * 2) {
    const block = r();
    if (block < 0.55) {
      const lineWidth = (width - x - size) / (size * 0.6);
      parts.push(
        `<text x="${x}" y="${y}" font-family="${font}" font-size="${size}" fill="${fg}">` +
          `${esc(words(r, Math.max(1, Math.floor(lineWidth / 7))))}</text>`,
      );
      y += size * 1.6;
    } else if (block < 0.7) {
      const w = size * int(r, 5, 10);
      parts.push(
        `<rect x="${x}" y="${y - size}" width="${w}" height="${size * 1.8}" rx="${size / 3}" fill="${accent}"/>`,
      );
      parts.push(
        `<text x="${x + w / 2}" y="${y + size * 0.3}" font-family="${font}" font-size="${size}" ` +
          `text-anchor="middle" fill="#fff">${esc(pick(r, WORDS))}</text>`,
      );
      y += size * 3;
    } else if (block < 0.85) {
      const w = Math.min(width - x - size, size * 25);
      parts.push(
        `<rect x="${x}" y="${y - size}" width="${w}" height="${size * 1.8}" fill="none" stroke="#888" rx="3"/>`,
      );
      y += size * 3;
    } else {
      // A table.
      const cols = int(r, 2, 5);
      const rows = int(r, 2, 6);
      const cw = (width - x - size) / cols;
      for (let i = 0; i < rows && y < height - size * 2; i++) {
        for (let j = 0; j < cols; j++) {
          parts.push(
            `<text x="${x + j * cw}" y="${y}" font-family="${font}" font-size="${size}" fill="${fg}">` +
              `${i === 0 ? esc(pick(r, WORDS)) : int(r, 0, 9999)}</text>`,
          );
        }
        parts.push(
          `<line x1="${x}" x2="${width - size}" y1="${y + size * 0.5}" y2="${y + size * 0.5}" stroke="#999"/>`,
        );
        y += size * 1.8;
      }
      y += size;
    }
  }
  return parts.join('');
}

function memeSvg(r: Rand, width: number, height: number): string {
  const font = pick(r, ['DejaVu Sans', 'DejaVu Serif']);
  const parts: string[] = [];
  parts.push(
    r() < 0.5 ? shapesSvg(r, width, height) : `<rect width="${width}" height="${height}" fill="${colour(r)}"/>`,
  );
  const lines = int(r, 2, 8);
  const size = Math.round(height / (lines + 3));
  const style =
    `font-family="${font}" font-weight="bold" font-size="${size}" text-anchor="middle" fill="#fff" ` +
    `stroke="#000" stroke-width="${Math.max(1, size / 14).toFixed(1)}"`;
  const perLine = Math.max(1, Math.floor(width / (size * 0.7) / 7));
  for (let i = 0; i < lines; i++) {
    // Captions at the top and bottom, or a block of text over the whole picture.
    const y = lines <= 3 && i === lines - 1 ? height - size * 0.4 : size * (1.2 + i * 1.15);
    parts.push(`<text x="${width / 2}" y="${y.toFixed(1)}" ${style}>${esc(words(r, perLine).toUpperCase())}</text>`);
  }
  return parts.join('');
}

const svg = (width: number, height: number, body: string) =>
  Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">${body}</svg>`);

async function encode(svgBytes: Buffer, format: ImageFormat): Promise<Buffer> {
  const image = sharp(svgBytes, { density: 72 }).flatten({ background: '#fff' });
  return format === 'jpeg' ? image.jpeg({ quality: 85 }).toBuffer() : image.png().toBuffer();
}

/** Picture `index` of `kind` for `seed`: deterministic bytes as an upload would send them. */
/**
 * The pictures are drawn as SVG. The service blocks sharp's SVG loader in every process that runs its worker pool
 * (setupSharpProcess: untrusted bytes), and bench:ci runs such checks earlier in the same process: the SVG loader is
 * unblocked for these pictures, which are ours.
 */
function allowSvg(): void {
  sharp.unblock({ operation: ['VipsForeignLoadSvg'] });
}

export async function generatePeopleFree(kind: GeneratedKind, index: number, seed = 1): Promise<GeneratedImage> {
  allowSvg();
  const id = `${kind}-${seed}-${index}`;
  const r = seededRandom(hash32(id));
  let width: number;
  let height: number;
  let format: ImageFormat;
  let bytes: Buffer;
  switch (kind) {
    case 'shapes': {
      [width, height] = SHAPE_SIZES[index % SHAPE_SIZES.length]!;
      format = r() < 0.5 ? 'png' : 'jpeg';
      bytes = await encode(svg(width, height, shapesSvg(r, width, height)), format);
      break;
    }
    case 'chart': {
      [width, height] = pick(r, [
        [800, 600],
        [1200, 800],
        [640, 480],
      ] as const);
      format = 'png';
      bytes = await encode(svg(width, height, chartSvg(r, width, height)), format);
      break;
    }
    case 'screenshot': {
      [width, height] = pick(r, [
        [1280, 800],
        [1920, 1080],
        [390, 844],
        [1024, 768],
      ] as const);
      format = 'png';
      bytes = await encode(svg(width, height, screenshotSvg(r, width, height)), format);
      break;
    }
    case 'meme': {
      [width, height] = pick(r, [
        [500, 500],
        [800, 600],
        [600, 800],
        [1080, 1080],
      ] as const);
      format = 'jpeg';
      bytes = await encode(svg(width, height, memeSvg(r, width, height)), format);
      break;
    }
    case 'animated': {
      [width, height] = pick(r, [
        [320, 240],
        [480, 360],
        [640, 480],
      ] as const);
      format = r() < 0.5 ? 'gif' : 'webp';
      const frames = int(r, 3, 8);
      const frameSeed = hash32(`${id}-frames`);
      const pngs: Buffer[] = [];
      for (let f = 0; f < frames; f++) {
        // Every frame draws the same shapes (same seed), moved by `f`.
        pngs.push(
          await sharp(svg(width, height, shapesSvg(seededRandom(frameSeed), width, height, f)))
            .png()
            .toBuffer(),
        );
      }
      const joined = sharp(pngs, { join: { animated: true } });
      const delay = Array.from({ length: frames }, () => 100);
      bytes = await (format === 'gif' ? joined.gif({ delay, loop: 0 }) : joined.webp({ delay, loop: 0 })).toBuffer();
      break;
    }
  }
  return { id, kind, format, bytes, width, height };
}
