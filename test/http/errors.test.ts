import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../support/app.ts';
import { registerUser } from '../support/users.ts';

let app: TestApp;
before(async () => {
  app = await startApp();
});
after(() => app.close());

test('unknown routes get a JSON 404 not_found', async () => {
  const r = await app.api.get('/api/nothing-here', { unchecked: 'probes an unknown route' });
  assert.equal(r.status, 404);
  assert.equal(r.headers.get('content-type'), 'application/json; charset=utf-8');
  assert.deepEqual(Object.keys(r.body).sort(), ['error', 'message']);
  assert.equal(r.body.error, 'not_found');
});

test('malformed JSON is 400 invalid_request', async () => {
  const r = await app.api.post('/api/auth', undefined, { raw: '{"action": "login",', headers: { 'content-type': 'application/json' } });
  assert.equal(r.status, 400);
  assert.equal(r.body.error, 'invalid_request');
  assert.match(r.body.message, /JSON/);
});

test('a JSON body over 1 MiB is 413 payload_too_large naming the limit', async () => {
  const u = await registerUser(app.api);
  const big = JSON.stringify({ name: 'x'.repeat(1024 * 1024) });
  const r = await app.api.post('/api/auth/tokens/generate', undefined, { raw: big, token: u.token, headers: { 'content-type': 'application/json' } });
  assert.equal(r.status, 413);
  assert.equal(r.body.error, 'payload_too_large');
  assert.match(r.body.message, /1 MiB/);
});

test('a JSON array or scalar where an object is expected is 400', async () => {
  for (const raw of ['[1,2]', '"register"']) {
    const r = await app.api.post('/api/auth', undefined, { raw, headers: { 'content-type': 'application/json' } });
    assert.equal(r.status, 400, raw);
    assert.equal(r.body.error, 'invalid_request');
  }
});

test('every response carries X-Request-Id; a sane client id is echoed, an insane one replaced', async () => {
  const plain = await app.api.get('/healthz');
  assert.match(plain.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  const sane = await app.api.get('/healthz', { headers: { 'x-request-id': 'client-123.abc' } });
  assert.equal(sane.headers.get('x-request-id'), 'client-123.abc');
  const insane = await app.api.get('/healthz', { headers: { 'x-request-id': 'x'.repeat(200) } });
  assert.match(insane.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  const error = await app.api.get('/nope', { headers: { 'x-request-id': 'err-1' }, unchecked: 'probes an unknown route' });
  assert.equal(error.headers.get('x-request-id'), 'err-1');
});

test('responses carry the security headers', async () => {
  const r = await app.api.get('/healthz');
  assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
  assert.match(r.headers.get('content-security-policy') ?? '', /default-src 'none'/);
  assert.equal(r.headers.get('x-frame-options'), 'DENY');
});

test('GET /healthz and /readyz', async () => {
  assert.deepEqual((await app.api.get('/healthz')).body, { status: 'ok' });
  const ready = await app.api.get('/readyz');
  assert.equal(ready.status, 200);
  assert.equal(ready.body.checks.database.status, 'ok');
  if (app.config.redisUrl) assert.equal(ready.body.checks.redis.status, 'ok');
});
