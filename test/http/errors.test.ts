import { after, before, describe, test } from 'node:test';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { currentMetrics, startApp, type TestApp } from '../support/app.ts';
import { registerUser } from '../support/users.ts';
import { encodeForm, openRaw, type RawReply } from '../support/raw-http.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { uploadImage } from '../support/uploads.ts';
import { until } from '../support/budget.ts';

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
  const r = await app.api.post('/api/auth', undefined, {
    raw: '{"action": "login",',
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(r.status, 400);
  assert.equal(r.body.error, 'invalid_request');
  assert.match(r.body.message, /JSON/);
});

test('a JSON body over 1 MiB is 413 payload_too_large naming the limit', async () => {
  const u = await registerUser(app.api);
  const big = JSON.stringify({ name: 'x'.repeat(1024 * 1024) });
  const r = await app.api.post('/api/auth/tokens/generate', undefined, {
    raw: big,
    token: u.token,
    headers: { 'content-type': 'application/json' },
  });
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
  const error = await app.api.get('/nope', {
    headers: { 'x-request-id': 'err-1' },
    unchecked: 'probes an unknown route',
  });
  assert.equal(error.headers.get('x-request-id'), 'err-1');
});

test('responses carry the security headers', async () => {
  const r = await app.api.get('/healthz');
  assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
  assert.match(r.headers.get('content-security-policy') ?? '', /default-src 'none'/);
  assert.equal(r.headers.get('x-frame-options'), 'DENY');
});

/** helmet's headers as the contract configures them (API.md: nosniff, a CSP of `default-src 'none'`). */
const SECURITY = {
  'content-security-policy': "default-src 'none';frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-site',
};
/** helmet's headers that only act on an HTML document: on the reference page, not on every JSON response. */
const DOCUMENT = {
  'cross-origin-opener-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0',
};

test('every response gets the same security headers: JSON, images, errors of the app and errors below it', async () => {
  const u = await registerUser(app.api);
  const made = await uploadImage(app.api, u.token, await photoJpeg({ seed: 4242 }));
  assert.equal(made.status, 201, made.text);
  const replies = {
    json: await app.api.get('/api/uploads'),
    image: await app.api.get(`/api/image/${made.body.id}?size=thumb`),
    'not found': await app.api.get('/api/nothing-here', { unchecked: 'probes an unknown route' }),
    'method not allowed': await app.api.del('/api/uploads', { unchecked: 'probes a method the path does not serve' }),
    unauthorized: await app.api.get('/api/profile'),
  };
  // An image sets its own CSP (`default-src 'none'` alone) and lets other sites embed it (CORP cross-origin).
  const ownedByImages = new Set(['content-security-policy', 'cross-origin-resource-policy']);
  assert.match(replies.image.headers.get('content-security-policy') ?? '', /^default-src 'none'/);
  for (const [what, r] of Object.entries(replies)) {
    for (const [name, value] of Object.entries(SECURITY)) {
      if (what !== 'image' || !ownedByImages.has(name)) assert.equal(r.headers.get(name), value, `${what}: ${name}`);
    }
    assert.equal(r.headers.get('strict-transport-security'), null, `${what}: no HSTS over plain HTTP`);
  }
  const c = await openRaw(app.url);
  c.write('GET /healthz HTTP/1.1 and then some\r\nHost: x\r\n\r\n');
  const below = await c.reply();
  assert.equal(below.status, 400);
  for (const [name, value] of Object.entries(SECURITY)) {
    assert.equal(below.headers[name], value, `below the app: ${name}`);
  }
  await c.closed();
  // The API reference page replaces the CSP and adds the document headers.
  const docs = await app.api.get('/docs');
  assert.notEqual(docs.headers.get('content-security-policy'), SECURITY['content-security-policy']);
  for (const [name, value] of Object.entries({ ...SECURITY, ...DOCUMENT })) {
    if (name !== 'content-security-policy') assert.equal(docs.headers.get(name), value, `docs: ${name}`);
  }
});

test('GET /healthz and /readyz', async () => {
  assert.deepEqual((await app.api.get('/healthz')).body, { status: 'ok' });
  const ready = await app.api.get('/readyz');
  assert.equal(ready.status, 200);
  assert.equal(ready.body.checks.database.status, 'ok');
  if (app.config.redisUrl) assert.equal(ready.body.checks.redis.status, 'ok');
});

test(
  'a NUL character in any text input is 400 invalid_request naming the field, ' + 'never a 500, and stores nothing',
  async () => {
    const u = await registerUser(app.api);
    const link = await app.api.post(
      '/api/upload',
      { upload_type: 'link', external_url: 'https://example.com/nul', description: 'a\u0000b' },
      { token: u.token },
    );
    assert.equal(link.status, 400, link.text);
    assert.equal(link.body.error, 'invalid_request');
    assert.match(link.body.message, /description contains a NUL/);
    const login = await app.api.post('/api/auth', {
      action: 'login',
      email: 'x\u0000@example.com',
      password: 'whatever123',
    });
    assert.equal(login.status, 400, login.text);
    const token = await app.api.post('/api/auth/tokens/generate', { name: 'bot\u0000' }, { token: u.token });
    assert.equal(token.status, 400, token.text);
    for (const path of ['/api/uploads?tag=a%00b', '/api/uploads?user=a%00b', '/api/tags?q=a%00']) {
      const r = await app.api.get(path);
      assert.equal(r.status, 400, `${path}: ${r.text}`);
      assert.equal(r.body.error, 'invalid_request');
    }
    const own = await app.api.post(
      '/api/upload',
      { upload_type: 'link', external_url: 'https://example.com/nul-ok' },
      { token: u.token },
    );
    assert.equal(own.status, 201);
    const del = await app.api.del(`/api/uploads/${own.body.id}/tags/a%00b`, { token: u.token });
    assert.ok(del.status === 400 || del.status === 404, `${del.status} ${del.text}`);
    assert.deepEqual(
      (await app.api.get(`/api/profile`, { token: u.token })).body.uploads.map((x: { id: string }) => x.id),
      [own.body.id],
      'nothing else was stored',
    );
  },
);

describe('errors raised below the app get the contract body, an X-Request-Id and a closed connection', () => {
  const assertContract = (r: RawReply, status: number, code: string, message: RegExp) => {
    assert.equal(r.status, status, r.text);
    assert.equal(r.headers['content-type'], 'application/json; charset=utf-8');
    assert.deepEqual(Object.keys(r.body).sort(), ['error', 'message']);
    assert.equal(r.body.error, code);
    assert.match(r.body.message, message);
    assert.match(r.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
    assert.equal(r.headers.connection, 'close');
  };
  /** Entries under DATA_DIR/tmp, directories included (instance heartbeats aside). */
  const tmpEntries = async (dataDir: string): Promise<string[]> =>
    (await readdir(join(dataDir, 'tmp'), { recursive: true }).catch(() => [] as string[])).filter(
      (e) => !e.endsWith('.alive') && e.includes('/'),
    );

  test('a malformed request line → 400 invalid_request', async () => {
    const c = await openRaw(app.url);
    c.write('GET /healthz HTTP/1.1 and then some\r\nHost: x\r\n\r\n');
    assertContract(await c.reply(), 400, 'invalid_request', /malformed HTTP request/);
    await c.closed();
  });

  test('20 KB of headers → 431 naming the limit', async () => {
    const c = await openRaw(app.url);
    c.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`);
    assertContract(await c.reply(), 431, 'invalid_request', /headers are too large: the limit is 16 KiB/);
    await c.closed();
  });

  test('a request that does not arrive in time → 408', async () => {
    const slow = await startApp({}, { http: { requestTimeoutMs: 1000, headersTimeoutMs: 1000, timeoutCheckMs: 200 } });
    try {
      const c = await openRaw(slow.url);
      c.write('GET /healthz HTTP/1.1\r\nHost: x\r\n'); // and never the blank line
      assertContract(await c.reply(), 408, 'invalid_request', /did not arrive in time/);
      await c.closed();
    } finally {
      await slow.close();
    }
  });

  test(
    'a declared Content-Length of 50 MB → 413 from the headers alone, before any body is sent, ' +
      'and the connection closes',
    async () => {
      const u = await registerUser(app.api);
      for (const [path, type] of [
        ['/api/upload', 'multipart/form-data; boundary=x'],
        ['/api/upload', 'application/json'],
        ['/api/auth/tokens/generate', 'application/json'],
      ] as const) {
        for (const token of [u.token, null]) {
          const c = await openRaw(app.url);
          const auth = token ? `Authorization: Bearer ${token}\r\n` : '';
          c.write(
            `POST ${path} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: ${type}\r\n` +
              `Content-Length: ${50 * 1024 * 1024}\r\n\r\n`,
          );
          // Not a byte of the body is sent: the answer comes from the headers.
          const r = await c.reply();
          assertContract(r, 413, 'payload_too_large', /52428800 bytes/);
          await c.closed();
        }
      }
    },
  );

  test('a JSON body declared over 1 MiB → 413 at once naming the JSON limit', async () => {
    const u = await registerUser(app.api);
    const c = await openRaw(app.url);
    c.write(
      `POST /api/auth/tokens/generate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${u.token}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${2 * 1024 * 1024}\r\n\r\n{"name":"`,
    );
    assertContract(await c.reply(), 413, 'payload_too_large', /JSON body is 2097152 bytes; the limit is 1 MiB/);
    await c.closed();
  });

  test('Expect: 100-continue with a declared body too large → 413 instead of 100 Continue', async () => {
    const c = await openRaw(app.url);
    c.write(
      'POST /api/upload HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=x\r\n' +
        `Expect: 100-continue\r\nContent-Length: ${50 * 1024 * 1024}\r\n\r\n`,
    );
    assertContract(await c.reply(), 413, 'payload_too_large', /at most/);
    await c.closed();
  });

  test(
    'a multipart body longer than its Content-Length → 400 invalid_request, the connection closes, ' +
      'no temp file remains',
    async () => {
      const u = await registerUser(app.api);
      const form = new FormData();
      form.append('upload_type', 'image');
      form.append('file', new Blob([await photoJpeg({ seed: 4242 })]), 'a.jpg');
      const { body, contentType } = await encodeForm(form);
      const declared = body.length - 100;
      /** Requests to POST /api/upload the server has finished (answered or not: this one's socket is gone). */
      const finished = async () =>
        (await currentMetrics(app))
          .split('\n')
          .filter((l) => l.startsWith('pixvote_http_requests_total{') && l.includes('route="/api/upload"'))
          .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
      const before = await finished();
      const c = await openRaw(app.url);
      c.write(
        `POST /api/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${u.token}\r\n` +
          `Content-Type: ${contentType}\r\nContent-Length: ${declared}\r\nX-Request-Id: long-body-1\r\n\r\n`,
      );
      c.write(body);
      const r = await c.reply();
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error, 'invalid_request');
      assert.match(r.body.message, /Content-Length/);
      assert.equal(r.headers['x-request-id'], 'long-body-1', 'the id of the request being served');
      await c.closed();
      // The answer came from below the app while the request may still be on its way through it (authenticating):
      // wait until the app is done with it, then nothing of it may remain.
      await until(async () => (await finished()) !== before, 100);
      assert.equal(await finished(), before + 1, 'the app finished the request');
      assert.deepEqual(await tmpEntries(app.config.dataDir), [], 'the multipart temp directory is gone');
      assert.deepEqual((await app.api.get('/api/profile', { token: u.token })).body.uploads, [], 'nothing was stored');
    },
  );
});
