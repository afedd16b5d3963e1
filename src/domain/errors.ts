/**
 * The error model of API.md: every non-2xx response (except 304) is `{error, message}`.
 * The domain throws these; one gateway middleware turns them into responses.
 */
export type ErrorCode =
  | 'invalid_request'
  | 'unsupported_format'
  | 'invalid_image'
  | 'human_detected'
  | 'ai_generated'
  | 'blocked_content'
  | 'fetch_failed'
  | 'too_many_tags'
  | 'invalid_tag'
  | 'invalid_cursor'
  | 'page_too_deep'
  | 'unauthorized'
  | 'forbidden'
  | 'insufficient_scope'
  | 'banned'
  | 'account_too_new'
  | 'not_found'
  | 'conflict'
  | 'removed'
  | 'payload_too_large'
  | 'rate_limited'
  | 'busy'
  | 'storage_unavailable'
  | 'method_not_allowed'
  | 'internal'
  | 'not_implemented';

export const STATUS_OF: Readonly<Record<ErrorCode, number>> = Object.freeze({
  invalid_request: 400,
  unsupported_format: 400,
  invalid_image: 400,
  human_detected: 400,
  ai_generated: 400,
  blocked_content: 400,
  fetch_failed: 400,
  too_many_tags: 400,
  invalid_tag: 400,
  invalid_cursor: 400,
  page_too_deep: 400,
  unauthorized: 401,
  forbidden: 403,
  insufficient_scope: 403,
  banned: 403,
  account_too_new: 403,
  not_found: 404,
  conflict: 409,
  removed: 410,
  payload_too_large: 413,
  rate_limited: 429,
  busy: 503,
  storage_unavailable: 503,
  method_not_allowed: 405,
  internal: 500,
  not_implemented: 501,
});

export class AppError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  /** Extra response headers, e.g. Retry-After. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: ErrorCode, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.status = STATUS_OF[code];
    this.headers = headers;
  }
}

/** Small factories, one per code, so call sites read like the contract. */
export const errors = {
  invalid: (message: string) => new AppError('invalid_request', message),
  notImplemented: (message: string) => new AppError('not_implemented', message),
  unsupportedFormat: (message: string) => new AppError('unsupported_format', message),
  invalidImage: (message: string) => new AppError('invalid_image', message),
  humanDetected: (message: string) => new AppError('human_detected', message),
  /** AI_POLICY=reject and a provenance marker says generated (the message names it). */
  aiGenerated: (message: string) => new AppError('ai_generated', message),
  fetchFailed: (message: string) => new AppError('fetch_failed', message),
  tooManyTags: (message: string) => new AppError('too_many_tags', message),
  invalidTag: (message: string) => new AppError('invalid_tag', message),
  unauthorized: (message = 'authentication required: send a valid Bearer token or the auth-token cookie') =>
    new AppError('unauthorized', message),
  forbidden: (message: string) => new AppError('forbidden', message),
  /** The request's API token lacks the scope the route (or `what` the request asks for) needs; the message names it. */
  insufficientScope: (scope: string, what = 'this request') =>
    new AppError(
      'insufficient_scope',
      `this API token lacks the scope "${scope}" ${what} needs: create a token with it (or without scopes)`,
    ),
  blockedContent: (message = "this image matches the moderators' blocklist and cannot be uploaded") =>
    new AppError('blocked_content', message),
  banned: (message: string) => new AppError('banned', message),
  /** A minimum account age (VOTE_MIN_ACCOUNT_AGE, REPORT_MIN_ACCOUNT_AGE) refuses the action. */
  accountTooNew: (message: string) => new AppError('account_too_new', message),
  removed: (message: string) => new AppError('removed', message),
  notFound: (message: string) => new AppError('not_found', message),
  conflict: (message: string) => new AppError('conflict', message),
  payloadTooLarge: (message: string) => new AppError('payload_too_large', message),
  rateLimited: (message: string, retryAfterSeconds: number) =>
    new AppError('rate_limited', message, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) }),
  busy: (message: string, retryAfterSeconds = 1) =>
    new AppError('busy', message, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) }),
  /** The media store (disk or object storage) cannot be written or read now; nothing was stored. */
  storageUnavailable: (message: string, retryAfterSeconds = 5) =>
    new AppError('storage_unavailable', message, {
      'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))),
    }),
  /** `allow`: the methods the path serves, as the `Allow` header lists them. */
  methodNotAllowed: (message: string, allow: string) => new AppError('method_not_allowed', message, { Allow: allow }),
} as const;
