import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiClient, NetworkError, type RetryNotice } from '../../src/cli/api.client.ts';
import { isNetworkError, parseRetryAfter, retryDelay, type RetryPolicy } from '../../src/cli/retry.policy.ts';

const policy: RetryPolicy = { retries: 3, maxWaitMs: 10_000, baseDelayMs: 500 };

describe('retry policy', () => {
  test('Retry-After is read as seconds or as an HTTP date', () => {
    assert.equal(parseRetryAfter('7'), 7000);
    assert.equal(parseRetryAfter(' 0 '), 0);
    const now = Date.parse('2026-11-20T12:00:00Z');
    assert.equal(parseRetryAfter('Fri, 20 Nov 2026 12:00:30 GMT', now), 30_000);
    assert.equal(parseRetryAfter('soon'), null);
    assert.equal(parseRetryAfter(null), null);
  });

  test('a Retry-After wait is never shorter than asked, is capped, and carries at most a second of jitter', () => {
    assert.equal(retryDelay(1, 3000, policy, () => 0), 3000);
    assert.ok(retryDelay(1, 3000, policy, () => 0.999) > 3000);
    assert.ok(retryDelay(1, 3000, policy, () => 0.999) <= 3400);
    assert.equal(retryDelay(1, 3_600_000, policy, () => 0), 10_000, 'capped at maxWaitMs');
    assert.ok(retryDelay(1, 3_600_000, policy, () => 0.999) <= 11_000);
  });

  test('without Retry-After the backoff doubles, with jitter, up to the cap', () => {
    const lows = [1, 2, 3, 4, 8].map((a) => retryDelay(a, null, policy, () => 0));
    const highs = [1, 2, 3, 4, 8].map((a) => retryDelay(a, null, policy, () => 1));
    assert.deepEqual(lows, [250, 500, 1000, 2000, 5000]);
    assert.deepEqual(highs, [500, 1000, 2000, 4000, 10_000]);
  });

  test('connection failures count as network errors; other errors do not', () => {
    assert.ok(isNetworkError(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } })));
    assert.ok(isNetworkError(new DOMException('timed out', 'TimeoutError')));
    assert.ok(!isNetworkError(new TypeError('x is not a function')));
    assert.ok(!isNetworkError(new Error('boom')));
  });
});

/** A client whose fetch answers from a script and whose sleeps are recorded, not waited. */
function scripted(steps: (Response | Error)[]) {
  const slept: number[] = [];
  const notices: RetryNotice[] = [];
  let calls = 0;
  const client = new ApiClient({
    baseUrl: 'http://pixvote.test/',
    token: 'pv_x',
    retry: policy,
    random: () => 0,
    sleep: async (ms) => void slept.push(ms),
    fetch: async () => {
      const step = steps[Math.min(calls++, steps.length - 1)]!;
      if (step instanceof Error) throw step;
      return step.clone();
    },
  });
  return { client, slept, notices, calls: () => calls, onRetry: (n: RetryNotice) => void notices.push(n) };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
const refused = () => Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });

describe('ApiClient', () => {
  test('429 with Retry-After: waits as asked, then returns the success', async () => {
    const s = scripted([json(429, { error: 'rate_limited', message: 'x' }, { 'retry-after': '3' }), json(201, { id: 'u1' })]);
    const r = await s.client.request('POST', '/api/v1/upload', { onRetry: s.onRetry });
    assert.equal(r.status, 201);
    assert.deepEqual(r.body, { id: 'u1' });
    assert.equal(s.slept.length, 1);
    assert.ok(s.slept[0]! >= 2900 && s.slept[0]! <= 3000, `slept ${s.slept[0]}`);
    assert.deepEqual(s.notices.map((n) => n.reason), ['429 rate_limited']);
  });

  test('network errors and 503 are retried; the final answer is returned', async () => {
    const s = scripted([refused(), json(503, { error: 'busy', message: 'x' }, { 'retry-after': '1' }), json(200, { ok: 1 })]);
    const r = await s.client.request('GET', '/x', { onRetry: s.onRetry });
    assert.equal(r.status, 200);
    assert.deepEqual(s.notices.map((n) => n.reason), ['ECONNREFUSED', '503 busy']);
  });

  test('gives up after the configured retries: the last response, or NetworkError', async () => {
    const limited = scripted([json(429, { error: 'rate_limited', message: 'x' }, { 'retry-after': '1' })]);
    assert.equal((await limited.client.request('GET', '/x')).status, 429);
    assert.equal(limited.calls(), policy.retries + 1);
    const down = scripted([refused()]);
    await assert.rejects(down.client.request('GET', '/x'), NetworkError);
    assert.equal(down.calls(), policy.retries + 1);
  });

  test('client errors are not retried; call() turns them into the server\'s code and message', async () => {
    const s = scripted([json(400, { error: 'invalid_image', message: 'truncated' })]);
    await assert.rejects(s.client.call('POST', '/api/v1/upload'), { name: 'ApiError', status: 400, code: 'invalid_image', message: 'truncated' });
    assert.equal(s.calls(), 1);
  });
});
