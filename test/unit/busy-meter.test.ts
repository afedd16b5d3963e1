import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BusyMeter } from '../../src/workers/pool.ts';

/** A meter on a clock the test moves. */
function meter(threads: number, windowMs = 10_000) {
  let now = 1_000;
  const m = new BusyMeter(threads, windowMs, () => now);
  return { m, advance: (ms: number) => void (now += ms) };
}

test('BusyMeter: the share of thread capacity spent on tasks, running ones included, over the last window', () => {
  const { m, advance } = meter(2);
  assert.equal(m.utilization(), 0, 'no time has passed');
  advance(1000);
  assert.equal(m.utilization(), 0, 'idle');
  m.taskStarted();
  m.taskStarted();
  advance(1000);
  // Both threads busy for the last of two seconds: half the capacity, counted while the tasks still run.
  assert.equal(m.utilization(), 0.5);
  assert.equal(m.busySeconds(), 2);
  advance(9000);
  assert.equal(m.utilization(), 1, 'busy for the whole last 10 s window');
  m.taskSettled();
  advance(5000);
  assert.equal(m.utilization(), 0.75, 'one of two threads for the last 5 s of the window');
  assert.equal(m.busySeconds(), 25);
});

test('BusyMeter: queued tasks beyond the thread count do not count as busy threads', () => {
  const { m, advance } = meter(2);
  for (let i = 0; i < 6; i++) m.taskStarted();
  advance(10_000);
  assert.equal(m.utilization(), 1);
  for (let i = 0; i < 6; i++) m.taskSettled();
  advance(10_000);
  assert.equal(m.utilization(), 0, 'idle for the whole window');
  assert.equal(m.busySeconds(), 20);
  m.taskSettled();
  advance(1000);
  assert.equal(m.utilization(), 0, 'a stray settle never makes it negative');
});
