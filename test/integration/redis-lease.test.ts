import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { RedisLease } from '../../src/store/redis-lease.ts';
import { onPostgres, TEST_REDIS_URL } from '../support/env.ts';

const skip = !onPostgres && 'needs Redis (PostgreSQL + Redis pass)';

test('a Redis lease: one holder at a time, renewed by its holder, taken over once it runs out', { skip }, async () => {
  // Two gateways, each with its own connection.
  const [a, b] = [new Redis(TEST_REDIS_URL), new Redis(TEST_REDIS_URL)];
  const key = `test-${randomBytes(6).toString('hex')}:media-sweep`;
  try {
    const first = new RedisLease(a, key, 'gateway-a', 400);
    const second = new RedisLease(b, key, 'gateway-b', 400);
    assert.equal(await first.tryAcquire(), true, 'free: taken');
    assert.equal(await second.tryAcquire(), false, 'held by another');
    // The holder renews it: still held after longer than one ttl in all.
    for (let i = 0; i < 3; i++) {
      await sleep(200);
      assert.equal(await first.tryAcquire(), true, 'renewed by its holder');
      assert.equal(await second.tryAcquire(), false, 'still held by the first');
    }
    assert.ok((await a.pttl(key)) > 200, 'renewal restarts the ttl');
    // The holder stops (dies): once the ttl has run out, the other takes it, and the first no longer has it.
    await sleep(450);
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
  const key = `test-${randomBytes(6).toString('hex')}:media-sweep`;
  try {
    const got = await Promise.all(clients.map((c, i) => new RedisLease(c, key, `gateway-${i}`, 60_000).tryAcquire()));
    assert.equal(got.filter(Boolean).length, 1);
  } finally {
    await clients[0]!.del(key);
    for (const c of clients) c.disconnect();
  }
});
