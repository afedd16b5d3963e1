import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { RedisLease } from '../../src/store/redis-lease.ts';
import { onPostgres, TEST_REDIS_URL } from '../support/env.ts';
import { testRedisPrefix } from '../support/redis.ts';
import { until } from '../support/budget.ts';

const skip = !onPostgres && 'needs Redis (PostgreSQL + Redis pass)';

// The lease's time is Redis's own: the test moves it by shortening the key's ttl (PEXPIRE), never by sleeping
// and hoping a renewal or an expiry happened in between on a loaded machine.
test('a Redis lease: one holder at a time, renewed by its holder, taken over once it runs out', { skip }, async () => {
  // Two gateways, each with its own connection.
  const [a, b] = [new Redis(TEST_REDIS_URL), new Redis(TEST_REDIS_URL)];
  const key = `${testRedisPrefix()}media-sweep`;
  const TTL = 60_000;
  try {
    const first = new RedisLease(a, key, 'gateway-a', TTL);
    const second = new RedisLease(b, key, 'gateway-b', TTL);
    assert.equal(await first.tryAcquire(), true, 'free: taken');
    assert.equal(await second.tryAcquire(), false, 'held by another');
    // The holder renews it: most of its ttl gone, a renewal restarts it; the other still cannot take it.
    for (let i = 0; i < 3; i++) {
      await a.pexpire(key, TTL / 4);
      assert.equal(await first.tryAcquire(), true, 'renewed by its holder');
      assert.ok((await a.pttl(key)) > TTL / 2, 'renewal restarts the ttl');
      assert.equal(await second.tryAcquire(), false, 'still held by the first');
      assert.ok((await a.pttl(key)) > TTL / 2, "another's attempt does not touch the ttl");
    }
    // The holder stops (dies): once the ttl has run out, the other takes it, and the first no longer has it.
    await a.pexpire(key, 1);
    await until(async () => (await a.exists(key)) === 0);
    assert.equal(await second.tryAcquire(), true, 'taken over after the ttl');
    assert.equal(await first.tryAcquire(), false, 'the former holder lost it');
    assert.equal(await a.get(key), 'gateway-b');
  } finally {
    await a.del(key);
    a.disconnect();
    b.disconnect();
  }
});

test('many gateways asking at once: exactly one gets the lease', { skip }, async () => {
  const clients = Array.from({ length: 8 }, () => new Redis(TEST_REDIS_URL));
  const key = `${testRedisPrefix()}media-sweep`;
  try {
    const got = await Promise.all(clients.map((c, i) => new RedisLease(c, key, `gateway-${i}`, 60_000).tryAcquire()));
    assert.equal(got.filter(Boolean).length, 1);
  } finally {
    await clients[0]!.del(key);
    for (const c of clients) c.disconnect();
  }
});

test('release: only the holder lets the lease go, and the next one takes it at once', { skip }, async () => {
  const r = new Redis(TEST_REDIS_URL);
  const key = `${testRedisPrefix()}resumable-lock:x`;
  try {
    const first = new RedisLease(r, key, 'patch-a', 60_000);
    const second = new RedisLease(r, key, 'patch-b', 60_000);
    assert.equal(await first.tryAcquire(), true);
    await second.release();
    assert.equal(await r.get(key), 'patch-a', "another's release does not take it away");
    await first.release();
    assert.equal(await r.exists(key), 0);
    assert.equal(await second.tryAcquire(), true, 'free again: taken');
  } finally {
    await r.del(key);
    r.disconnect();
  }
});
