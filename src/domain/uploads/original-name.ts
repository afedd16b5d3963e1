/**
 * `original_name` (API.md Upload record): the client's file name, kept only to be shown. NFC-normalized,
 * without control, bidi-control or zero-width characters (nor anything else that displays as nothing),
 * at most 255 characters. Only its last path segment is kept; it is never used as a path.
 */
export const MAX_ORIGINAL_NAME = 255;

/**
 * Controls (C0, DEL, C1), line and paragraph separators, format characters (bidi embeddings, overrides,
 * isolates and marks, zero-width space and joiners, BOM, soft hyphen…) and other default-ignorable code
 * points (variation selectors, Hangul fillers): what can make a name display as something it is not.
 * And lone surrogates, which no encoding can store.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\p{Cs}]/gu;

/**
 * The name to store for a file the client called `raw` (null when nothing is left). `urlEncoded`: `raw`
 * is a URL path segment (an `image_url`'s), percent-decoded first.
 */
export function originalNameOf(raw: string | null | undefined, opts: { urlEncoded?: boolean } = {}): string | null {
  if (!raw) return null;
  let name = raw;
  if (opts.urlEncoded) {
    try {
      name = decodeURIComponent(name);
    } catch {
      // not valid percent-encoding: kept as it was written
    }
  }
  name = name.split(/[\\/]/).pop()!.replace(HIDDEN, '').normalize('NFC').trim();
  name = [...name].slice(0, MAX_ORIGINAL_NAME).join('').trimEnd();
  return name || null;
}
