/**
 * Images carrying provenance markers, built at test time (nothing binary is committed): XMP with an IPTC
 * DigitalSourceType written by sharp (`withXmp`), and C2PA manifests signed by the C2PA library's own Builder with
 * the test certificate chain of test/fixtures/c2pa (made by its generate.sh; FOR TESTING ONLY).
 *
 * The C2PA builders need the optional dependency `@contentauth/c2pa-node`: `c2paLibrary()` is null where it does not
 * load, and a test that needs it skips saying so.
 */
import { readFileSync } from 'node:fs';
import sharp from 'sharp';
import type { ImageFormat } from '../../src/domain/image-format.ts';
import { photoPixels } from './fixtures.ts';

export const IPTC_URI = 'http://cv.iptc.org/newscodes/digitalsourcetype/';
const IPTC_EXT_NS = 'http://iptc.org/std/Iptc4xmpExt/2008-02-29/';
const FIXTURES = new URL('../fixtures/c2pa/', import.meta.url);
/** The root certificate of the test chain: what a test sets C2PA_TRUST_ANCHORS to for a "trusted" signer. */
export const TEST_TRUST_ANCHORS = new URL('root.pub', FIXTURES).pathname;
/** The organisation of the test signing certificate, what `c2pa.signer` reads. */
export const TEST_SIGNER = 'pixvote Test Signer';

/** How the packet writes the property: an attribute of rdf:Description, an element, or an rdf:resource. */
export type XmpForm = 'attribute' | 'element' | 'resource';

export interface XmpOptions {
  form?: XmpForm;
  /** The prefix bound to the IPTC Extension namespace (any name is valid XMP). */
  prefix?: string;
  /** Write the bare term instead of its full URI. */
  bare?: boolean;
}

/** An XMP packet naming `term` (an IPTC term, or anything: a term outside the vocabulary is no marker). */
export function xmpPacket(term: string, { form = 'attribute', prefix = 'Iptc4xmpExt', bare = false }: XmpOptions = {}) {
  const value = bare ? term : IPTC_URI + term;
  const prop = `${prefix}:DigitalSourceType`;
  const body =
    form === 'attribute'
      ? `<rdf:Description rdf:about="" xmlns:${prefix}="${IPTC_EXT_NS}" ${prop}="${value}"/>`
      : form === 'element'
        ? `<rdf:Description rdf:about="" xmlns:${prefix}="${IPTC_EXT_NS}">` +
          `<${prop}>${value}</${prop}></rdf:Description>`
        : `<rdf:Description rdf:about="" xmlns:${prefix}="${IPTC_EXT_NS}">` +
          `<${prop} rdf:resource="${value}"/></rdf:Description>`;
  return (
    `<?xpacket begin="\ufeff" id="W5M0MpCehiHzreSzNTczkc9d"?>` +
    `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">` +
    `${body}</rdf:RDF></x:xmpmeta><?xpacket end="w"?>`
  );
}

const SIDE = { width: 96, height: 64 };

async function encoded(format: ImageFormat, xmp?: string, size = SIDE): Promise<Buffer> {
  const { data, width, height, channels } = photoPixels(size.width, size.height, 7);
  let img = sharp(data, { raw: { width, height, channels } });
  if (xmp && format !== 'gif') img = img.withXmp(xmp);
  const out = await (
    format === 'jpeg' ? img.jpeg() : format === 'png' ? img.png() : format === 'gif' ? img.gif() : img.webp()
  ).toBuffer();
  return xmp && format === 'gif' ? gifWithXmp(out, xmp) : out;
}

/**
 * sharp writes no XMP into a GIF: the packet goes in as the XMP specification says (part 3, "GIF"), an application
 * extension `XMP DataXMP` holding the raw packet followed by the 258-byte "magic trailer" that makes any reader
 * walking it as sub-blocks land on its terminator. Placed before the first image, after the colour table.
 */
export function gifWithXmp(gif: Buffer, xmp: string): Buffer {
  const flags = gif[10]!;
  const at = 13 + (flags & 0x80 ? 3 << ((flags & 0x07) + 1) : 0);
  const trailer = Buffer.alloc(258);
  trailer[0] = 0x01;
  for (let i = 0; i < 256; i++) trailer[1 + i] = 0xff - i;
  trailer[257] = 0x00;
  const head = Buffer.concat([Buffer.from([0x21, 0xff, 0x0b]), Buffer.from('XMP DataXMP', 'latin1')]);
  return Buffer.concat([gif.subarray(0, at), head, Buffer.from(xmp, 'utf8'), trailer, gif.subarray(at)]);
}

/** An image of the format without any metadata. */
export const plainImage = (format: ImageFormat, size = SIDE): Promise<Buffer> => encoded(format, undefined, size);

/** An image whose XMP names `term` as its IPTC DigitalSourceType. */
export const imageWithXmpSourceType = (format: ImageFormat, term: string, opts?: XmpOptions): Promise<Buffer> =>
  encoded(format, xmpPacket(term, opts));

export const jpegWithXmpSourceType = (term: string, opts?: XmpOptions) => imageWithXmpSourceType('jpeg', term, opts);
export const pngWithXmpSourceType = (term: string, opts?: XmpOptions) => imageWithXmpSourceType('png', term, opts);
export const webpWithXmpSourceType = (term: string, opts?: XmpOptions) => imageWithXmpSourceType('webp', term, opts);
export const gifWithXmpSourceType = (term: string, opts?: XmpOptions) => imageWithXmpSourceType('gif', term, opts);

// --- C2PA ------------------------------------------------------------------------------------------------------

interface C2paBuilderLibrary {
  Builder: {
    withJson(json: object): { sign(signer: unknown, input: object, output: { buffer: Buffer | null }): Buffer };
  };
  LocalSigner: { newSigner(cert: Buffer, key: Buffer, alg: string): unknown };
}

let library: Promise<C2paBuilderLibrary | null> | undefined;

/** The C2PA library, or null where the optional dependency is not installed or does not load. */
export function c2paLibrary(): Promise<C2paBuilderLibrary | null> {
  const name = '@contentauth/c2pa-node';
  library ??= import(name).then(
    (m) => m as C2paBuilderLibrary,
    () => null,
  );
  return library;
}

export interface SignOptions {
  /** IPTC term of the `c2pa.created` action's digitalSourceType; none: the action names no source type. */
  sourceType?: string | null;
  /** The action recorded; default `c2pa.created`. */
  action?: string;
  /** claim_generator_info name; default `pixvote-tests`. */
  generator?: string;
  size?: { width: number; height: number };
}

const MIME: Record<ImageFormat, string> = {
  jpeg: 'image/jpeg',
  png: 'image/png',
  gif: 'image/gif',
  webp: 'image/webp',
};
const COMMENT = 'pixvote fixture: original';

/** A JPEG with a comment segment (COM) right after SOI: bytes a tamperer can change without breaking the JPEG. */
function withComment(jpeg: Buffer): Buffer {
  const text = Buffer.from(COMMENT, 'latin1');
  const seg = Buffer.alloc(4 + text.length);
  seg.writeUInt16BE(0xfffe, 0);
  seg.writeUInt16BE(2 + text.length, 2);
  text.copy(seg, 4);
  return Buffer.concat([jpeg.subarray(0, 2), seg, jpeg.subarray(2)]);
}

/**
 * An image of the format with a C2PA manifest signed by the test certificate: one `c2pa.created` (or `action`)
 * action whose digitalSourceType is `sourceType`. Throws when the library is not installed (check c2paLibrary()).
 */
export async function c2paSignedImage(format: ImageFormat, opts: SignOptions = {}): Promise<Buffer> {
  const lib = await c2paLibrary();
  if (!lib) throw new Error('@contentauth/c2pa-node is not installed: C2PA fixtures need it');
  let source = await plainImage(format, opts.size);
  if (format === 'jpeg') source = withComment(source);
  const action: Record<string, unknown> = { action: opts.action ?? 'c2pa.created' };
  if (opts.sourceType) action.digitalSourceType = IPTC_URI + opts.sourceType;
  const builder = lib.Builder.withJson({
    claim_generator_info: [{ name: opts.generator ?? 'pixvote-tests', version: '1.0' }],
    title: `fixture.${format}`,
    format: MIME[format],
    assertions: [{ label: 'c2pa.actions', data: { actions: [action] } }],
  });
  const signer = lib.LocalSigner.newSigner(
    readFileSync(new URL('signer.pub', FIXTURES)),
    readFileSync(new URL('signer.pem', FIXTURES)),
    'es256',
  );
  const out: { buffer: Buffer | null } = { buffer: null };
  builder.sign(signer, { buffer: source, mimeType: MIME[format] }, out);
  if (!out.buffer) throw new Error('the C2PA Builder wrote no output');
  return out.buffer;
}

export const c2paSignedJpeg = (opts: SignOptions = {}) => c2paSignedImage('jpeg', opts);

/**
 * A signed JPEG changed after signing: its comment's last word, same length, so the JPEG still decodes and the
 * manifest still parses, but the hash binding no longer matches (valid: false, `assertion.dataHash.mismatch`).
 */
export async function tamperedC2paJpeg(opts: SignOptions = { sourceType: 'digitalCapture' }): Promise<Buffer> {
  const signed = Buffer.from(await c2paSignedJpeg(opts));
  const at = signed.indexOf(COMMENT, 0, 'latin1');
  if (at < 0) throw new Error('the signed JPEG lost its comment');
  signed.write('pixvote fixture: tampered', at, 'latin1');
  return signed;
}
