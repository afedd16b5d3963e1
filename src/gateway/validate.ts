import type { z } from 'zod';
import { errors } from '../domain/errors.ts';

/**
 * Parses with a zod schema; a failure becomes one 400 invalid_request naming the first bad field,
 * e.g. "description is 612 characters; the limit is 500" or "uploadId is required".
 */
export function parse<S extends z.ZodType>(schema: S, input: unknown, where = 'body'): z.output<S> {
  // Without reportInput zod leaves issue.input unset, and a wrong-typed field would read as a missing one.
  const r = schema.safeParse(input, { reportInput: true });
  if (r.success) {
    const nul = nulAt(r.data, []);
    // PostgreSQL cannot store U+0000 in text (and no field here has a use for it): refused, on both databases.
    if (nul) throw errors.invalid(`${nul.length ? nul.join('.') : where} contains a NUL character (U+0000)`);
    return r.data;
  }
  const issue = r.error.issues[0]!;
  const field = issue.path.length ? issue.path.join('.') : where;
  if (issue.code === 'invalid_type' && issue.input === undefined) {
    throw errors.invalid(issue.path.length ? `${field} is required` : `${where} is required`);
  }
  if (issue.code === 'invalid_type' && !issue.path.length) {
    throw errors.invalid(where === 'body' ? 'body must be a JSON object' : `${where} is malformed`);
  }
  // Messages written in the schemas already start with the field name.
  const msg = issue.message;
  throw errors.invalid(msg.startsWith(field) ? msg : `${field}: ${msg}`);
}

/**
 * What `parse` would return, or null where it would refuse: for a page that falls back on its own instead of
 * answering 400 (a NUL slipping past a bare `safeParse` reached PostgreSQL, which cannot hold it: a 500).
 */
export function accepted<S extends z.ZodType>(schema: S, input: unknown): z.output<S> | null {
  const r = schema.safeParse(input);
  return r.success && !nulAt(r.data, []) ? r.data : null;
}

/** The path of the first string containing U+0000 in a parsed value, or null. */
function nulAt(value: unknown, path: Array<string | number>): Array<string | number> | null {
  if (typeof value === 'string') return value.includes('\0') ? path : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nulAt(value[i], [...path, i]);
      if (found) return found;
    }
  } else if (value !== null && typeof value === 'object' && !(value instanceof Uint8Array)) {
    for (const [k, v] of Object.entries(value)) {
      const found = nulAt(v, [...path, k]);
      if (found) return found;
    }
  }
  return null;
}
