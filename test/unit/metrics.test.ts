/**
 * The request metrics are counted as plain numbers per series and handed to prom-client at scrape time
 * (src/metrics.ts): what /metrics shows must be exactly what prom-client's own counter and histogram show for
 * the same requests, bucket bounds, values beyond the last bound and the sums included.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Histogram, Registry } from 'prom-client';
import { createMetrics, LATENCY_BUCKETS } from '../../src/metrics.ts';

/** A fixed pseudo-random sequence (no seed shaping the buckets: every value kind comes from the list below). */
function* requests(n: number) {
  const routes = ['/api/uploads', '/api/upload/:id', 'unmatched'];
  const statuses = [200, 304, 404, 429];
  // On a bound, between bounds, above the last one, zero.
  const seconds = [...LATENCY_BUCKETS, 0, 0.0004, 0.003, 0.07, 0.7, 3, 11, 60];
  let x = 7;
  const next = (k: number) => ((x = (x * 1103515245 + 12345) % 2 ** 31), x % k);
  for (let i = 0; i < n; i++)
    yield {
      method: next(5) === 0 ? 'POST' : 'GET',
      route: routes[next(routes.length)]!,
      status: statuses[next(statuses.length)]!,
      seconds: seconds[next(seconds.length)]! * (1 + next(3) / 1000),
    };
}

const block = (text: string, name: string) =>
  text
    .split('\n')
    .filter((l) => l.startsWith(`${name}_`) || l.startsWith(`${name} `) || l.startsWith(`${name}{`))
    .sort();

test('request counts and latencies read at scrape time are what prom-client counts itself', async () => {
  const metrics = createMetrics();
  const registry = new Registry();
  const labelNames = ['method', 'route', 'status'] as const;
  const counter = new Counter({ name: 'pixvote_http_requests_total', help: 'h', labelNames, registers: [registry] });
  const histogram = new Histogram({
    name: 'pixvote_http_request_duration_seconds',
    help: 'h',
    labelNames,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const check = async () => {
    const ours = await metrics.registry.metrics();
    const theirs = await registry.metrics();
    for (const name of ['pixvote_http_requests_total', 'pixvote_http_request_duration_seconds']) {
      const got = block(ours, name);
      assert.ok(got.length > 0, name);
      assert.deepEqual(got, block(theirs, name), name);
    }
  };
  for (const r of requests(2000)) {
    metrics.recordRequest(r.method, r.route, r.status, r.seconds);
    const labels = { method: r.method, route: r.route, status: String(r.status) };
    counter.inc(labels);
    histogram.observe(labels, r.seconds);
  }
  await check();
  // A second scrape after more requests: counted on, not reset by the first.
  for (const r of requests(500)) {
    metrics.recordRequest(r.method, r.route, r.status, r.seconds);
    const labels = { method: r.method, route: r.route, status: String(r.status) };
    counter.inc(labels);
    histogram.observe(labels, r.seconds);
  }
  await check();
});

test('feed cache outcomes read at scrape time', async () => {
  const metrics = createMetrics();
  for (let i = 0; i < 5; i++) metrics.recordFeedCache('hit');
  metrics.recordFeedCache('miss');
  const values = (await metrics.feedCache.get()).values;
  const of = (outcome: string) => values.find((v) => v.labels.outcome === outcome)?.value;
  assert.equal(of('hit'), 5);
  assert.equal(of('miss'), 1);
  assert.equal(of('recount'), undefined);
});
