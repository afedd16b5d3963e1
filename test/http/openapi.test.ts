import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type Router from '@koa/router';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { startApp, type TestApp } from '../support/app.ts';
import { WEB_PATHS } from '../../src/gateway/routes/web.routes.ts';
import { openApiDocument } from '../../src/gateway/openapi/openapi.document.ts';
import { operations } from '../../src/gateway/routes/index.ts';

// ajv-formats is CommonJS with a default export; under ESM interop the function sits on `.default`.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
) => void;

let app: TestApp;
before(async () => {
  app = await startApp();
});
after(() => app.close());

/** METHOD path-template of every route the running app mounts, read from its routers. */
function mountedRoutes(t: TestApp): Set<string> {
  const out = new Set<string>();
  for (const mw of t.composed.app.middleware) {
    const router = (mw as { router?: Router }).router;
    for (const layer of router?.stack ?? []) {
      for (const m of layer.methods) if (m !== 'HEAD') out.add(`${m} ${String(layer.path).replace(/:(\w+)/g, '{$1}')}`);
    }
  }
  return out;
}

test('GET /api/openapi.json serves a valid OpenAPI 3.1 document whose references all resolve', async () => {
  const r = await app.api.get('/api/openapi.json');
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, openApiDocument());
  const validator = new Validator();
  const res = await validator.validate(structuredClone(r.body));
  assert.equal(res.valid, true, JSON.stringify(res.errors, null, 2));
  assert.equal(validator.version, '3.1');
  assert.doesNotThrow(() => validator.resolveRefs());
  const again = await app.api.get('/api/openapi.json', { headers: { 'if-none-match': r.headers.get('etag')! } });
  assert.equal(again.status, 304);
});

test('every route the app mounts has a declaration (the document is built from them), web pages aside', () => {
  // Routes and operations are one declaration each (src/gateway/routes/route.ts), so what is left to check is that
  // nothing is mounted beside the route table, and that every declaration is mounted once.
  const declared = operations.map((op) => `${op.method.toUpperCase()} ${op.path.replace(/:(\w+)/g, '{$1}')}`);
  assert.equal(new Set(declared).size, declared.length, 'each method and path is declared once');
  const doc = openApiDocument() as { paths: Record<string, Record<string, unknown>> };
  const documented = Object.entries(doc.paths).flatMap(([p, item]) =>
    Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`),
  );
  assert.deepEqual(documented.sort(), [...declared].sort(), 'the document lists every declaration');
  // The web pages (issue 20) are served by the same app but are no API operation: they are left out.
  const pages = new Set(WEB_PATHS.map((p) => `GET ${p.replace(/:(\w+)/g, '{$1}')}`));
  const mounted = new Set([...mountedRoutes(app)].filter((r) => !pages.has(r)));
  assert.equal(mountedRoutes(app).size - mounted.size, pages.size, 'every web page is mounted');
  assert.ok(mounted.size >= 20, `found ${mounted.size} routes`);
  assert.deepEqual(
    [...mounted].sort(),
    [...declared].sort(),
    'mounted routes without a declaration, or unmounted ones',
  );
});

test('the document names the security schemes, the error codes and the contract headers', () => {
  const doc = openApiDocument() as any;
  assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ['apiToken', 'bearerJwt', 'cookieAuth']);
  assert.equal(doc.components.securitySchemes.cookieAuth.name, 'auth-token');
  assert.deepEqual(doc.components.schemas.ErrorBody.required, ['error', 'message']);
  assert.equal(doc.components.schemas.ErrorBody.properties.error.enum.length, 26);
  const codes: string[] = doc.components.schemas.ErrorBody.properties.error.enum;
  assert.ok(codes.includes('method_not_allowed'), 'the 405 code is listed');
  for (const code of [
    'blocked_content',
    'banned',
    'removed',
    'storage_unavailable',
    'invalid_cursor',
    'page_too_deep',
    'not_implemented',
  ])
    assert.ok(codes.includes(code), code);

  const upload = doc.paths['/api/v1/upload'].post;
  assert.deepEqual(Object.keys(upload.requestBody.content).sort(), ['application/json', 'multipart/form-data']);
  assert.deepEqual(Object.keys(upload.responses).sort(), [
    '200',
    '201',
    '400',
    '401',
    '403',
    '409',
    '413',
    '429',
    '500',
    '503',
  ]);
  assert.ok(upload.parameters.some((p: { $ref?: string }) => p.$ref === '#/components/parameters/IdempotencyKey'));
  assert.ok(upload.responses['201'].headers.Location.required);
  assert.ok(upload.responses['429'].headers['Retry-After']);
  for (const h of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'X-Request-Id'])
    assert.ok(upload.responses['429'].headers[h], h);
  assert.deepEqual(upload.responses['400'].content['application/json'].schema.properties.error.enum.sort(), [
    'ai_generated',
    'blocked_content',
    'fetch_failed',
    'human_detected',
    'invalid_image',
    'invalid_request',
    'invalid_tag',
    'too_many_tags',
    'unsupported_format',
  ]);

  const feed = doc.paths['/api/uploads'].get;
  assert.deepEqual(
    feed.parameters.filter((p: { in?: string }) => p.in === 'query').map((p: { name: string }) => p.name),
    ['page', 'limit', 'sort', 'type', 'user', 'tag', 'ai', 'cursor'],
  );
  assert.deepEqual(feed.responses['200'].headers['Cache-Control'].schema.enum, ['public, max-age=120']);
  assert.ok(feed.responses['304']);
  assert.equal(
    doc.paths['/api/image/{id}'].get.responses['200'].content['image/webp'].schema.contentMediaType,
    'image/webp',
  );
  assert.ok(doc.paths['/metrics'].get.responses['200'].content['text/plain']);
  assert.equal(doc.paths['/healthz'].get.responses['429'], undefined, 'probes are never rate limited');
  const readOne = doc.paths['/api/upload/{id}'].get.responses['503'];
  assert.ok(readOne.headers['Retry-After'], 'an unreachable database is 503 busy with Retry-After on any route');
});

/** Every value under an `examples` (schema: an array) or `example` key, anywhere below `node`. */
function examplesIn(node: unknown, out: unknown[] = []): unknown[] {
  if (Array.isArray(node)) for (const n of node) examplesIn(n, out);
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === 'examples' && Array.isArray(v)) out.push(...v);
      else if (k === 'example') out.push(v);
      else if (k === 'examples' && v && typeof v === 'object') {
        out.push(...Object.values(v).map((e) => (e as { value?: unknown }).value));
      }
      examplesIn(v, out);
    }
  }
  return out;
}

/** Leaf values of an example, to look for placeholders. */
const leaves = (v: unknown): unknown[] => (v && typeof v === 'object' ? Object.values(v).flatMap(leaves) : [v]);

test('every request body, its fields and every parameter carry a realistic example ("Try it out" pre-fills it)', () => {
  const doc = openApiDocument() as any;
  const resolve = (s: any): any => (s?.$ref ? resolve(doc.components.schemas[s.$ref.split('/').pop()]) : s);
  const missing: string[] = [];
  const seen: unknown[] = [];
  /** A request schema: itself, each alternative and each field (bytes excepted) has an example. */
  const check = (where: string, s: any) => {
    const schema = resolve(s);
    if (!schema.examples?.length) missing.push(where);
    for (const [i, alt] of (schema.oneOf ?? []).entries()) check(`${where} oneOf[${i}]`, alt);
    for (const [name, prop] of Object.entries<any>(schema.properties ?? {})) {
      if (prop.contentMediaType) continue;
      if (!prop.examples?.length && prop.const === undefined) missing.push(`${where}.${name}`);
    }
  };
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      const where = `${method.toUpperCase()} ${path}`;
      for (const [type, media] of Object.entries<any>(op.requestBody?.content ?? {})) {
        check(`${where} ${type}`, media.schema);
        seen.push(...examplesIn(resolve(media.schema)));
      }
      for (const p of op.parameters ?? []) {
        const param = p.$ref ? doc.components.parameters[p.$ref.split('/').pop()] : p;
        const found = examplesIn(param);
        if (!found.length) missing.push(`${where} parameter ${param.name}`);
        seen.push(...found);
      }
    }
  }
  for (const name of Object.keys(doc.components.schemas).filter((n) => /Request$|^Login|^Upload(Form|Json)$/.test(n))) {
    seen.push(...examplesIn(doc.components.schemas[name]));
  }
  assert.deepEqual(missing, [], 'without an example');
  assert.ok(seen.length > 40, `${seen.length} examples`);
  const placeholders = seen.flatMap(leaves).filter((v) => v === 'string' || v === '' || v === null);
  assert.deepEqual(placeholders, [], 'placeholder values among the examples');
  // The upload form pre-fills a public upload with real tags.
  const form = doc.components.schemas.UploadForm;
  assert.equal(form.properties.is_private.examples[0], false);
  assert.equal(form.examples[0].is_private, false);
  assert.equal(form.properties.tags.examples[0], 'cats, cute');
});

test('request bodies are typed for generated clients: login alternatives, optional defaults, the file as bytes', () => {
  const doc = openApiDocument() as any;
  const schemas = doc.components.schemas;
  // POST /api/auth: one alternative per action, told apart by `action`.
  assert.deepEqual(schemas.AuthRequest.discriminator, {
    propertyName: 'action',
    mapping: {
      register: '#/components/schemas/RegisterRequest',
      login: '#/components/schemas/LoginRequest',
      logout: '#/components/schemas/LogoutRequest',
    },
  });
  assert.equal(schemas.AuthRequest.oneOf.length, 3);
  // A login is by email or by username: two closed objects, each with what it needs.
  assert.deepEqual(schemas.LoginRequest.oneOf, [
    { $ref: '#/components/schemas/LoginWithEmail' },
    { $ref: '#/components/schemas/LoginWithUsername' },
  ]);
  assert.deepEqual(schemas.LoginWithEmail.required, ['action', 'email', 'password']);
  assert.deepEqual(schemas.LoginWithUsername.required, ['action', 'username', 'password']);
  assert.equal(schemas.LoginWithEmail.additionalProperties, false);
  assert.equal(schemas.LoginWithUsername.additionalProperties, false);

  // A field with a default is optional in a request, and carries no `default` (openapi-typescript makes a
  // property with a default required).
  for (const name of ['UploadForm', 'UploadJson']) {
    assert.deepEqual(schemas[name].required, ['upload_type'], name);
    for (const [field, prop] of Object.entries<any>(schemas[name].properties)) {
      assert.equal(prop.default, undefined, `${name}.${field}`);
    }
  }
  const feed = doc.paths['/api/uploads'].get.parameters.filter((p: any) => p.in === 'query');
  assert.deepEqual(
    feed.filter((p: any) => p.required).map((p: any) => p.name),
    [],
  );

  // The multipart file: bytes (contentMediaType, OpenAPI 3.1), of the media types the encoding lists.
  assert.deepEqual(schemas.UploadForm.properties.file.contentMediaType, 'application/octet-stream');
  assert.equal(schemas.UploadForm.properties.file.format, undefined);
  assert.equal(schemas.UploadForm.properties.file.contentEncoding, undefined);
  for (const path of ['/api/v1/upload', '/api/upload']) {
    const multipart = doc.paths[path].post.requestBody.content['multipart/form-data'];
    assert.deepEqual(multipart.encoding, { file: { contentType: 'image/jpeg, image/png, image/gif, image/webp' } });
  }
});

/** The error codes one documented response of an operation lists. */
const codesAt = (op: any, status: number): string[] =>
  op.responses[String(status)]?.content['application/json'].schema.properties.error.enum ?? [];

test('every moderation route is documented with its error codes; held and removed uploads on the upload routes', () => {
  const doc = openApiDocument() as any;
  const moderation = Object.entries<any>(doc.paths).flatMap(([path, item]) =>
    Object.entries<any>(item)
      .filter(([, op]) => op.tags.includes('moderation'))
      .map(([method, op]) => [`${method.toUpperCase()} ${path}`, op] as const),
  );
  assert.deepEqual(moderation.map(([where]) => where).sort(), [
    'DELETE /api/admin/blocklist/{id}',
    'DELETE /api/admin/users/{id}/ban',
    'GET /api/admin/blocklist',
    'GET /api/admin/jobs',
    'GET /api/admin/jobs/{id}',
    'GET /api/admin/moderation',
    'GET /api/admin/users',
    'GET /api/modlog',
    'POST /api/admin/blocklist',
    'POST /api/admin/uploads/{id}/moderation',
    'POST /api/admin/users/{id}/ban',
    'POST /api/admin/vote-rings/{id}',
    'POST /api/upload/{id}/report',
  ]);
  for (const [where, op] of moderation) {
    // Every route but the public modlog needs a user; every one of them refuses a banned one.
    assert.ok(codesAt(op, 403).includes('banned'), `${where}: banned`);
    if (where.includes('/admin/')) {
      assert.ok(codesAt(op, 401).includes('unauthorized'), `${where}: 401`);
      assert.ok(codesAt(op, 403).includes('forbidden'), `${where}: forbidden to non-admins`);
    }
    // Each success carries an example.
    for (const [status, r] of Object.entries<any>(op.responses).filter(([s]) => s.startsWith('2')))
      assert.ok(Object.keys(r.content['application/json'].examples ?? {}).length, `${where} ${status}: example`);
  }
  const report = doc.paths['/api/upload/{id}/report'].post;
  assert.deepEqual(
    Object.keys(report.responses).filter((s) => s < '300'),
    ['200', '201'],
  );
  assert.deepEqual(codesAt(report, 410), ['removed']);
  assert.ok(report.responses['429'], 'RATE_LIMIT_REPORT');
  // A younger account than REPORT_MIN_ACCOUNT_AGE / VOTE_MIN_ACCOUNT_AGE asks for: 403 account_too_new.
  assert.ok(codesAt(report, 403).includes('account_too_new'));
  assert.ok(codesAt(doc.paths['/api/vote'].post, 403).includes('account_too_new'));
  assert.ok(doc.paths['/api/admin/blocklist'].post.parameters.some((p: any) => p.name === 'dry_run'));
  const modlog = doc.paths['/api/modlog'].get;
  assert.deepEqual(modlog.security[0], {}, 'the modlog is public');
  // Public, yet a Bearer token that does not verify is refused there as everywhere (issue 44).
  assert.deepEqual(codesAt(modlog, 401), ['unauthorized']);

  // Logging in as a banned user is 403 banned; uploads matching the blocklist are 400 blocked_content.
  assert.ok(codesAt(doc.paths['/api/auth'].post, 403).includes('banned'));
  for (const path of ['/api/v1/upload', '/api/upload'])
    assert.ok(codesAt(doc.paths[path].post, 400).includes('blocked_content'), path);
  // A removed upload is 410 on every route that reaches one upload.
  for (const [path, method] of [
    ['/api/upload/{id}', 'get'],
    ['/api/upload/{id}', 'delete'],
    ['/api/upload/{id}/privacy', 'patch'],
    ['/api/image/{id}', 'get'],
    ['/api/vote', 'post'],
    ['/api/uploads/{id}/tags', 'get'],
    ['/api/uploads/{id}/tags', 'post'],
    ['/api/uploads/{id}/tags/{slug}', 'delete'],
  ] as const)
    assert.deepEqual(codesAt(doc.paths[path][method], 410), ['removed'], `${method} ${path}`);
  assert.equal(doc.paths['/api/uploads'].get.responses['410'], undefined, 'listings just leave them out');
  assert.deepEqual(doc.components.schemas.UploadRecord.properties.moderation.enum, ['visible', 'held', 'removed']);
});

test('every response example validates against the schema of its response', () => {
  const doc = structuredClone(openApiDocument()) as any;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, 'openapi.json');
  const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
  const invalid: string[] = [];
  let checked = 0;
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      for (const [status, response] of Object.entries<any>(op.responses)) {
        for (const [type, media] of Object.entries<any>(response.content ?? {})) {
          if (!media.examples) continue;
          const at = pointer('paths', path, method, 'responses', status, 'content', type, 'schema');
          const validate = ajv.compile({ $ref: `openapi.json#/${at}` });
          for (const [name, example] of Object.entries<any>(media.examples)) {
            checked++;
            if (!validate(example.value))
              invalid.push(`${method.toUpperCase()} ${path} ${status} ${name}: ${ajv.errorsText(validate.errors)}`);
          }
        }
      }
    }
  }
  assert.deepEqual(invalid, []);
  assert.ok(checked >= 12, `${checked} response examples`);
});
