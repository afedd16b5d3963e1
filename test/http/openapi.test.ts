import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type Router from '@koa/router';
import { Validator } from '@seriousme/openapi-schema-validator';
import { startApp, type TestApp } from '../support/app.ts';
import { openApiDocument } from '../../src/gateway/openapi/openapi.document.ts';

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

test('every route the app mounts is documented, and every documented operation is mounted', () => {
  const doc = openApiDocument() as { paths: Record<string, Record<string, unknown>> };
  const documented = new Set(Object.entries(doc.paths).flatMap(([p, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`)));
  const mounted = mountedRoutes(app);
  assert.ok(mounted.size >= 20, `found ${mounted.size} routes`);
  assert.deepEqual([...mounted].filter((r) => !documented.has(r)), [], 'routes missing from the document');
  assert.deepEqual([...documented].filter((r) => !mounted.has(r)), [], 'documented operations no route serves');
});

test('the document names the security schemes, the error codes and the contract headers', () => {
  const doc = openApiDocument() as any;
  assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ['apiToken', 'bearerJwt', 'cookieAuth']);
  assert.equal(doc.components.securitySchemes.cookieAuth.name, 'auth-token');
  assert.deepEqual(doc.components.schemas.ErrorBody.required, ['error', 'message']);
  assert.equal(doc.components.schemas.ErrorBody.properties.error.enum.length, 16);
  const codes: string[] = doc.components.schemas.ErrorBody.properties.error.enum;
  assert.ok(codes.includes('method_not_allowed'), 'the 405 code is listed');

  const upload = doc.paths['/api/v1/upload'].post;
  assert.deepEqual(Object.keys(upload.requestBody.content).sort(), ['application/json', 'multipart/form-data']);
  assert.deepEqual(Object.keys(upload.responses).sort(), ['200', '201', '400', '401', '403', '409', '413', '429', '500', '503']);
  assert.ok(upload.parameters.some((p: { $ref?: string }) => p.$ref === '#/components/parameters/IdempotencyKey'));
  assert.ok(upload.responses['201'].headers.Location.required);
  assert.ok(upload.responses['429'].headers['Retry-After']);
  for (const h of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'X-Request-Id']) assert.ok(upload.responses['429'].headers[h], h);
  assert.deepEqual(upload.responses['400'].content['application/json'].schema.properties.error.enum.sort(), [
    'fetch_failed', 'human_detected', 'invalid_image', 'invalid_request', 'invalid_tag', 'too_many_tags', 'unsupported_format',
  ]);

  const feed = doc.paths['/api/uploads'].get;
  assert.deepEqual(feed.parameters.filter((p: { in?: string }) => p.in === 'query').map((p: { name: string }) => p.name), ['page', 'limit', 'sort', 'type', 'user', 'tag']);
  assert.deepEqual(feed.responses['200'].headers['Cache-Control'].schema.enum, ['public, max-age=120']);
  assert.ok(feed.responses['304']);
  assert.equal(doc.paths['/api/image/{id}'].get.responses['200'].content['image/webp'].schema.contentMediaType, 'image/webp');
  assert.ok(doc.paths['/metrics'].get.responses['200'].content['text/plain']);
  assert.equal(doc.paths['/healthz'].get.responses['429'], undefined, 'probes are never rate limited');
  const readOne = doc.paths['/api/upload/{id}'].get.responses['503'];
  assert.ok(readOne.headers['Retry-After'], 'an unreachable database is 503 busy with Retry-After on any route');
});
