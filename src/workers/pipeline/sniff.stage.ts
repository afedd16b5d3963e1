/**
 * Sniff stage: the bytes decide the format, never a file name or a declared type.
 */
import { sniffFormat } from '../../domain/image-format.ts';
import type { ImageFormat } from '../../domain/image-format.ts';
import type { StageRejection } from './types.ts';

export type SniffResult = { ok: true; format: ImageFormat } | StageRejection;

const ACCEPTED = 'accepted formats are JPEG, PNG, GIF and WebP';

const ascii = (b: Uint8Array, from: number, to: number): string =>
  String.fromCharCode(...b.subarray(from, Math.min(to, b.length)));

const HEIF_BRANDS: Readonly<Record<string, string>> = {
  avif: 'AVIF',
  avis: 'AVIF',
  heic: 'HEIC',
  heix: 'HEIC',
  hevc: 'HEIC',
  heim: 'HEIC',
  heis: 'HEIC',
  mif1: 'HEIF',
  msf1: 'HEIF',
};

/** Names a refused format when its signature is recognisable, for the rejection message. */
export function describeFormat(bytes: Uint8Array): string | null {
  const head = ascii(bytes, 0, 16);
  if (head.startsWith('II*\0') || head.startsWith('MM\0*')) return 'TIFF';
  if (head.startsWith('BM')) return 'BMP';
  if (head.startsWith('%PDF-')) return 'PDF';
  if (head.startsWith('8BPS')) return 'PSD';
  if (head.startsWith('qoif')) return 'QOI';
  if (head.startsWith('\0\0\x01\0')) return 'ICO';
  if (head.startsWith('\xff\x0a') || head.startsWith('\0\0\0\x0cJXL ')) return 'JPEG XL';
  if (head.startsWith('\0\0\0\x0cjP  ') || head.startsWith('\xff\x4f\xff\x51')) return 'JPEG 2000';
  if (head.startsWith('GIF8')) return 'GIF with an unknown version';
  if (ascii(bytes, 4, 8) === 'ftyp') return HEIF_BRANDS[ascii(bytes, 8, 12)] ?? null; // other brands are video
  // SVG is text: look for the root element near the start, after any XML prolog, comments or BOM.
  if (/<svg[\s>]/i.test(new TextDecoder('utf-8', { fatal: false }).decode(bytes.subarray(0, 1024)))) return 'SVG';
  return null;
}

/**
 * Identifies the image format from its magic bytes.
 * Anything but JPEG, PNG, GIF or WebP is an `unsupported_format` rejection naming what was found.
 */
export function sniff(bytes: Uint8Array): SniffResult {
  const format = sniffFormat(bytes);
  if (format) return { ok: true, format };
  const found = describeFormat(bytes);
  return {
    ok: false,
    code: 'unsupported_format',
    message: found ? `image is ${found}; ${ACCEPTED}` : `file is not a recognised image; ${ACCEPTED}`,
  };
}
