import { errors } from './errors.ts';

export const MAX_TAGS_PER_UPLOAD = 10;
export const MAX_TAG_LENGTH = 32;
/**
 * Letters and digits, each with the combining marks written on it, spaces, `-` and `_`. A letter of most scripts
 * carries marks: Devanagari and Tamil vowel signs and viramas (हिन्दी, தமிழ்), Hebrew points, the dot İ keeps when
 * lowercased (i + U+0307); only marks on a letter or digit, never alone nor on a space.
 */
const VALID = /^(?:[\p{L}\p{N}]\p{M}*|[ _-])+$/u;
/**
 * Characters that show nothing (or steer how others show) and so make lookalike tags: format characters
 * (zero-width space, joiners, BOM, bidi controls, soft hyphen…), controls, and default-ignorable code points
 * that Unicode files as letters (Hangul fillers). Whitespace controls (tab, newlines) are whitespace: collapsed.
 */
const INVISIBLE = /(?![\t\n\v\f\r])[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]/gu;

export interface TagView {
  id: string;
  name: string;
  slug: string;
}

/**
 * NFKC-folded (fullwidth and compatibility forms become their plain letters: "ＣＡＴＳ" → "CATS"), trimmed,
 * lowercased, inner whitespace collapsed to one space.
 */
export function normalizeTag(raw: string): string {
  return raw.normalize('NFKC').trim().toLowerCase().replace(/\s+/g, ' ');
}

/** The code points of `s` that show nothing, as `U+200B`. */
function invisibleIn(s: string): string[] {
  return [...new Set(Array.from(s.matchAll(INVISIBLE), (m) => codePoint(m[0])))];
}

const codePoint = (c: string) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

/** A tag as the client sent it, each invisible character spelled out (`ca<U+200B>ts`), for messages. */
const shown = (raw: string) => raw.replace(INVISIBLE, (c) => `<${codePoint(c)}>`);

/** Spaces become dashes: `cute cats` → `cute-cats`. Tags are identified by their slug. */
export function slugOf(name: string): string {
  return name.replace(/ /g, '-');
}

/** Whether a (normalized) slug is one a tag could have. */
export function isTagSlug(slug: string): boolean {
  return VALID.test(slug) && !invisibleIn(slug).length && [...slug].length <= MAX_TAG_LENGTH;
}

/** Normalizes, validates and de-duplicates (by slug) a list of tag names; throws invalid_tag naming the bad one. */
export function normalizeTags(raw: readonly string[]): string[] {
  const seen = new Map<string, string>();
  for (const r of raw) {
    if (typeof r !== 'string') throw errors.invalidTag('tags must be strings');
    // Looked for in what was sent and in its folded form (a compatibility form may fold to an invisible one).
    const hidden = invisibleIn(r + r.normalize('NFKC'));
    if (hidden.length) {
      throw errors.invalidTag(
        `tag "${[...shown(r)].slice(0, 80).join('')}" contains an invisible character (${hidden.join(', ')}); ` +
          'tags may only contain letters (with their marks), digits, spaces, "-" and "_"',
      );
    }
    const name = normalizeTag(r);
    if (!name) throw errors.invalidTag('tag names must not be empty');
    if ([...name].length > MAX_TAG_LENGTH) {
      throw errors.invalidTag(
        `tag "${name.slice(0, 40)}" is ${[...name].length} characters; the limit is ${MAX_TAG_LENGTH}`,
      );
    }
    if (!VALID.test(name)) {
      throw errors.invalidTag(`tag "${name}" may only contain letters (with their marks), digits, spaces, "-" and "_"`);
    }
    const slug = slugOf(name);
    if (!seen.has(slug)) seen.set(slug, name);
  }
  return [...seen.values()];
}

/** The comma-separated `tags` field of an upload: empty entries are ignored, at most 10 tags. */
export function parseTagList(field: string | undefined): string[] {
  if (!field) return [];
  // (An entry of invisible characters alone is not blank: it is refused like any other.)
  const names = normalizeTags(field.split(',').filter((s) => s.trim() !== '' || invisibleIn(s).length));
  if (names.length > MAX_TAGS_PER_UPLOAD) {
    throw errors.tooManyTags(`tags lists ${names.length} tags; the limit is ${MAX_TAGS_PER_UPLOAD} per upload`);
  }
  return names;
}
