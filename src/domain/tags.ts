import { errors } from './errors.ts';

export const MAX_TAGS_PER_UPLOAD = 10;
export const MAX_TAG_LENGTH = 32;
const VALID = /^[\p{L}\p{N} _-]+$/u;

export interface TagView {
  id: string;
  name: string;
  slug: string;
}

/** Trimmed, lowercased, inner whitespace collapsed to one space. */
export function normalizeTag(raw: string): string {
  return raw.normalize('NFC').trim().toLowerCase().replace(/\s+/g, ' ');
}

/** Spaces become dashes: `cute cats` → `cute-cats`. Tags are identified by their slug. */
export function slugOf(name: string): string {
  return name.replace(/ /g, '-');
}

/** Whether a (normalized) slug is one a tag could have. */
export function isTagSlug(slug: string): boolean {
  return VALID.test(slug) && [...slug].length <= MAX_TAG_LENGTH;
}

/** Normalizes, validates and de-duplicates (by slug) a list of tag names; throws invalid_tag naming the bad one. */
export function normalizeTags(raw: readonly string[]): string[] {
  const seen = new Map<string, string>();
  for (const r of raw) {
    if (typeof r !== 'string') throw errors.invalidTag('tags must be strings');
    const name = normalizeTag(r);
    if (!name) throw errors.invalidTag('tag names must not be empty');
    if ([...name].length > MAX_TAG_LENGTH) {
      throw errors.invalidTag(`tag "${name.slice(0, 40)}" is ${[...name].length} characters; the limit is ${MAX_TAG_LENGTH}`);
    }
    if (!VALID.test(name)) {
      throw errors.invalidTag(`tag "${name}" may only contain letters, digits, spaces, "-" and "_"`);
    }
    const slug = slugOf(name);
    if (!seen.has(slug)) seen.set(slug, name);
  }
  return [...seen.values()];
}

/** The comma-separated `tags` field of an upload: empty entries are ignored, at most 10 tags. */
export function parseTagList(field: string | undefined): string[] {
  if (!field) return [];
  const names = normalizeTags(field.split(',').filter((s) => s.trim() !== ''));
  if (names.length > MAX_TAGS_PER_UPLOAD) {
    throw errors.tooManyTags(`tags lists ${names.length} tags; the limit is ${MAX_TAGS_PER_UPLOAD} per upload`);
  }
  return names;
}
