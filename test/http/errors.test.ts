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

test('a NUL character in any text input is 400 invalid_request naming the field, never a 500, and stores nothing', async () => {
  const u = await registerUser(app.api);
  const link = await app.api.post('/api/upload', { upload_type: 'link', external_url: 'https://example.com/nul', description: 'a\u0000b' }, { token: u.token });
  assert.equal(link.status, 400, link.text);
  assert.equal(link.body.error, 'invalid_request');
  assert.match(link.body.message, /description contains a NUL/);
  const login = await app.api.post('/api/auth', { action: 'login', email: 'x\u0000@example.com', password: 'whatever123' });
  assert.equal(login.status, 400, login.text);
  const token = await app.api.post('/api/auth/tokens/generate', { name: 'bot\u0000' }, { token: u.token });
  assert.equal(token.status, 400, token.text);
  for (const path of ['/api/uploads?tag=a%00b', '/api/uploads?user=a%00b', '/api/tags?q=a%00']) {
    const r = await app.api.get(path);
    assert.equal(r.status, 400, `${path}: ${r.text}`);
    assert.equal(r.body.error, 'invalid_request');
  }
  const own = await app.api.post('/api/upload', { upload_type: 'link', external_url: 'https://example.com/nul-ok' }, { token: u.token });
  assert.equal(own.status, 201);
  const del = await app.api.del(`/api/uploads/${own.body.id}/tags/a%00b`, { token: u.token });
  assert.ok(del.status === 400 || del.status === 404, `${del.status} ${del.text}`);
  assert.deepEqual((await app.api.get(`/api/profile`, { token: u.token })).body.uploads.map((x: { id: string }) => x.id), [own.body.id], 'nothing else was stored');
});
