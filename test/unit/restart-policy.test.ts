import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CRASH_LOOP, RestartPolicy } from '../../src/cluster.ts';

test('a dead gateway process is replaced after a backoff that doubles while its slot keeps dying, capped', () => {
  const policy = new RestartPolicy(CRASH_LOOP);
  const delays = [0, 1, 2, 3].map((i) => policy.died(0, i * 1000).delayMs);
  assert.deepEqual(delays, [1000, 2000, 4000, 8000]);
  assert.equal(new RestartPolicy({ ...CRASH_LOOP, deaths: 100 }).died(0, 0).delayMs, 1000);
  const capped = new RestartPolicy({ ...CRASH_LOOP, deaths: 100 });
  let last = 0;
  for (let i = 0; i < 10; i++) last = capped.died(0, i).delayMs;
  assert.equal(last, CRASH_LOOP.maxDelayMs);
});

test('5 deaths of one slot within 60 s is a crash loop; deaths spread out, or in other slots, are not', () => {
  const policy = new RestartPolicy(CRASH_LOOP);
  for (let i = 0; i < 4; i++) assert.equal(policy.died(0, i * 10_000).crashLoop, false);
  assert.equal(policy.died(1, 40_000).crashLoop, false, 'another slot has its own count');
  assert.equal(policy.died(0, 45_000).crashLoop, true);

  const spread = new RestartPolicy(CRASH_LOOP);
  for (let i = 0; i < 20; i++)
    assert.equal(spread.died(0, i * 20_000).crashLoop, false, 'one death every 20 s never adds up to 5 in 60 s');
  assert.equal(spread.died(0, 20 * 20_000).delayMs, 4000, 'the backoff falls back as old deaths leave the window');
});
