import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { get as httpGet, type IncomingHttpHeaders } from 'node:http';
import { gunzipSync } from 'node:zlib';
import sharp from 'sharp';
import { currentMetrics, startApp, type TestApp } from '../support/app.ts';
import { registerUser } from '../support/users.ts';
import { uploadImage } from '../support/uploads.ts';
import { nonImageBytes, photoJpeg } from '../support/fixtures.ts';

let app: TestApp;
before(async () => {
  app = await startApp({ HUMAN_POLICY: 'flag', RATE_LIMIT_AUTH: '3/15m' });
});
after(() => app.close());

const sample = (text: string, name: string, labels: Record<string, string>) => {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = text.split('\n').find((l) => l.startsWith(name + '{') && want.every((w) => l.includes(w)));
  return line ? Number(line.split(' ').at(-1)) : undefined;
};

test(
  'GET /metrics: requests by route and status, pool, stages, uploads by outcome, rate limits, detector backend, ' +
    'event-loop lag',
  async () => {
    const u = await registerUser(app.api);
    await app.api.get('/api/uploads');
    await app.api.get(`/api/upload/00000000-0000-4000-8000-000000000000`);
    assert.equal((await uploadImage(app.api, u.token, await photoJpeg({ seed: 1001 }))).status, 201);
    assert.equal((await uploadImage(app.api, u.token, nonImageBytes())).status, 400);
    for (let i = 0; i < 3; i++) await app.api.post('/api/auth', { action: 'logout' });

    const r = await app.api.get('/metrics');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/plain/);
    const t = r.text;
    assert.equal(sample(t, 'pixvote_http_requests_total', { method: 'GET', route: '/api/uploads', status: '200' }), 1);
    assert.equal(
      sample(t, 'pixvote_http_requests_total', { method: 'GET', route: '/api/upload/:id', status: '404' }),
      1,
      'labelled by pattern, not by id',
    );
    assert.ok((sample(t, 'pixvote_http_request_duration_seconds_count', { route: '/api/uploads' }) ?? 0) >= 1);
    assert.equal(sample(t, 'pixvote_uploads_accepted_total', { type: 'image' }), 1);
    assert.equal(sample(t, 'pixvote_uploads_rejected_total', { reason: 'unsupported_format' }), 1);
    assert.equal(sample(t, 'pixvote_rate_limit_rejections_total', { limit: 'auth' }), 1);
    for (const stage of ['hash', 'sniff', 'decode', 'phash', 'detect', 'encode']) {
      assert.ok((sample(t, 'pixvote_pipeline_stage_duration_seconds_count', { stage }) ?? 0) >= 1, stage);
    }
    assert.match(t, /^pixvote_pool_threads 1$/m);
    assert.match(t, /^pixvote_pool_queue_depth 0$/m);
    assert.match(t, /^pixvote_pool_utilization [\d.e-]+$/m);
    assert.match(t, /^pixvote_pool_queue_wait_seconds_count [1-9]/m);
    assert.match(t, /^pixvote_detector_backend_info\{backend="onnxruntime"\} 1$/m);
    assert.match(t, /^nodejs_eventloop_lag_p99_seconds /m);
  },
);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Replaces `obj[name]` with a counting, slowed-down wrapper (slow enough that the requests overlap). */
function countCalls<T extends object, K extends keyof T>(
  obj: T,
  name: K,
  delayMs: number,
): { readonly calls: number; restore(): void } {
  const original = obj[name] as (...a: unknown[]) => Promise<unknown>;
  let calls = 0;
  obj[name] = (async (...args: unknown[]) => {
    calls++;
    await sleep(delayMs);
    return original.apply(obj, args);
  }) as T[K];
  return {
    get calls() {
      return calls;
    },
    restore: () => void (obj[name] = original as T[K]),
  };
}

test('concurrent GET /readyz share one check, at most one per second', async () => {
  const ping = countCalls(app.composed.db, 'ping', 200);
  try {
    await sleep(1100); // whatever an earlier probe left fresh has gone stale
    const started = performance.now();
    const replies = await Promise.all(Array.from({ length: 50 }, () => app.api.get('/readyz')));
    const burstMs = performance.now() - started;
    assert.deepEqual([...new Set(replies.map((r) => r.status))], [200]);
    // Every check settled after `started`: probes answered within a second of it all share the first one. On a
    // starved machine the burst itself may outlast a second; then a check per second of it is what is allowed.
    const allowed = 1 + Math.floor(burstMs / 1000);
    assert.ok(ping.calls >= 1 && ping.calls <= allowed, `${ping.calls} checks for 50 probes in ${burstMs} ms`);
    if (allowed === 1) assert.equal(ping.calls, 1, '50 concurrent probes, one database check');
    const before = ping.calls;
    await app.api.get('/readyz');
    if (performance.now() - started < 1000) {
      assert.equal(ping.calls, before, 'a probe within a second of the last check shares its result');
    }
    await sleep(1100); // every check settled before the last reply: a second later none is fresh
    const settled = ping.calls;
    assert.equal((await app.api.get('/readyz')).status, 200);
    assert.equal(ping.calls, settled + 1, 'a second later the dependencies are asked again');
  } finally {
    ping.restore();
  }
});

test('concurrent GET /metrics scrapes share one rendering', async () => {
  const render = countCalls(app.composed.metrics.registry, 'metrics', 200);
  try {
    await sleep(1100);
    const started = performance.now();
    const replies = await Promise.all(Array.from({ length: 50 }, () => app.api.get('/metrics')));
    const burstMs = performance.now() - started;
    assert.deepEqual([...new Set(replies.map((r) => r.status))], [200]);
    // As /readyz above: one rendering per second of the burst, so one when it took under a second.
    const allowed = 1 + Math.floor(burstMs / 1000);
    assert.ok(render.calls >= 1 && render.calls <= allowed, `${render.calls} renderings in ${burstMs} ms`);
    assert.ok(new Set(replies.map((r) => r.text)).size <= render.calls, 'the scrapes of one rendering agree');
    assert.match(replies[0]!.text, /^pixvote_http_requests_total/m);
  } finally {
    render.restore();
  }
});

test(
  'with METRICS_TOKEN, ' + '/metrics needs Authorization: Bearer <METRICS_TOKEN> (401 unauthorized otherwise)',
  async () => {
    const token = 'metrics-token-0123456789abcdef';
    const guarded = await startApp({ METRICS_TOKEN: token });
    try {
      const user = await registerUser(guarded.api);
      for (const [why, headers] of [
        ['no credential', {}],
        ['a wrong token', { authorization: `Bearer ${token.slice(0, -1)}x` }],
        ['a prefix of the token', { authorization: `Bearer ${token.slice(0, 8)}` }],
        ['a user JWT', { authorization: `Bearer ${user.token}` }],
        ['another scheme', { authorization: `Basic ${Buffer.from(`x:${token}`).toString('base64')}` }],
      ] as const) {
        const r = await guarded.api.get('/metrics', { headers });
        assert.equal(r.status, 401, why);
        assert.equal(r.body.error, 'unauthorized', why);
        assert.match(r.body.message, /METRICS_TOKEN/, why);
        assert.doesNotMatch(r.text, /pixvote_/, why);
      }
      const ok = await guarded.api.get('/metrics', { headers: { authorization: `Bearer ${token}` } });
      assert.equal(ok.status, 200);
      assert.match(ok.text, /^pixvote_http_requests_total/m);
      // Without METRICS_TOKEN the endpoint stays open, as before.
      assert.equal((await app.api.get('/metrics')).status, 200);
    } finally {
      await guarded.close();
    }
  },
);

test('requests refused before routing carry their route pattern: a 429 of POST /api/auth, bad JSON', async () => {
  // RATE_LIMIT_AUTH is 3 per 15 min here: spend it (whatever earlier tests left), then one more is refused.
  let refused = 0;
  for (let i = 0; i < 5 && !refused; i++)
    if ((await app.api.post('/api/auth', { action: 'logout' })).status === 429) refused++;
  assert.equal(refused, 1, 'the auth limit refused a request');
  const malformed = await app.api.post('/api/vote', undefined, {
    raw: '{"uploadId": ',
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(malformed.status, 400);
  await app.api.get('/api/no/such/route/42', { unchecked: 'probes an unknown path' });
  const t = await currentMetrics(app);
  assert.ok(
    (sample(t, 'pixvote_http_requests_total', { method: 'POST', route: '/api/auth', status: '429' }) ?? 0) >= 1,
    'the 429 carries its route',
  );
  assert.equal(
    sample(t, 'pixvote_http_requests_total', { method: 'POST', route: '/api/vote', status: '400' }),
    1,
    'the 400 carries its route',
  );
  assert.equal(
    sample(t, 'pixvote_http_requests_total', { method: 'POST', route: 'unmatched', status: '429' }),
    undefined,
  );
  assert.equal(
    sample(t, 'pixvote_http_requests_total', { method: 'POST', route: 'unmatched', status: '400' }),
    undefined,
  );
  assert.equal(
    sample(t, 'pixvote_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }),
    1,
    'an unknown path stays unmatched',
  );
  assert.doesNotMatch(t, /route="\/api\/no\/such/, 'never a raw path');
});

test('pixvote_pool_utilization is the busy share of worker capacity: > 0.3 with both workers busy, ≤ 1', async () => {
  // Made first, so the pool is young when the load starts: one large photo, re-encoded into distinct files (near
  // matching off, so each goes through the whole pipeline, person detection included: seconds of work).
  const photo = await photoJpeg({ width: 4000, height: 3000, seed: 7100, metadata: false });
  const photos = await Promise.all(
    [80, 81, 82, 83, 84, 85, 86, 87].map((quality) => sharp(photo).jpeg({ quality }).toBuffer()),
  );
  const busy = await startApp({
    WORKERS: '2',
    WORKER_QUEUE: '16',
    HUMAN_POLICY: 'flag',
    NEAR_DUPLICATE_DISTANCE: '-1',
  });
  try {
    const u = await registerUser(busy.api);
    let inFlight = photos.length;
    const uploads = Promise.all(photos.map((p) => uploadImage(busy.api, u.token, p).finally(() => void inFlight--)));
    const seen: number[] = [];
    // Scraped as an operator would, while more uploads are in flight than there are threads.
    while (inFlight > 2) {
      const t = (await busy.api.get('/metrics')).text;
      assert.match(t, /^pixvote_pool_threads 2$/m);
      const utilization = Number(/^pixvote_pool_utilization (\S+)$/m.exec(t)?.[1]);
      assert.ok(utilization >= 0 && utilization <= 1, `a share of capacity: ${utilization}`);
      seen.push(utilization);
      if (utilization > 0.3) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(
      seen.some((x) => x > 0.3),
      `utilization while both workers were busy: ${seen.join(', ')}`,
    );
    for (const r of await uploads) assert.equal(r.status, 201, r.text);
    const after = await currentMetrics(busy);
    assert.ok(
      Number(/^pixvote_pool_busy_seconds_total (\S+)$/m.exec(after)?.[1]) > 0,
      'busy thread-seconds are counted',
    );
    assert.ok(Number(/^pixvote_pool_utilization (\S+)$/m.exec(after)?.[1]) <= 1);
  } finally {
    await busy.close();
  }
});

/** GET /metrics through node:http, which neither asks for nor decodes compression unless told. */
function scrape(
  headers: Record<string, string>,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    httpGet(`${app.url}/metrics`, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

test('a rendering is sent as prepared bytes: gzipped for scrapers that ask, one ETag per rendering, 304', async () => {
  await sleep(1100); // a fresh rendering: both scrapes below share it
  const [plain, gz] = await Promise.all([scrape({}), scrape({ 'accept-encoding': 'gzip' })]);
  assert.equal(plain.status, 200);
  assert.equal(plain.headers['content-encoding'], undefined);
  assert.match(plain.body.toString(), /^pixvote_http_requests_total/m);
  assert.equal(gz.status, 200);
  assert.equal(gz.headers['content-encoding'], 'gzip');
  assert.equal(gz.headers.vary, 'Accept-Encoding');
  assert.deepEqual(gunzipSync(gz.body), plain.body, 'the same rendering, compressed');
  assert.ok(gz.body.length < plain.body.length / 3, `${gz.body.length} of ${plain.body.length} bytes`);
  assert.equal(plain.headers['cache-control'], 'no-store');
  const etag = plain.headers.etag!;
  assert.match(etag, /^"[\w-]+"$/);
  assert.notEqual(gz.headers.etag, etag, 'each encoding its own tag');
  const again = await scrape({ 'if-none-match': etag });
  assert.equal(again.status, 304, 'within its second the rendering is unchanged');
  assert.equal(again.body.length, 0);
});

test('probes are not authenticated as users: a bearer token on /metrics, /healthz, /readyz costs nothing', async () => {
  const auth = app.composed.auth;
  const original = auth.authenticate.bind(auth);
  let calls = 0;
  auth.authenticate = (...args: Parameters<typeof original>) => {
    calls++;
    return original(...args);
  };
  try {
    for (const path of ['/metrics', '/healthz', '/readyz']) {
      for (const credential of ['eyJhbGciOiJIUzI1NiJ9.e30.c2ln', 'pv_not-a-real-token']) {
        const r = await app.api.get(path, { headers: { authorization: `Bearer ${credential}` } });
        assert.equal(r.status, 200, path);
      }
    }
    assert.equal(calls, 0);
    assert.equal((await app.api.get('/api/profile', { token: 'pv_not-a-real-token' })).status, 401);
    assert.equal(calls, 1, 'other routes still resolve the caller');
  } finally {
    auth.authenticate = original;
  }
});
