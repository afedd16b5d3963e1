/**
 * The named parts of the OpenAPI document: schemas (by the name clients generate types from), headers,
 * parameters and security schemes. Schemas are the zod objects the routes use, named here once.
 */
import type { z } from 'zod';
import * as auth from '../schemas/auth.schemas.ts';
import * as common from '../schemas/common.schemas.ts';
import * as community from '../schemas/community.schemas.ts';
import * as moderation from '../schemas/moderation.schemas.ts';
import * as oembed from '../schemas/oembed.schemas.ts';
import * as upload from '../schemas/upload.schemas.ts';
import * as voteRing from '../schemas/vote-ring.schemas.ts';
import * as webhook from '../schemas/webhook.schemas.ts';

/** Request bodies, converted as input (what a client may send). */
export const requestSchemas: Record<string, z.ZodType> = {
  AuthRequest: auth.AuthRequest,
  RegisterRequest: auth.RegisterBody,
  LoginRequest: auth.LoginRequest,
  LoginWithEmail: auth.LoginWithEmail,
  LoginWithUsername: auth.LoginWithUsername,
  LogoutRequest: auth.LogoutBody,
  TokenCreateRequest: auth.TokenCreateBody,
  UploadForm: upload.UploadForm,
  UploadJson: upload.UploadFields,
  PrivacyRequest: upload.PrivacyBody,
  UploadPatchRequest: upload.UploadPatchBody,
  HashCheckRequest: upload.HashCheckBody,
  VoteRequest: community.VoteBody,
  TagsRequest: community.TagsBody,
  ReportRequest: moderation.ReportBody,
  ModerationRequest: moderation.ModerationBody,
  VoteRingRequest: voteRing.VoteRingBody,
  BlocklistRequest: moderation.BlocklistBody,
  BanRequest: moderation.BanBody,
  WebhookCreateRequest: webhook.WebhookCreateBody,
  WebhookUpdateRequest: webhook.WebhookUpdateBody,
};

/** Response bodies, converted as output (what the server sends). */
export const responseSchemas: Record<string, z.ZodType> = {
  ErrorBody: common.ErrorBody,
  Success: common.Success,
  Health: common.Health,
  Readiness: common.Readiness,
  NotReady: common.NotReady,
  User: auth.UserSchema,
  Session: auth.SessionResponse,
  Me: auth.Me,
  Token: auth.TokenView,
  TokenScope: auth.ScopeName,
  TokenCreated: auth.TokenCreated,
  TokenList: auth.TokenList,
  TokenRevoked: auth.TokenRevoked,
  Tag: upload.Tag,
  ImageInfo: upload.ImageInfo,
  Embed: upload.Embed,
  VoteValue: upload.VoteValue,
  UploadRecord: upload.UploadRecord,
  DuplicateNotice: upload.DuplicateNotice,
  Provenance: upload.Provenance,
  ProvenanceSummary: upload.ProvenanceSummary,
  UploadDeleted: upload.UploadDeleted,
  ResumableState: upload.ResumableState,
  ResumableStatus: upload.ResumableStatusBody,
  ResumablePending: upload.ResumablePending,
  HashCheckResults: upload.HashCheckResults,
  OEmbed: oembed.OEmbedResponse,
  VoteResult: community.VoteResult,
  FeedPage: community.FeedPage,
  RecentItems: community.RecentItems,
  ProfileStats: community.ProfileStats,
  Profile: community.Profile,
  OwnUploadsPage: community.OwnUploadsPage,
  TagList: community.TagList,
  TagsChanged: community.TagsChanged,
  TagSuggestion: community.TagSuggestion,
  TagSuggestions: community.TagSuggestions,
  Report: moderation.ReportSchema,
  QueueItem: moderation.QueueItem,
  VoteRingItem: voteRing.VoteRingItem,
  VoteRingEvidence: voteRing.VoteRingEvidence,
  QueuePage: moderation.QueuePage,
  BlocklistEntry: moderation.BlocklistEntry,
  BlocklistPage: moderation.BlocklistPage,
  BlocklistAdded: moderation.BlocklistAdded,
  AdminUser: moderation.AdminUser,
  UsersPage: moderation.UsersPage,
  BanResult: moderation.BanResult,
  ModlogEntry: moderation.ModlogEntry,
  ModlogPage: moderation.ModlogPage,
  Job: moderation.Job,
  JobsPage: moderation.JobsPage,
  Webhook: webhook.WebhookView,
  WebhookEvent: webhook.WebhookEventName,
  WebhookCreated: webhook.WebhookCreated,
  WebhookRotated: webhook.WebhookRotated,
  WebhookList: webhook.WebhookList,
  WebhookDeleted: webhook.WebhookDeleted,
  WebhookDelivery: webhook.DeliveryView,
  WebhookDeliveryPage: webhook.DeliveryPage,
  WebhookPayload: webhook.WebhookPayload,
};

const str = { type: 'string' };

export const headerComponents = {
  'X-Request-Id': {
    description:
      "The request's id: the client's own `X-Request-Id` when it is 1–128 characters of `A-Za-z0-9._:-`, " +
      'otherwise a fresh UUID. The server log is keyed by it.',
    required: true,
    schema: str,
  },
  'RateLimit-Limit': {
    description: 'Requests allowed per window by the limit this request spent.',
    required: true,
    schema: { type: 'integer', minimum: 1 },
  },
  'RateLimit-Remaining': {
    description: 'Requests left in the current window.',
    required: true,
    schema: { type: 'integer', minimum: 0 },
  },
  'RateLimit-Reset': {
    description: 'Seconds until the window resets.',
    required: true,
    schema: { type: 'integer', minimum: 0 },
  },
  'Retry-After': {
    description: 'Whole seconds to wait before retrying.',
    required: true,
    schema: { type: 'integer', minimum: 1 },
  },
  ETag: { description: 'Validator for `If-None-Match` (304 when it matches).', schema: str },
  'Last-Modified': {
    description:
      'Validator for `If-Modified-Since` (304 when nothing is newer; `If-None-Match` wins when both are sent).',
    schema: str,
  },
  Location: {
    description: '`/api/upload/{id}` of the new upload.',
    schema: { type: 'string', pattern: '^/api/upload/' },
  },
  'Resumable-Location': {
    description: '`/api/uploads/resumable/{id}`: the tus upload URL (HEAD, PATCH, DELETE; `…/result`).',
    schema: { type: 'string', pattern: '^/api/uploads/resumable/' },
  },
  'Presigned-Location': {
    description: 'A presigned GET URL of the object in the store, valid for 300 seconds.',
    schema: { type: 'string', format: 'uri' },
  },
  'Idempotent-Replayed': {
    description:
      'Present when the response is the stored result of an earlier request with the same `Idempotency-Key`.',
    schema: { type: 'string', enum: ['true'] },
  },
  'Set-Cookie': {
    description:
      '`auth-token=<JWT>; HttpOnly; SameSite=Lax; Path=/` (+ `Secure` over HTTPS) ' +
      'with `Max-Age` = the JWT lifetime; logout sends it expired.',
    schema: str,
  },
  Vary: { description: 'The response depends on the caller.', schema: str },
  'Content-Security-Policy': {
    description:
      "Images: `default-src 'none'`; the reference page: exactly what its bundled scripts need, from this origin.",
    schema: str,
  },
  'X-Content-Type-Options': { schema: { type: 'string', enum: ['nosniff'] } },
} as const;

export const parameterComponents = {
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Makes a retry safe: the same key from the same user within 24 h returns the first result ' +
      'instead of creating another upload.',
    schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$', examples: ['upload-2f6c1d0e-miso-radiator'] },
  },
  IfNoneMatch: {
    name: 'If-None-Match',
    in: 'header',
    required: false,
    description: 'An `ETag` from an earlier response: 304 with an empty body when it still matches.',
    schema: { type: 'string', examples: ['W/"1f3a-9c2b7e4d"'] },
  },
};

export const securitySchemes = {
  bearerJwt: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'The HS256 JWT from `POST /api/auth` (register or login); lifetime `JWT_TTL`, 24 h by default.',
  },
  apiToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'pv_…',
    description:
      'An API token from `POST /api/auth/tokens/generate` (`pv_…`), for scripts and bots; ' +
      'valid until revoked or its `expires_at`. ' +
      'A token has the scopes it was made with (`x-scope` of each operation, and the roles of this requirement), ' +
      'or every scope of its owner when made without any; a request outside them is 403 `insufficient_scope`.',
  },
  cookieAuth: {
    type: 'apiKey',
    in: 'cookie',
    name: 'auth-token',
    description:
      'The cookie set by register and login, for browsers. ' +
      'A state-changing request authenticated only by the cookie and coming ' +
      'cross-site (`Sec-Fetch-Site: cross-site`, or another `Origin`) gets 403.',
  },
};

export const tagDescriptions = [
  { name: 'auth', description: 'Accounts, sessions and API tokens.' },
  { name: 'uploads', description: 'Images (a file or a URL the service fetches) and links.' },
  { name: 'votes', description: '`fucks` or `does_not_fuck`, one per user per upload.' },
  { name: 'feeds', description: "Public listings and the caller's profile." },
  { name: 'tags', description: 'Tags of uploads, and suggestions.' },
  {
    name: 'moderation',
    description:
      'Reports (any user); the queue, actions, blocklist and bans (admins, the moderators); the public modlog.',
  },
  {
    name: 'webhooks',
    description:
      "Signed webhooks (Standard Webhooks v1) for events on the caller's uploads and, for admins, the moderation " +
      'queue: endpoints, secrets and their delivery log. The bodies sent are under `webhooks`.',
  },
  { name: 'operations', description: 'Probes, metrics and this document.' },
];

export const documentInfo = {
  title: 'pixvote API',
  license: { name: 'MIT', identifier: 'MIT' },
  description:
    'Upload images (a file, or a URL the service fetches) or links, vote on them, list, tag, make private, ' +
    'delete.\n\n' +
    'JSON in and out, except image bytes and multipart uploads. ' +
    'Every non-2xx response except 304 is `{"error": "<code>", "message": "…"}`. ' +
    'Timestamps are ISO-8601 UTC; ids are UUIDs. Unknown JSON fields are ignored. ' +
    'Every response carries `X-Request-Id`.\n\n' +
    "A banned user's every authenticated request (JWT, API token or cookie) and every login answer 403 `banned`; " +
    'held and removed uploads (Moderation) answer 404 `not_found` and 410 `removed` to everyone but their owner ' +
    '(held) and admins.\n\n' +
    'Rate limits: `RATE_LIMIT_AUTH` per client IP on `POST /api/auth`, ' +
    '`RATE_LIMIT_UPLOAD`, `RATE_LIMIT_VOTE` and `RATE_LIMIT_REPORT` (reports of uploads) per user, ' +
    "`RATE_LIMIT_MEDIA` per IP on `GET /api/image/{id}` and the pages' static assets (they do not spend " +
    '`RATE_LIMIT_GENERAL`), `RATE_LIMIT_GENERAL` per IP on every other route except the probes and /metrics. ' +
    'Limited responses carry `RateLimit-Limit`, ' +
    '`RateLimit-Remaining`, `RateLimit-Reset`; 429 adds `Retry-After`.',
};
