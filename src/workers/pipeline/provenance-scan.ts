/**
 * The cheap half of the provenance stage: one linear walk over the original bytes' container structure (JPEG
 * segments, PNG chunks, RIFF chunks, GIF blocks) that finds whether a C2PA manifest store is embedded and what IPTC
 * `DigitalSourceType` the XMP names. Pure JavaScript, no pixel is decoded.
 *
 * The bytes are hostile: nothing here throws on them, every walk is linear in the file's size and stops at a cap
 * (blocks walked, XMP packets read, bytes of XMP searched), and every pattern has bounded repetitions, so no input
 * makes it quadratic. A structure that does not parse is "no marker", never an error.
 *
 * Where each format carries the markers:
 * - C2PA: JPEG APP11 segments (JPEG XT boxes, a `jumb` superbox whose `jumd` names `c2pa`), PNG `caBX` chunk,
 *   WebP RIFF `C2PA` chunk, GIF application extension `C2PA_GIF` (C2PA 2.x, Annex A: the store in its sub-blocks).
 * - XMP: JPEG APP1 `http://ns.adobe.com/xap/1.0/\0` and its extended XMP (`http://ns.adobe.com/xmp/extension/\0`
 *   chunks, reassembled by GUID), PNG iTXt / zTXt / tEXt keyword `XML:com.adobe.xmp`, WebP `XMP ` chunk, GIF
 *   application extension `XMP DataXMP`.
 */
import { inflateSync } from 'node:zlib';
import { sourceTypeTerm, type IptcSourceType } from '../../domain/uploads/provenance.ts';
import type { ImageFormat } from '../../domain/image-format.ts';

export interface Markers {
  /** A C2PA manifest store (JUMBF labelled `c2pa`) is embedded where the format puts it. */
  c2pa: boolean;
  /** The IPTC term of the XMP's `Iptc4xmpExt:DigitalSourceType`, or null (none, or outside the vocabulary). */
  xmpSourceType: IptcSourceType | null;
}

/** Container blocks (segments, chunks, extensions) walked at most; past it the rest of the file is not read. */
export const MAX_BLOCKS = 65_536;
/** XMP packets read at most (a file normally has one). */
export const MAX_XMP_PACKETS = 8;
/** Bytes of one XMP packet searched at most (packets are a few KiB; padding makes some tens of KiB). */
export const MAX_XMP_BYTES = 1 << 20;
/** Extended XMP (JPEG) reassembled at most, all GUIDs together. */
export const MAX_EXTENDED_XMP_BYTES = 4 << 20;

const IPTC_EXT_NS = 'http://iptc.org/std/Iptc4xmpExt/2008-02-29/';
const XMP_JPEG_ID = 'http://ns.adobe.com/xap/1.0/\0';
const XMP_EXT_JPEG_ID = 'http://ns.adobe.com/xmp/extension/\0';
const XMP_PNG_KEYWORD = 'XML:com.adobe.xmp';

const u16be = (b: Uint8Array, i: number): number => (b[i]! << 8) | b[i + 1]!;
const u32be = (b: Uint8Array, i: number): number =>
  ((b[i]! << 24) | (b[i + 1]! << 16) | (b[i + 2]! << 8) | b[i + 3]!) >>> 0;
const u32le = (b: Uint8Array, i: number): number =>
  ((b[i + 3]! << 24) | (b[i + 2]! << 16) | (b[i + 1]! << 8) | b[i]!) >>> 0;

/** Whether `b[at..]` holds the ASCII string `s` (false past the end). */
function ascii(b: Uint8Array, at: number, s: string, end = b.length): boolean {
  if (at < 0 || at + s.length > end) return false;
  for (let i = 0; i < s.length; i++) if (b[at + i] !== s.charCodeAt(i)) return false;
  return true;
}

const C2PA_UUID_HEAD = 'c2pa'; // 63327061-0011-0010-8000-00AA00389B71, the manifest store's JUMBF type

/**
 * Whether `b[at, end)` starts with a JUMBF superbox (`jumb`) whose description box (`jumd`) types or labels it
 * `c2pa`: the C2PA manifest store. Garbage, a truncated box or another JUMBF is false.
 */
export function isC2paJumbf(b: Uint8Array, at: number, end: number): boolean {
  end = Math.min(end, b.length);
  if (at + 8 > end || !ascii(b, at + 4, 'jumb', end)) return false;
  let p = at + (u32be(b, at) === 1 ? 16 : 8); // LBox 1: an 8-byte XLBox follows the type
  if (p + 8 + 16 + 1 > end || !ascii(b, p + 4, 'jumd', end)) return false;
  p += 8;
  if (ascii(b, p, C2PA_UUID_HEAD, end)) return true;
  const toggles = b[p + 16]!;
  if ((toggles & 0x02) === 0) return false; // no label
  return ascii(b, p + 17, 'c2pa\0', end);
}

function scanJpeg(b: Uint8Array, found: Found): void {
  let p = 2;
  for (let n = 0; n < MAX_BLOCKS && p + 4 <= b.length; n++) {
    if (b[p] !== 0xff) return; // lost sync: not a segment; the metadata we read comes before the image data
    const marker = b[p + 1]!;
    if (marker === 0xff) {
      p++; // fill byte
      continue;
    }
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      p += 2; // no length
      continue;
    }
    if (marker === 0xda || marker === 0xd9) return; // start of scan / end of image: the header is over
    const len = u16be(b, p + 2);
    const start = p + 4;
    const end = p + 2 + len;
    if (len < 2 || end > b.length) return; // truncated
    if (marker === 0xe1) {
      if (ascii(b, start, XMP_JPEG_ID, end)) found.xmp(b.subarray(start + XMP_JPEG_ID.length, end));
      else if (ascii(b, start, XMP_EXT_JPEG_ID, end)) found.extendedXmp(b, start + XMP_EXT_JPEG_ID.length, end);
    } else if (marker === 0xeb && !found.c2pa) {
      // JPEG XT: 'JP', box instance (2), packet sequence (4), then the box (LBox, TBox, ...)
      if (ascii(b, start, 'JP', end) && isC2paJumbf(b, start + 8, end)) found.c2pa = true;
    }
    p = end;
  }
}

function scanPng(b: Uint8Array, found: Found): void {
  let p = 8;
  for (let n = 0; n < MAX_BLOCKS && p + 12 <= b.length; n++) {
    const len = u32be(b, p);
    const start = p + 8;
    const end = start + len;
    if (end + 4 > b.length) return; // truncated (or a length past the end)
    if (ascii(b, p + 4, 'caBX')) {
      if (isC2paJumbf(b, start, end)) found.c2pa = true;
    } else if (ascii(b, p + 4, 'iTXt') || ascii(b, p + 4, 'tEXt') || ascii(b, p + 4, 'zTXt')) {
      pngText(b, p + 4, start, end, found);
    } else if (ascii(b, p + 4, 'IEND')) {
      return;
    }
    p = end + 4;
  }
}

/** An iTXt / zTXt / tEXt chunk whose keyword is `XML:com.adobe.xmp` (iTXt is the standard; the others are seen). */
function pngText(b: Uint8Array, typeAt: number, start: number, end: number, found: Found): void {
  if (!ascii(b, start, XMP_PNG_KEYWORD + '\0', end)) return;
  let p = start + XMP_PNG_KEYWORD.length + 1;
  const type = String.fromCharCode(b[typeAt]!, b[typeAt + 1]!);
  if (type === 'tE') return found.xmp(b.subarray(p, end));
  if (type === 'zT') return found.xmp(inflated(b.subarray(p + 1, end)));
  // iTXt: compression flag, compression method, language tag \0, translated keyword \0, text
  if (p + 2 > end) return;
  const compressed = b[p] === 1;
  p += 2;
  for (let nul = 0; nul < 2; nul++) {
    const i = b.subarray(p, end).indexOf(0);
    if (i < 0) return;
    p += i + 1;
  }
  found.xmp(compressed ? inflated(b.subarray(p, end)) : b.subarray(p, end));
}

/** zlib data inflated to at most MAX_XMP_BYTES; empty when it is not zlib data. */
function inflated(z: Uint8Array): Uint8Array {
  try {
    return inflateSync(z, { maxOutputLength: MAX_XMP_BYTES });
  } catch {
    return new Uint8Array(0); // corrupt, or more than the cap: read nothing rather than a prefix
  }
}

function scanWebp(b: Uint8Array, found: Found): void {
  const riffEnd = Math.min(b.length, 8 + u32le(b, 4));
  let p = 12;
  for (let n = 0; n < MAX_BLOCKS && p + 8 <= riffEnd; n++) {
    const len = u32le(b, p + 4);
    const start = p + 8;
    const end = start + len;
    if (end > riffEnd) return;
    if (ascii(b, p, 'XMP ')) found.xmp(b.subarray(start, end));
    else if (ascii(b, p, 'C2PA') && isC2paJumbf(b, start, end)) found.c2pa = true;
    p = end + (len & 1); // chunks are padded to an even size
  }
}

function scanGif(b: Uint8Array, found: Found): void {
  if (b.length < 13) return;
  let p = 13;
  if (b[10]! & 0x80) p += 3 << ((b[10]! & 0x07) + 1); // global colour table
  for (let n = 0; n < MAX_BLOCKS && p < b.length; n++) {
    const kind = b[p];
    if (kind === 0x3b) return; // trailer
    if (kind === 0x2c) {
      // image descriptor (10), local colour table, LZW minimum code size (1), then the data sub-blocks
      if (p + 10 > b.length) return;
      const flags = b[p + 9]!;
      p += 10 + (flags & 0x80 ? 3 << ((flags & 0x07) + 1) : 0) + 1;
      p = skipSubBlocks(b, p);
    } else if (kind === 0x21) {
      const label = b[p + 1];
      const dataStart = p + 2;
      if (label === 0xff && b[dataStart] === 11 && ascii(b, dataStart + 1, 'XMP DataXMP')) {
        // The XMP packet is written raw, its bytes read as sub-blocks, and closed by a 258-byte "magic trailer":
        // the packet is everything from the identifier to the end of the sub-blocks, the trailer after its end tag.
        const start = dataStart + 12;
        p = skipSubBlocks(b, start);
        found.xmp(b.subarray(start, Math.min(p, b.length)));
      } else if (label === 0xff && b[dataStart] === 11 && ascii(b, dataStart + 1, 'C2PA_GIF')) {
        const start = dataStart + 12;
        if (!found.c2pa && isC2paJumbf(subBlocksHead(b, start, 64), 0, 64)) found.c2pa = true;
        p = skipSubBlocks(b, start);
      } else p = skipSubBlocks(b, dataStart);
    } else return; // not a GIF block: stop
    if (p < 0) return;
  }
}

/** The first `max` bytes of the data of a chain of GIF sub-blocks (their length bytes left out). */
function subBlocksHead(b: Uint8Array, p: number, max: number): Uint8Array {
  const out = new Uint8Array(max);
  let n = 0;
  while (p < b.length && n < max) {
    const len = b[p]!;
    if (len === 0) break;
    const data = b.subarray(p + 1, Math.min(p + 1 + len, b.length));
    const take = data.subarray(0, max - n);
    out.set(take, n);
    n += take.length;
    p += len + 1;
  }
  return out.subarray(0, n);
}

/** The offset after a chain of GIF data sub-blocks (length byte, data) and its terminator; -1 when truncated. */
function skipSubBlocks(b: Uint8Array, p: number): number {
  while (p < b.length) {
    const len = b[p]!;
    if (len === 0) return p + 1;
    p += len + 1;
  }
  return -1;
}

/** What the walk found so far; XMP packets are searched as they come, the first named term wins. */
class Found {
  c2pa = false;
  sourceType: IptcSourceType | null = null;
  private packets = 0;
  private extended = new Map<string, { data: Uint8Array; total: number }>();
  private extendedBytes = 0;

  xmp(packet: Uint8Array): void {
    if (this.sourceType || this.packets >= MAX_XMP_PACKETS || packet.length === 0) return;
    this.packets++;
    this.sourceType = digitalSourceType(packet.subarray(0, MAX_XMP_BYTES));
  }

  /** One chunk of extended XMP: GUID (32), full length (4), offset (4), data. Reassembled, read at the end. */
  extendedXmp(b: Uint8Array, p: number, end: number): void {
    if (p + 40 > end) return;
    const guid = String.fromCharCode(...b.subarray(p, p + 32));
    const total = u32be(b, p + 32);
    const offset = u32be(b, p + 36);
    const chunk = b.subarray(p + 40, end);
    let entry = this.extended.get(guid);
    if (!entry) {
      if (total > MAX_EXTENDED_XMP_BYTES - this.extendedBytes || this.extended.size >= MAX_XMP_PACKETS) return;
      this.extendedBytes += total;
      entry = { data: new Uint8Array(total), total };
      this.extended.set(guid, entry);
    }
    if (offset + chunk.length > entry.total) return; // a chunk past the length it declared
    entry.data.set(chunk, offset);
  }

  done(): Markers {
    for (const { data } of this.extended.values()) this.xmp(data);
    return { c2pa: this.c2pa, xmpSourceType: this.sourceType };
  }
}

/**
 * Reads C2PA presence and the XMP DigitalSourceType from an image's original bytes. Never throws: bytes that do
 * not parse as far as a marker are "no marker".
 */
export function scanMarkers(bytes: Uint8Array, format: ImageFormat): Markers {
  const found = new Found();
  try {
    if (format === 'jpeg') scanJpeg(bytes, found);
    else if (format === 'png') scanPng(bytes, found);
    else if (format === 'webp') scanWebp(bytes, found);
    else if (format === 'gif') scanGif(bytes, found);
  } catch {
    // A bug in a walk must not fail an upload: what was found before it stands (and the tests look for this path)
  }
  return found.done();
}

// --- XMP ------------------------------------------------------------------------------------------------------

const utf8 = new TextDecoder('utf-8', { fatal: false });

/** Prefixes a packet binds to the IPTC Extension namespace (any name; `Iptc4xmpExt` by convention). */
const NS_BINDING = /xmlns:([A-Za-z_][\w.-]{0,63})\s{0,64}=\s{0,64}(["'])([^"'<>]{0,256})\2/g;
const MAX_PREFIXES = 16;

const escapeRe = (s: string): string => s.replace(/[.\-\\^$*+?()[\]{}|]/g, '\\$&');

/** XML's predefined entities and character references, for a value that spells its letters oddly. */
function unescapeXml(s: string): string {
  return s
    .replace(/<!\[CDATA\[([^]{0,512}?)\]\]>/g, '$1')
    .replace(/&(#x[0-9a-fA-F]{1,6}|#[0-9]{1,7}|amp|lt|gt|quot|apos);/g, (_, e: string) => {
      if (e[0] !== '#') return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[e]!;
      const code = e[1] === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return code <= 0x10ffff ? String.fromCodePoint(code) : '';
    });
}

/**
 * The IPTC term of an XMP packet's DigitalSourceType, in the attribute form
 * (`<rdf:Description Iptc4xmpExt:DigitalSourceType="…"/>`), the element form
 * (`<Iptc4xmpExt:DigitalSourceType>…</Iptc4xmpExt:DigitalSourceType>`, CDATA allowed) or the resource form
 * (`<Iptc4xmpExt:DigitalSourceType rdf:resource="…"/>`), under whatever prefix the packet binds to the namespace.
 */
export function digitalSourceType(packet: Uint8Array): IptcSourceType | null {
  const text = utf8.decode(packet);
  const prefixes = new Set<string>();
  for (const m of text.matchAll(NS_BINDING)) {
    if (unescapeXml(m[3]!) === IPTC_EXT_NS) prefixes.add(m[1]!);
    if (prefixes.size >= MAX_PREFIXES) break;
  }
  for (const prefix of prefixes) {
    const name = `${escapeRe(prefix)}:DigitalSourceType`;
    // Bounded repetitions throughout: a packet of unclosed quotes or tags costs at most 1 KiB of look per match.
    const forms = [
      new RegExp(`[\\s"']${name}\\s{0,64}=\\s{0,64}(["'])([^"'<>]{0,512})\\1`, 'g'),
      new RegExp(
        `<${name}(?:\\s[^<>]{0,1024})?>(<!\\[CDATA\\[[^\\]]{0,512}\\]\\]>|[^<]{0,512})</${name}\\s{0,8}>`,
        'g',
      ),
      new RegExp(`<${name}\\s[^<>]{0,1024}?rdf:resource\\s{0,64}=\\s{0,64}(["'])([^"'<>]{0,512})\\1`, 'g'),
    ];
    for (const [i, re] of forms.entries()) {
      let tries = 0;
      for (const m of text.matchAll(re)) {
        const term = sourceTypeTerm(unescapeXml(i === 1 ? m[1]! : m[2]!).trim());
        if (term) return term;
        if (++tries >= MAX_PREFIXES) break;
      }
    }
  }
  return null;
}
