/**
 * One HTTP operation as the OpenAPI document describes it. Request parts point at the very zod schemas
 * the route parses with; response parts at the response schemas next to them in src/gateway/schemas.
 */
import type { z } from 'zod';
import type { Scope } from '../../domain/auth/scopes.ts';
import type { ErrorCode } from '../../domain/errors.ts';

/** The rate limit a request spends (RateLimit-* headers on every response, 429 when spent); null: never limited. */
export type LimitName = 'auth' | 'general' | 'media' | 'upload' | 'vote' | 'report';

/** Response headers of the document, by their component name. */
export type HeaderName =
  | 'ETag'
  | 'Last-Modified'
  | 'Location'
  | 'Presigned-Location'
  | 'Resumable-Location'
  | 'Idempotent-Replayed'
  | 'Set-Cookie'
  | 'Vary'
  | 'Content-Security-Policy'
  | 'X-Content-Type-Options';

export interface ResponseSpec {
  description: string;
  /** A JSON body: one schema, or several alternatives (oneOf). */
  json?: z.ZodType | z.ZodType[];
  /** A body that is not JSON: media type → JSON Schema. */
  other?: Record<string, Record<string, unknown>>;
  /** Headers this response always carries, beyond X-Request-Id and the rate-limit ones. */
  headers?: HeaderName[];
  /** Headers it may carry. */
  optionalHeaders?: HeaderName[];
  /** The exact Cache-Control values the route sends. */
  cacheControl?: string[];
  /** Named examples of the JSON body (the Example Objects of its media type); each must validate against `json`. */
  examples?: Record<string, { summary: string; value: unknown }>;
}

export interface Operation {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** Koa form, as the router declares it: `/api/upload/:id`. */
  path: string;
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  /** `optional`: anonymous callers are served too, and an authenticated one may see more. */
  auth: 'required' | 'optional' | 'none';
  /**
   * The scope an API token needs (API.md Auth, Scopes; JWTs and the cookie have every scope). With `auth:
   * 'required'`, a token without it gets 403 `insufficient_scope` naming it; with `auth: 'optional'`, it is served
   * as an anonymous caller would be (e.g. an owner's private upload needs `read` to be seen).
   */
  scope?: Scope;
  limit: LimitName | null;
  params?: z.ZodObject;
  query?: z.ZodObject;
  /** Request headers the operation reads. */
  idempotencyKey?: boolean;
  body?: {
    json?: z.ZodType;
    multipart?: z.ZodType;
    /** The multipart Encoding Object: per form field, e.g. the media types a file part may have. */
    multipartEncoding?: Record<string, { contentType: string }>;
    description?: string;
  };
  responses: Record<number, ResponseSpec>;
  /** Error codes particular to this route; 401/403/413/429/500 and body errors are added from the fields above. */
  errors?: ErrorCode[];
  /** Not an API operation (the reference page and its assets): listed, kept out of generated clients. */
  internal?: boolean;
}
