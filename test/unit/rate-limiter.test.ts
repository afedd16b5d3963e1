import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLimiter, type LimitDecision } from '../../src/store/rate-limiter.ts';

test('in-memory limit: exact count, remaining down by one per request, most decisions without a promise', async () => {
  const rejected: string[] = [];
  const limiter = createLimiter({
    name: 'general',
    rate: { points: 1000, seconds: 60 },
    redis: null,
    prefix: 'unit:',
    onReject: (n) => rejected.push(n),
  });
  const decisions: LimitDecision[] = [];
  let immediate = 0;
  for (let i = 0; i < 1200; i++) {
    const d = limiter.consume('ip');
    if (!(d instanceof Promise)) immediate++;
    decisions.push(await d);
  }
  assert.equal(decisions.filter((d) => d.allowed).length, 1000);
  assert.deepEqual(
    decisions.slice(0, 1000).map((d) => d.remaining),
    Array.from({ length: 1000 }, (_, i) => 999 - i),
  );
  assert.ok(
    decisions.slice(1000).every((d) => !d.allowed && d.remaining === 0 && d.resetSeconds >= 1 && d.resetSeconds <= 60),
  );
  assert.equal(rejected.length, 200);
  assert.ok(immediate > 1100, `${immediate} of 1200 decided at once`);
  // Concurrent requests of one key cannot pass the limit together either.
  const other = await Promise.all(Array.from({ length: 1100 }, async () => limiter.consume('other')));
  assert.equal(other.filter((d) => d.allowed).length, 1000);
});

test('in-memory limit: a window that ends starts a fresh budget', async (t) => {
  t.mock.timers.enable({ apis: ['Date', 'setTimeout'] });
  const limiter = createLimiter({ name: 'vote', rate: { points: 3, seconds: 1 }, redis: null, prefix: 'unit:' });
  const first = await Promise.all([1, 2, 3, 4].map(async () => limiter.consume('user')));
  assert.deepEqual(
    first.map((d) => d.allowed),
    [true, true, true, false],
  );
  t.mock.timers.tick(1100);
  const d = await limiter.consume('user');
  assert.equal(d.allowed, true);
  assert.equal(d.remaining, 2);
});
