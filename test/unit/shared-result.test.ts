/**
 * sharedResult (src/gateway/shared-result.ts), which /readyz and /metrics put in front of their work, on a clock
 * the test moves: callers share the call in flight and, for `freshMs` after it settled, its outcome (a failure
 * too); after that the next caller starts a new call. The HTTP tests (metrics.test.ts) see the same through
 * the app, on the real clock.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sharedResult } from '../../src/gateway/shared-result.ts';

function harness(outcome: () => Promise<number>) {
  let now = 0;
  let calls = 0;
  const shared = sharedResult(
    1000,
    () => {
      calls++;
      return outcome();
    },
    () => now,
  );
  return {
    shared,
    get calls() {
      return calls;
    },
    advance: (ms: number) => void (now += ms),
  };
}

test('callers share the call in flight, and its outcome for freshMs after it settled', async () => {
  let n = 0;
  const h = harness(async () => ++n);
  const first = await Promise.all(Array.from({ length: 50 }, () => h.shared()));
  assert.deepEqual(new Set(first), new Set([1]));
  assert.equal(h.calls, 1);
  h.advance(999);
  assert.equal(await h.shared(), 1, 'still fresh 999 ms after it settled');
  assert.equal(h.calls, 1);
  h.advance(1);
  assert.equal(await h.shared(), 2, 'stale at 1000 ms: a new call');
  assert.equal(h.calls, 2);
});

test('a slow call is shared for as long as it runs, and its freshness counts from when it settled', async () => {
  let release!: (v: number) => void;
  const h = harness(() => new Promise<number>((resolve) => (release = resolve)));
  const a = h.shared();
  h.advance(5000); // a call still in flight is never stale
  const b = h.shared();
  assert.equal(h.calls, 1);
  release(7);
  assert.deepEqual(await Promise.all([a, b]), [7, 7]);
  h.advance(500);
  assert.equal(await h.shared(), 7);
  assert.equal(h.calls, 1);
});

test('a failure is shared like a success (a dependency that is down is not asked by every caller)', async () => {
  let n = 0;
  const h = harness(async () => {
    n++;
    throw new Error(`down ${n}`);
  });
  await assert.rejects(h.shared(), /down 1/);
  await assert.rejects(h.shared(), /down 1/);
  assert.equal(h.calls, 1);
  h.advance(1000);
  await assert.rejects(h.shared(), /down 2/);
  assert.equal(h.calls, 2);
});
