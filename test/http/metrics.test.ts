import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../support/app.ts';
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

test('GET /metrics: requests by route and status, pool, stages, uploads by outcome, rate limits, detector backend, event-loop lag', async () => {
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
  assert.equal(sample(t, 'pixvote_http_requests_total', { method: 'GET', route: '/api/upload/:id', status: '404' }), 1, 'labelled by pattern, not by id');
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
  assert.match(t, /^pixvote_detector_backend_info\{backend="(wasm|tensorflow)"\} 1$/m);
  assert.match(t, /^nodejs_eventloop_lag_p99_seconds /m);
});
