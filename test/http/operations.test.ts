/**
 * What an operator relies on: 405 with `Allow` for a known path's other methods, and failure log lines that
 * can be searched by error code, route, user and request id.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { currentMetrics, startApp, type TestApp } from '../support/app.ts';
import { registerUser, type TestUser } from '../support/users.ts';
import { uploadFields } from '../support/uploads.ts';

/** Every log line the app writes, parsed. */
const logs: Array<Record<string, unknown>> = [];
const log = pino(
  { level: 'info' },
  { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) },
);

let app: TestApp;
let user: TestUser;
before(async () => {
  app = await startApp({ RATE_LIMIT_AUTH: '3/15m' }, { log });
  user = await registerUser(app.api);
});
after(() => app.close());

const probe = 'probes a method the path does not serve';

test('a known path, a method it does not serve: 405 method_not_allowed with Allow; unknown paths 404', async () => {
  const own = await uploadFields(app.api, user.token, {
    upload_type: 'link',
    external_url: 'https://example.com/allow',
  });
  assert.equal(own.status, 201, own.text);
  for (const [method, path, allow] of [
    ['DELETE', '/api/uploads', 'HEAD, GET'],
    ['PUT', '/api/vote', 'POST'],
    ['GET', '/api/vote', 'POST'],
    ['POST', `/api/upload/${own.body.id}`, 'HEAD, GET, PATCH, DELETE'],
    ['PATCH', '/healthz', 'HEAD, GET'],
    // No route serves OPTIONS either (the router alone would answer it 200 with an empty body).
    ['OPTIONS', '/api/uploads', 'HEAD, GET'],
  ] as const) {
    const r = await app.api.request(
      method,
      path,
      method === 'PUT' ? { uploadId: own.body.id, vote: 'fucks' } : undefined,
      { token: user.token, unchecked: probe },
    );
    const where = `${method} ${path}`;
    assert.equal(r.status, 405, `${where}: ${r.text}`);
    assert.equal(r.headers.get('content-type'), 'application/json; charset=utf-8', where);
    assert.deepEqual(Object.keys(r.body).sort(), ['error', 'message'], where);
    assert.equal(r.body.error, 'method_not_allowed', where);
    assert.match(r.body.message, new RegExp(`${method} .*${allow}`), where);
    assert.deepEqual(r.headers.get('allow')?.split(', ').sort(), allow.split(', ').sort(), where);
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff', where);
  }
  // Still served as before.
  assert.equal((await app.api.get(`/api/upload/${own.body.id}`)).status, 200);
  assert.equal(
    (await app.api.request('HEAD', '/api/uploads', undefined, { unchecked: 'HEAD of a GET route' })).status,
    200,
  );
  for (const [method, path] of [
    ['DELETE', '/api/nothing-here'],
    ['GET', '/api/upload'.replace('upload', 'uplaod')],
    ['PUT', '/nope/42'],
  ] as const) {
    const r = await app.api.request(method, path, undefined, { unchecked: 'probes an unknown path' });
    assert.equal(r.status, 404, `${method} ${path}`);
    assert.equal(r.body.error, 'not_found');
    assert.equal(r.headers.get('allow'), null);
  }
  const t = await currentMetrics(app);
  assert.match(
    t,
    /^pixvote_http_requests_total\{method="POST",route="\/api\/upload\/:id",status="405"\} 1$/m,
    'labelled by pattern',
  );
});

/** The access-log line of the request sent with this X-Request-Id. */
function accessLine(reqId: string): Record<string, unknown> {
  const line = logs.find((l) => l.reqId === reqId && l.msg === 'request');
  assert.ok(line, `an access-log line for ${reqId}`);
  return line;
}

test('every 4xx log line carries the error code, route pattern, request id and the user id when known', async () => {
  const send = async (
    method: string,
    path: string,
    opts: { token?: string; raw?: string; json?: unknown; unchecked?: string } = {},
  ) => {
    const reqId = `ops-${randomUUID()}`;
    const r = await app.api.request(method, path, opts.json, {
      headers: { 'x-request-id': reqId, ...(opts.raw ? { 'content-type': 'application/json' } : {}) },
      ...(opts.token ? { token: opts.token } : {}),
      ...(opts.raw ? { raw: opts.raw } : {}),
      ...(opts.unchecked ? { unchecked: opts.unchecked } : {}),
    });
    return { status: r.status, line: accessLine(reqId) };
  };

  const unauthorized = await send('GET', '/api/profile');
  assert.equal(unauthorized.status, 401);
  assert.deepEqual(pick(unauthorized.line), {
    reqId: unauthorized.line.reqId,
    route: '/api/profile',
    status: 401,
    error: 'unauthorized',
  });

  const missing = await send('GET', `/api/upload/${randomUUID()}`, { token: user.token });
  assert.equal(missing.status, 404);
  assert.deepEqual(pick(missing.line), {
    reqId: missing.line.reqId,
    route: '/api/upload/:id',
    status: 404,
    error: 'not_found',
    userId: user.id,
  });

  const malformed = await send('POST', '/api/vote', { raw: '{"uploadId": ', token: user.token });
  assert.equal(malformed.status, 400);
  assert.equal(malformed.line.route, '/api/vote');
  assert.equal(malformed.line.error, 'invalid_request');

  const invalid = await send('POST', '/api/vote', { json: { uploadId: 'x', vote: 'maybe' }, token: user.token });
  assert.equal(invalid.status, 400);
  assert.deepEqual(pick(invalid.line), {
    reqId: invalid.line.reqId,
    route: '/api/vote',
    status: 400,
    error: 'invalid_request',
    userId: user.id,
  });

  // RATE_LIMIT_AUTH is 3 per 15 minutes and the registration spent one: the fourth attempt is refused.
  let limited: Awaited<ReturnType<typeof send>> | undefined;
  for (let i = 0; i < 4 && !limited; i++) {
    const r = await send('POST', '/api/auth', {
      json: { action: 'login', username: user.username, password: 'wrong-password' },
    });
    if (r.status === 429) limited = r;
  }
  assert.ok(limited, 'the auth limit was reached');
  assert.deepEqual(pick(limited.line), {
    reqId: limited.line.reqId,
    route: '/api/auth',
    status: 429,
    error: 'rate_limited',
  });

  const notAllowed = await send('DELETE', '/api/uploads', { token: user.token, unchecked: probe });
  assert.equal(notAllowed.status, 405);
  assert.deepEqual(pick(notAllowed.line), {
    reqId: notAllowed.line.reqId,
    route: '/api/uploads',
    status: 405,
    error: 'method_not_allowed',
    userId: user.id,
  });

  const unknown = await send('GET', '/api/nothing-here', { unchecked: 'probes an unknown path' });
  assert.deepEqual(pick(unknown.line), {
    reqId: unknown.line.reqId,
    route: 'unmatched',
    status: 404,
    error: 'not_found',
  });
  for (const l of [unauthorized, missing, malformed, invalid, limited, notAllowed, unknown])
    assert.equal(l.line.level, 30, 'failures log at info');
});

const pick = (l: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(l).filter(([k]) => ['reqId', 'route', 'status', 'error', 'userId'].includes(k)));
