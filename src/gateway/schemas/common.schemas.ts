import { z } from 'zod';
import { STATUS_OF, type ErrorCode } from '../../domain/errors.ts';

export const ERROR_CODES = Object.keys(STATUS_OF) as [ErrorCode, ...ErrorCode[]];

/** API.md's table: when each error code is used. Shown next to every error response of the document. */
export const ERROR_WHEN: Readonly<Record<ErrorCode, string>> = {
  invalid_request: 'malformed JSON, missing or invalid field, bad query value',
  unsupported_format: 'the image is not JPEG, PNG, GIF or WebP by its bytes',
  invalid_image: 'truncated or corrupt image, more than 50 MP or more than 200 frames',
  human_detected: 'human detection policy `reject` and a person was found',
  ai_generated:
    '`AI_POLICY=reject` and a provenance marker (C2PA, IPTC) says the image was generated; the message names it',
  blocked_content:
    "the image matches the moderators' blocklist (exact SHA-256, perceptual hash within `BLOCKLIST_DISTANCE`, " +
    'or PDQ within `BLOCKLIST_PDQ_DISTANCE`); which entry matched is not said',
  fetch_failed: '`image_url` could not be fetched safely (blocked address, timeout, not an image, too big)',
  too_many_tags: 'more than 10 tags on the upload',
  invalid_tag:
    'a tag is empty, longer than 32 characters, or has characters other than letters (with their combining ' +
    'marks), digits, space, `-`, `_` ' +
    'after NFKC folding (an invisible character among them)',
  invalid_cursor: 'a `cursor` that is malformed or belongs to another listing (other filters, sort or limit)',
  page_too_deep: '`(page − 1) × limit` is over 10 000: page on with `cursor=<next_cursor>`',
  unauthorized: 'missing, invalid, expired or revoked token; bad credentials',
  forbidden: 'authenticated but not allowed (not the owner or an admin; cross-site request authenticated by cookie)',
  insufficient_scope:
    "the request's API token lacks the scope the operation needs (its `x-scope`), or `moderate` for the moderation " +
    'events of a webhook; the message names the scope',
  banned: 'the account is banned; the message says until when',
  account_too_new:
    'the account is younger than `VOTE_MIN_ACCOUNT_AGE` / `REPORT_MIN_ACCOUNT_AGE` requires; the message says ' +
    'from when it may vote / report',
  not_found: 'no such resource, or an upload held for review that only its owner and admins may see',
  removed: 'the upload was removed by the moderators',
  conflict: 'username or email already taken; an Idempotency-Key reused for a different request',
  payload_too_large: 'file over 10 MiB (10485760 bytes), JSON body over 1 MiB',
  rate_limited: 'a rate limit is spent; retry after `Retry-After` seconds',
  busy:
    'the media worker queue is full, the database does not answer, or the service is shutting down; ' +
    'retry after `Retry-After` seconds',
  storage_unavailable:
    'the media store (disk or object storage) cannot be written or read now; nothing was stored; ' +
    'retry after `Retry-After` seconds',
  method_not_allowed: 'a known path called with a method it does not serve; `Allow` lists those it does',
  internal: 'anything else; logged with the request id',
  not_implemented: '`GET /api/oembed` with a `format` other than `json` (oEmbed 1.0, 2.3.4)',
};

export const ErrorBody = z
  .object({
    error: z.enum(ERROR_CODES).describe('Machine-readable error code.'),
    message: z.string().describe('A human sentence naming the field or limit that failed.'),
  })
  .describe('The body of every non-2xx response except 304.');

/** The error body of one response status, with `error` narrowed to the codes that status can carry there. */
export const errorBodyOf = (codes: readonly [ErrorCode, ...ErrorCode[]]) => ErrorBody.extend({ error: z.enum(codes) });

export const Success = z.object({ success: z.literal(true) });

/** Characters as API.md counts them: code points (an emoji is one, not two UTF-16 units), as PostgreSQL does. */
export function charCount(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/**
 * A free-text field of a request (a description, a note, a reason, a name, a password): at most `max` characters
 * counted as API.md counts them ("description is 612 characters; the limit is 500"; `charCount`), at least `min`
 * when given, and well-formed Unicode. A lone UTF-16 surrogate (`"\ud800"`: valid JSON, but no character) is refused
 * with the field's name: both databases store UTF-8, which has no form for it, so it would be kept as U+FFFD, a
 * different text than the one sent (and two such passwords would hash alike). The document shows the limits as
 * `minLength`/`maxLength`, which JSON Schema counts in code points too.
 */
export function boundedText(
  field: string,
  limits: { max: number; min?: number; minMessage?: string; trim?: boolean; typeMessage?: string },
) {
  const { max, min } = limits;
  const base = z.string({ error: limits.typeMessage ?? `${field} must be a string` });
  return (limits.trim ? base.trim() : base)
    .superRefine((value, ctx) => {
      const problem = textProblem(field, value, limits);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .meta({ maxLength: max, ...(min === undefined ? {} : { minLength: min }) });
}

/** A high surrogate not followed by a low one, or a low one not after a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why `value` is not a valid `field` under `limits` (boundedText()), or null. */
function textProblem(
  field: string,
  value: string,
  limits: { max: number; min?: number; minMessage?: string },
): string | null {
  const lone = LONE_SURROGATE.exec(value);
  if (lone) {
    const unit = lone[0].charCodeAt(0).toString(16);
    const at = charCount(value.slice(0, lone.index)) + 1;
    const where = `\\u${unit} at character ${at}`;
    return `${field} holds a lone UTF-16 surrogate (${where}), which is no character: send well-formed Unicode`;
  }
  const n = charCount(value);
  if (n > limits.max) return `${field} is ${n} characters; the limit is ${limits.max}`;
  if (limits.min !== undefined && n < limits.min)
    return limits.minMessage ?? `${field} is ${n} characters; at least ${limits.min} are needed`;
  return null;
}

export const Health = z.object({ status: z.literal('ok') });

const ReadinessCheck = z
  .looseObject({
    status: z.enum(['ok', 'down']),
    reason: z.string().optional().describe('Why the dependency is down.'),
  })
  .describe('One dependency (database, workers, media, redis); further details vary by dependency.');
const checks = z.record(z.string(), ReadinessCheck);

export const Readiness = z.object({
  status: z
    .enum(['ok', 'degraded'])
    .describe('`degraded`: Redis is configured but down, and the in-process fallbacks serve.'),
  checks,
});
export const NotReady = ErrorBody.extend({ error: z.literal('busy'), status: z.literal('down'), checks }).describe(
  '503 from /readyz: the database, the worker pool or the media store did not answer, or the process is shutting down.',
);

/** `{id}` path parameter of uploads and tokens. Any string is accepted; one that is not a UUID is simply not found. */
export const IdParam = z.object({
  id: z
    .string()
    .describe('A UUID.')
    .meta({ examples: ['3f2b8c1e-9a4d-4e7b-8f0a-6c5d2e1b7a90'] }),
});
