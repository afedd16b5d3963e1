import type { z } from 'zod';
import { errors } from '../domain/errors.ts';

/**
 * Parses with a zod schema; a failure becomes one 400 invalid_request naming the first bad field,
 * e.g. "description is 612 characters; the limit is 500" or "uploadId is required".
 */
export function parse<S extends z.ZodType>(schema: S, input: unknown, where = 'body'): z.output<S> {
  // Without reportInput zod leaves issue.input unset, and a wrong-typed field would read as a missing one.
  const r = schema.safeParse(input, { reportInput: true });
  if (r.success) return r.data;
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
