import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiClient, NetworkError, type RetryNotice } from '../../src/cli/api.client.ts';
import {
  InterruptedError,
  WaitTooLongError,
  isNetworkError,
  parseRetryAfter,
  type RetryPolicy,
} from '../../src/cli/retry.policy.ts';

const policy: RetryPolicy = { retries: 3, maxWaitMs: 10_000, baseDelayMs: 1 };

describe('retry policy', () => {
  test('Retry-After is read as seconds or as an HTTP date', () => {
    assert.equal(parseRetryAfter('7'), 7000);
    assert.equal(parseRetryAfter(' 0 '), 0);
    const now = Date.parse('2026-11-20T12:00:00Z');
    assert.equal(parseRetryAfter('Fri, 20 Nov 2026 12:00:30 GMT', now), 30_000);
    assert.equal(parseRetryAfter('soon'), null);
    assert.equal(parseRetryAfter(null), null);
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
const refused = () =>
  Object.assign(new TypeError('fetch failed'), {
    cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
  });

describe('ApiClient', () => {
  test('429 with Retry-After: waits exactly as asked, then returns the success', async () => {
    const s = scripted([
      json(429, { error: 'rate_limited', message: 'limit reached' }, { 'retry-after': '3' }),
      json(201, { id: 'u1' }),
    ]);
    const r = await s.client.request('POST', '/api/v1/upload', { onRetry: s.onRetry });
    assert.equal(r.status, 201);
    assert.deepEqual(r.body, { id: 'u1' });
    assert.equal(s.slept.length, 1);
    assert.ok(s.slept[0]! > 2900 && s.slept[0]! <= 3000, `slept ${s.slept[0]}`);
    assert.deepEqual(
      s.notices.map((n) => [n.reason, n.waitMs, n.retryAfter]),
      [['429 rate_limited: limit reached', 3000, true]],
    );
  });

  test('Retry-After waits use up no retry: more 429s than retries still end in the success', async () => {
    const limited = json(429, { error: 'rate_limited', message: 'x' }, { 'retry-after': '1' });
    const s = scripted([...Array.from({ length: policy.retries + 3 }, () => limited), json(201, { id: 'u1' })]);
    assert.equal((await s.client.request('POST', '/api/v1/upload')).status, 201);
    assert.equal(s.calls(), policy.retries + 4);
  });

  test('a Retry-After longer than maxWaitMs stops at once, with the wait and its reason', async () => {
    const s = scripted([
      json(429, { error: 'rate_limited', message: 'upload limit reached' }, { 'retry-after': '3600' }),
      json(201, {}),
    ]);
    const err = (await s.client
      .request('POST', '/api/v1/upload', { onRetry: s.onRetry })
      .catch((e) => e)) as WaitTooLongError;
    assert.ok(err instanceof WaitTooLongError, String(err));
    assert.equal(err.waitMs, 3_600_000);
    assert.match(err.message, /wait 1 h 0 min \(429 rate_limited: upload limit reached\), longer than --max-wait 10 s/);
    assert.equal(s.calls(), 1, 'no second attempt');
    assert.deepEqual(s.slept, [], 'no wait at all');
    const login = scripted([json(429, { error: 'rate_limited', message: 'x' }, { 'retry-after': '30' })]);
    await assert.rejects(login.client.request('POST', '/api/auth', { maxWaitMs: 5000 }), WaitTooLongError);
  });

  test('halt() abandons a request waiting out a Retry-After', async () => {
    const client = new ApiClient({
      baseUrl: 'http://pixvote.test',
      retry: { ...policy, maxWaitMs: 3_600_000 },
      fetch: async () => json(429, { error: 'rate_limited', message: 'x' }, { 'retry-after': '3000' }),
    });
    const pending = client.request('POST', '/api/v1/upload', { onRetry: () => client.halt(new InterruptedError()) });
    await assert.rejects(pending, InterruptedError);
    assert.ok(client.halted instanceof InterruptedError);
  });

  test('network errors and 503 are retried; the final answer is returned', async () => {
    const s = scripted([
      refused(),
      json(503, { error: 'busy', message: 'x' }, { 'retry-after': '1' }),
      json(200, { ok: 1 }),
    ]);
    const r = await s.client.request('GET', '/x', { onRetry: s.onRetry });
    assert.equal(r.status, 200);
    assert.deepEqual(
      s.notices.map((n) => n.reason),
      ['ECONNREFUSED', '503 busy: x'],
    );
  });

  test('gives up after the configured retries: the last response, or NetworkError', async () => {
    const bad = scripted([json(502, 'bad gateway')]);
    assert.equal((await bad.client.request('GET', '/x', { onRetry: bad.onRetry })).status, 502);
    assert.equal(bad.calls(), policy.retries + 1);
    assert.deepEqual(
      bad.notices.map((n) => n.attempt),
      [1, 2, 3],
      'backoff retries are counted',
    );
    const down = scripted([refused()]);
    await assert.rejects(down.client.request('GET', '/x'), NetworkError);
    assert.equal(down.calls(), policy.retries + 1);
  });

  test("client errors are not retried; call() turns them into the server's code and message", async () => {
    const s = scripted([json(400, { error: 'invalid_image', message: 'truncated' })]);
    await assert.rejects(s.client.call('POST', '/api/v1/upload'), {
      name: 'ApiError',
      status: 400,
      code: 'invalid_image',
      message: 'truncated',
    });
    assert.equal(s.calls(), 1);
  });
});
