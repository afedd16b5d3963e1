/**
 * The OpenAPI 3.1 document, generated from the routes' declarations (routes/index.ts) and the zod schemas they
 * parse with.
 * Errors, rate-limit and caching headers are derived from each operation's auth, limit and method, so
 * they follow the middleware rather than being restated per route.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { STATUS_OF, type ErrorCode } from '../../domain/errors.ts';
import { WEBHOOK_EVENTS, type WebhookEventType } from '../../domain/webhooks/webhook.types.ts';
import { ERROR_WHEN, errorBodyOf } from '../schemas/common.schemas.ts';
import { WebhookPayload } from '../schemas/webhook.schemas.ts';
import {
  documentInfo,
  headerComponents,
  parameterComponents,
  requestSchemas,
  responseSchemas,
  securitySchemes,
  tagDescriptions,
} from './openapi.components.ts';
import type { Operation, ResponseSpec } from './operation.types.ts';
import { operations } from '../routes/index.ts';

type Json = Record<string, unknown>;

const REF = '#/components/schemas/';

/** `/api/upload/:id` → `/api/upload/{id}`. */
const openApiPath = (koaPath: string) => koaPath.replace(/:(\w+)/g, '{$1}');

/** Names of the path parameters of a Koa path. */
const pathParamNames = (koaPath: string) => [...koaPath.matchAll(/:(\w+)/g)].map((m) => m[1]!);

const version = (
  JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

type OverrideContext = { zodSchema: z.core.$ZodTypes; jsonSchema: z.core.JSONSchema.BaseSchema };
type UnionDef = { type: string; discriminator?: unknown; options?: z.ZodType[] };

/**
 * Adjusts what zod writes so that generated clients come out right:
 * - a union of named alternatives told apart by one property (a zod discriminated union, or one whose metadata
 *   asks for `discriminator: { propertyName }`) gets an OpenAPI `discriminator` with an explicit mapping;
 * - request bodies (`requestBody`) carry no `default`: openapi-typescript (defaultNonNullable, its default) types a
 *   property with a default as always present, which is true of a response and false of a request. The default is
 *   said in the description instead. Parameters keep theirs (generators leave parameters optional);
 * - a file is bytes of some media type (`contentMediaType`, the OpenAPI 3.1 way), not `format: binary`;
 * - request examples are kept where zod drops them (see below).
 */
function adjust(nameOf: Map<z.ZodType, string>, io: 'input' | 'output', requestBody: boolean) {
  return ({ zodSchema, jsonSchema }: OverrideContext): void => {
    const json = jsonSchema as Json;
    const def = zodSchema._zod.def as UnionDef;
    const asked = json.discriminator as { propertyName?: string; mapping?: unknown } | undefined;
    const key = typeof def.discriminator === 'string' ? def.discriminator : asked?.propertyName;
    if (def.type === 'union' && def.options && key && !asked?.mapping) {
      const mapping: Record<string, string> = {};
      for (const option of def.options) {
        const name = nameOf.get(option);
        const values = discriminatorValues(option, key);
        if (!name || !values.length) {
          if (asked) throw new Error(`discriminator ${key}: every alternative must be named and have a literal ${key}`);
          return;
        }
        for (const v of values) mapping[String(v)] = REF + name;
      }
      json.discriminator = { propertyName: key, mapping };
    }
    // zod drops `examples` of a transforming schema when it writes the input side (they would show its output);
    // those of the request schemas here are written as a client sends them, so they are kept.
    const examples = io === 'input' ? z.globalRegistry.get(zodSchema as unknown as z.ZodType)?.examples : undefined;
    if (examples && !json.examples) json.examples = examples;
    if (def.type === 'file') {
      delete json.format;
      delete json.contentEncoding;
      json.contentMediaType = 'application/octet-stream';
    }
    if (requestBody && 'default' in json) {
      const said = `Default: \`${JSON.stringify(json.default)}\`.`;
      json.description = typeof json.description === 'string' ? `${json.description} ${said}` : said;
      delete json.default;
    }
  };
}

/** The values of a discriminator property an alternative of a union can have (through nested unions too). */
function discriminatorValues(schema: z.ZodType, key: string): unknown[] {
  const own = schema._zod.propValues?.[key];
  if (own) return [...own];
  const def = schema._zod.def as UnionDef;
  if (def.type !== 'union' || !def.options) return [];
  return [...new Set(def.options.flatMap((o) => discriminatorValues(o, key)))];
}

/** Converts a registry of named schemas in one pass, so nested named schemas become `$ref`s. */
function convert(
  named: Record<string, z.ZodType>,
  io: 'input' | 'output',
): { schemas: Record<string, Json>; nameOf: Map<z.ZodType, string> } {
  const registry = z.registry<{ id: string }>();
  const nameOf = new Map<z.ZodType, string>();
  for (const [id, schema] of Object.entries(named)) {
    registry.add(schema, { id });
    nameOf.set(schema, id);
  }
  const out = z.toJSONSchema(registry, {
    io,
    target: 'draft-2020-12',
    unrepresentable: 'any',
    uri: (id) => REF + id,
    override: adjust(nameOf, io, io === 'input'),
  }).schemas;
  const schemas: Record<string, Json> = {};
  for (const [id, s] of Object.entries(out)) {
    const { $schema: _s, $id: _i, ...rest } = s as Json;
    schemas[id] = rest;
  }
  return { schemas, nameOf };
}

const inline = (schema: z.ZodType, io: 'input' | 'output'): Json => {
  const override = adjust(new Map(), io, false);
  const json = z.toJSONSchema(schema, { io, target: 'draft-2020-12', unrepresentable: 'any', override }) as Json;
  const { $schema: _s, ...rest } = json;
  return rest;
};

/** The error codes an operation can answer with, from its own list and what the middleware in front of it does. */
export function errorCodesOf(op: Operation): ErrorCode[] {
  const codes = new Set<ErrorCode>(op.errors ?? []);
  codes.add('internal');
  // An unreachable database is 503 busy wherever it is asked, by the route or by authentication.
  codes.add('busy');
  if (op.limit) codes.add('rate_limited');
  // A Bearer token that does not verify is refused by authentication itself, public routes included
  // (middleware/authenticate.ts); a route that needs a user also refuses a request without one.
  codes.add('unauthorized');
  if (op.auth === 'required' && op.scope) codes.add('insufficient_scope');
  // A banned user's credential is refused by authentication itself, before any route, public ones included:
  // "every request the user authenticates" (API.md Moderation, Bans).
  codes.add('banned');
  // Any state-changing request authenticated by cookie from another site is refused, whatever the route.
  if (op.method !== 'get') codes.add('forbidden');
  if (op.method === 'post' || op.method === 'patch') {
    codes.add('invalid_request');
    codes.add('payload_too_large');
  }
  return [...codes];
}

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

/**
 * GETs whose 200 carries an ETag (every JSON one, by the conditional-GET middleware)
 * answer 304 to a matching If-None-Match.
 */
const hasEtag = (op: Operation) =>
  op.method === 'get' && Boolean(op.responses[200]?.json || op.responses[200]?.headers?.includes('ETag'));

function buildResponses(op: Operation, ref: (s: z.ZodType, io: 'input' | 'output') => Json): Json {
  const common = (status: number): Json => ({
    'X-Request-Id': headerRef('X-Request-Id'),
    ...(op.limit
      ? {
          'RateLimit-Limit': headerRef('RateLimit-Limit'),
          'RateLimit-Remaining': headerRef('RateLimit-Remaining'),
          'RateLimit-Reset': headerRef('RateLimit-Reset'),
        }
      : {}),
    ...(status === 429 || status === 503 ? { 'Retry-After': headerRef('Retry-After') } : {}),
  });
  const cacheControl = (values: string[]) => ({
    description: 'Caching policy of this response.',
    required: true,
    schema: { type: 'string', enum: values },
  });
  const out: Json = {};
  const success = (status: number, spec: ResponseSpec): Json => {
    const headers: Json = common(status);
    // A component may describe another use of a header: `Presigned-Location` and `Resumable-Location` are
    // Location headers.
    for (const h of spec.headers ?? [])
      headers[h.endsWith('-Location') ? 'Location' : h] = { ...headerRef(h), required: true };
    for (const h of spec.optionalHeaders ?? []) headers[h] = headerRef(h);
    if (op.method === 'get' && status === 200 && spec.json) headers.ETag = { ...headerRef('ETag'), required: true };
    if (spec.cacheControl) headers['Cache-Control'] = cacheControl(spec.cacheControl);
    const content: Json = {};
    if (spec.json) {
      const list = Array.isArray(spec.json) ? spec.json : [spec.json];
      content['application/json'] = {
        schema: list.length === 1 ? ref(list[0]!, 'output') : { oneOf: list.map((s) => ref(s, 'output')) },
        ...(spec.examples ? { examples: spec.examples } : {}),
      };
    }
    for (const [type, schema] of Object.entries(spec.other ?? {})) content[type] = { schema };
    return { description: spec.description, headers: fixRequired(headers), content };
  };
  for (const [status, spec] of Object.entries(op.responses)) out[status] = success(Number(status), spec);

  const ok = op.responses[200];
  if (ok && hasEtag(op)) {
    out['304'] = {
      description: 'Not modified: the `If-None-Match` tag still matches. Empty body.',
      headers: fixRequired({
        ...common(304),
        ETag: { ...headerRef('ETag'), required: true },
        ...(ok.cacheControl ? { 'Cache-Control': cacheControl(ok.cacheControl) } : {}),
      }),
    };
  }

  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodesOf(op)) byStatus.set(STATUS_OF[code], [...(byStatus.get(STATUS_OF[code]) ?? []), code]);
  for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    if (out[status]) continue;
    out[status] = {
      description: codes.map((c) => `\`${c}\`: ${ERROR_WHEN[c]}`).join('; '),
      headers: fixRequired({ ...common(status), 'Cache-Control': cacheControl(['no-store']) }),
      content: { 'application/json': { schema: inline(errorBodyOf(codes as [ErrorCode, ...ErrorCode[]]), 'output') } },
    };
  }
  return out;
}

/**
 * A Reference Object allows only summary and description beside `$ref`: a header required here is written out in full.
 */
function fixRequired(headers: Json): Json {
  const out: Json = {};
  for (const [name, h] of Object.entries(headers)) {
    const { $ref, required } = h as { $ref?: string; required?: boolean };
    if ($ref && required) {
      const comp = headerComponents[$ref.split('/').pop() as keyof typeof headerComponents];
      out[name] = { ...comp, required: true };
    } else out[name] = h;
  }
  return out;
}

function parametersOf(op: Operation): Json[] {
  const params: Json[] = [];
  const names = pathParamNames(op.path);
  const declared = Object.keys(op.params?.shape ?? {});
  if (names.join() !== declared.join())
    throw new Error(`${op.method.toUpperCase()} ${op.path}: path parameters ${names} but params schema ${declared}`);
  for (const [where, schema] of [
    ['path', op.params],
    ['query', op.query],
  ] as const) {
    if (!schema) continue;
    const json = inline(schema, 'input') as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, prop] of Object.entries(json.properties ?? {})) {
      const { description, ...rest } = prop;
      params.push({
        name,
        in: where,
        required: where === 'path' || (json.required ?? []).includes(name),
        ...(description ? { description } : {}),
        schema: rest,
      });
    }
  }
  if (op.idempotencyKey) params.push({ $ref: '#/components/parameters/IdempotencyKey' });
  if (hasEtag(op)) params.push({ $ref: '#/components/parameters/IfNoneMatch' });
  return params;
}

const SECURED = [{ bearerJwt: [] }, { apiToken: [] }, { cookieAuth: [] }];

/** The requirements of an authenticated operation: an API token must have its scope (a role, as OpenAPI 3.1 allows). */
const securedBy = (scope: Operation['scope']) =>
  scope ? [{ bearerJwt: [] }, { apiToken: [scope] }, { cookieAuth: [] }] : SECURED;

/** The operation's description, saying which scope an API token needs. */
function describedWithScope(op: Operation): string | undefined {
  if (!op.scope) return op.description;
  const said =
    op.auth === 'required'
      ? `An API token needs the scope \`${op.scope}\` (else 403 \`insufficient_scope\`).`
      : `An API token without the scope \`${op.scope}\` is served as an anonymous caller.`;
  return op.description ? `${op.description} ${said}` : said;
}

function build(ops: readonly Operation[]): Json {
  const requests = convert(requestSchemas, 'input');
  const responses = convert(responseSchemas, 'output');
  const ref = (s: z.ZodType, io: 'input' | 'output'): Json => {
    const name = (io === 'input' ? requests : responses).nameOf.get(s);
    if (!name)
      throw new Error(
        `a ${io === 'input' ? 'request' : 'response'} schema is not named in openapi/openapi.components.ts`,
      );
    return { $ref: REF + name };
  };
  const paths: Record<string, Json> = {};
  for (const op of ops) {
    const path = (paths[openApiPath(op.path)] ??= {});
    const body = op.body && {
      required: true,
      ...(op.body.description ? { description: op.body.description } : {}),
      content: {
        ...(op.body.multipart
          ? {
              'multipart/form-data': {
                schema: ref(op.body.multipart, 'input'),
                ...(op.body.multipartEncoding ? { encoding: op.body.multipartEncoding } : {}),
              },
            }
          : {}),
        ...(op.body.json ? { 'application/json': { schema: ref(op.body.json, 'input') } } : {}),
      },
    };
    path[op.method] = {
      operationId: op.operationId,
      tags: [op.tag],
      summary: op.summary,
      ...(describedWithScope(op) ? { description: describedWithScope(op) } : {}),
      security: op.auth === 'none' ? [] : op.auth === 'optional' ? [{}, ...securedBy(op.scope)] : securedBy(op.scope),
      ...(op.scope ? { 'x-scope': op.scope } : {}),
      parameters: parametersOf(op),
      ...(body ? { requestBody: body } : {}),
      responses: buildResponses(op, ref),
      ...(op.internal ? { 'x-internal': true } : {}),
    };
  }
  return {
    openapi: '3.1.1',
    info: { ...documentInfo, version },
    servers: [{ url: '/' }],
    tags: tagDescriptions,
    paths,
    webhooks: webhookItems(ref(WebhookPayload, 'output')),
    components: {
      schemas: merge(requests.schemas, responses.schemas),
      headers: headerComponents,
      parameters: parameterComponents,
      securitySchemes,
    },
  };
}

/** What each event means, for the document's `webhooks` (the requests the service sends to an endpoint). */
const EVENT_MEANS: Readonly<Record<WebhookEventType, string>> = {
  'upload.processed': 'One of your uploads was stored (its `moderation` says whether it is visible or held).',
  'upload.held': 'One of your uploads was held for review.',
  'upload.removed': 'One of your uploads was removed by the moderators.',
  'upload.restored': 'One of your held or removed uploads was approved by a moderator: it is visible again.',
  'upload.vote_milestone': 'One of your uploads reached 10, 100, 1000… upvotes (`milestone`), each once.',
  'report.created': 'Admins: a user reported an upload.',
  'moderation.item_created':
    'Admins: an item entered the moderation queue: an upload (`reason`: report, held, person_flag) or a vote ring ' +
    '(`reason`: vote_ring, with `vote_ring`: its id and number of accounts).',
};

/** OpenAPI 3.1 `webhooks`: one POST per event type, signed as Standard Webhooks v1 says. */
function webhookItems(payload: Json): Json {
  const header = (name: string, description: string) => ({
    name,
    in: 'header',
    required: true,
    description,
    schema: { type: 'string' },
  });
  const parameters = [
    header('webhook-id', 'The delivery id: the same on every retry of one event to one endpoint; deduplicate by it.'),
    header('webhook-timestamp', 'Unix seconds of this attempt; refuse one too far from your clock.'),
    header(
      'webhook-signature',
      '`v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">` keyed with the base64-decoded ' +
        'secret after `whsec_`; during the 24 hours after a rotation, two of them separated by a space.',
    ),
  ];
  return Object.fromEntries(
    WEBHOOK_EVENTS.map((type) => [
      type,
      {
        post: {
          summary: type,
          description: EVENT_MEANS[type],
          tags: ['webhooks'],
          parameters,
          requestBody: { required: true, content: { 'application/json': { schema: payload } } },
          responses: {
            '2XX': { description: 'Delivered. Any other answer, or none in time, is retried with backoff.' },
          },
        },
      },
    ]),
  );
}

function merge(a: Record<string, Json>, b: Record<string, Json>): Record<string, Json> {
  for (const name of Object.keys(a))
    if (name in b) throw new Error(`schema name ${name} is used for a request and a response`);
  return { ...a, ...b };
}

let cached: Json | null = null;

/** The document (built once per process; every part of it is static). */
export function openApiDocument(): Json {
  cached ??= build(operations);
  return cached;
}
