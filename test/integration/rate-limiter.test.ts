import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { createLimiter, exactMargin, type LimitDecision } from '../../src/store/rate-limiter.ts';
import { onPostgres, TEST_REDIS_URL } from '../support/env.ts';
import { testRedisPrefix } from '../support/redis.ts';

const skip = !onPostgres && 'needs Redis (PostgreSQL + Redis pass)';

async function withRedis(run: (ctx: { a: Redis; b: Redis; prefix: string }) => Promise<void>): Promise<void> {
  const prefix = testRedisPrefix();
  const [a, b] = [new Redis(TEST_REDIS_URL), new Redis(TEST_REDIS_URL)];
  try {
    await Promise.all([a, b].filter((r) => r.status !== 'ready').map((r) => once(r, 'ready')));
    await run({ a, b, prefix });
  } finally {
    const keys = await a.keys(`${prefix}*`);
    if (keys.length) await a.del(...keys);
    a.disconnect();
    b.disconnect();
  }
}

/**
 * Waits until Redis holds at least `n` for `key`: the batch a limiter sends on its own (after FLUSH_MS) has
 * arrived. Waiting for the count, not for a fixed time: a loaded machine only makes it slower.
 */
async function counted(redis: Redis, key: string, n: number): Promise<number> {
  let v: number;
  while ((v = Number(await redis.get(key))) < n) await new Promise((r) => setTimeout(r, 10));
  return v;
}

test(
  'shared limit far from its end: requests answered without waiting for Redis, their count reaches Redis in batches',
  { skip },
  () =>
    withRedis(async ({ a, prefix }) => {
      const limiter = createLimiter({ name: 'general', rate: { points: 100_000, seconds: 60 }, redis: a, prefix });
      const first = await limiter.consume('ip'); // the first of a window always asks Redis
      assert.equal(first.remaining, 99_999);
      const before = Number(await a.get(`${prefix}rl:general:ip`));
      const decisions: LimitDecision[] = [];
      for (let i = 0; i < 10; i++) decisions.push(await limiter.consume('ip'));
      assert.deepEqual(
        decisions.map((d) => d.remaining),
        Array.from({ length: 10 }, (_, i) => 99_998 - i),
      );
      assert.ok(
        decisions.every((d) => d.allowed && d.limit === 100_000 && d.resetSeconds >= 59 && d.resetSeconds <= 60),
      );
      assert.equal(Number(await a.get(`${prefix}rl:general:ip`)), before, 'not yet sent: admitted here');
      assert.equal(await counted(a, `${prefix}rl:general:ip`, 11), 11, 'every admitted request counted in Redis');
      for (let i = 0; i < 100; i++) await limiter.consume('ip');
      assert.equal(await counted(a, `${prefix}rl:general:ip`, 111), 111);
    }),
);

test('shared limit: two processes hammering one key admit exactly the limit, never more', { skip }, () =>
  withRedis(async ({ a, b, prefix }) => {
    const points = 600; // the default RATE_LIMIT_GENERAL
    const rate = { points, seconds: 60 };
    const processes = [
      createLimiter({ name: 'general', rate, redis: a, prefix }),
      createLimiter({ name: 'general', rate, redis: b, prefix }),
    ];
    let allowed = 0;
    let refused = 0;
    // Bursts of concurrent requests through both processes, as many connections would send them.
    for (let round = 0; round < 40; round++) {
      const burst = await Promise.all(Array.from({ length: 20 }, async (_, i) => processes[i % 2]!.consume('1.2.3.4')));
      for (const d of burst) {
        if (d.allowed) allowed++;
        else refused++;
      }
    }
    assert.equal(allowed, points);
    assert.equal(refused, 800 - points);
    assert.ok((await counted(a, `${prefix}rl:general:1.2.3.4`, points)) >= points);
    // Refused everywhere until the window ends, with the time left.
    const late = await processes[1]!.consume('1.2.3.4');
    assert.equal(late.allowed, false);
    assert.equal(late.remaining, 0);
    assert.ok(late.resetSeconds >= 1 && late.resetSeconds <= 60);
    // Another key has its own budget.
    assert.equal((await processes[0]!.consume('5.6.7.8')).allowed, true);
  }),
);

test('shared limit: near the end every request is counted in Redis first', { skip }, () =>
  withRedis(async ({ a, b, prefix }) => {
    const points = 200;
    const rate = { points, seconds: 60 };
    const margin = exactMargin(points);
    const [p, q] = [
      createLimiter({ name: 'vote', rate, redis: a, prefix }),
      createLimiter({ name: 'vote', rate, redis: b, prefix }),
    ];
    // Another process spent all but the margin: this one learns it on its next exact request.
    for (let i = 0; i < points - margin; i++) await q.consume('user');
    await counted(a, `${prefix}rl:vote:user`, points - margin);
    const d = await p.consume('user');
    assert.equal(d.remaining, margin - 1);
    for (let i = 1; i < margin; i++) {
      const key = `${prefix}rl:vote:user`;
      const r = await p.consume('user');
      assert.ok(r.allowed);
      assert.equal(Number(await a.get(key)), points - margin + 1 + i, 'counted in Redis before it was answered');
    }
    assert.equal((await q.consume('user')).allowed, false);
    assert.equal((await p.consume('user')).allowed, false);
  }),
);

test('shared limit: a window that ends starts a fresh budget', { skip }, () =>
  withRedis(async ({ a, prefix }) => {
    const limiter = createLimiter({ name: 'general', rate: { points: 1000, seconds: 1 }, redis: a, prefix });
    for (let i = 0; i < 700; i++) await limiter.consume('k');
    await new Promise((r) => setTimeout(r, 1100));
    const d = await limiter.consume('k');
    assert.equal(d.allowed, true);
    assert.equal(d.remaining, 999);
    const key = `${prefix}rl:general:k`;
    assert.equal(await counted(a, key, 1), 1, 'nothing of the old window leaked into the new one');
  }),
);
