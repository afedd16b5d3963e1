import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp } from '../support/app.ts';
import { onPostgres, TEST_REDIS_URL } from '../support/env.ts';
import { testRedisPrefix } from '../support/redis.ts';
import type { Reply } from '../support/http.ts';

function assertLimitHeaders(r: Reply, limit: number) {
  assert.equal(r.headers.get('ratelimit-limit'), String(limit));
  assert.match(r.headers.get('ratelimit-remaining') ?? '', /^\d+$/);
  assert.match(r.headers.get('ratelimit-reset') ?? '', /^[1-9]\d*$/);
}

test(
  'every POST /api/auth counts toward RATE_LIMIT_AUTH, ' + 'whatever its outcome; then 429 with Retry-After',
  async () => {
    const app = await startApp({ RATE_LIMIT_AUTH: '3/15m' });
    try {
      const attempts = [
        await app.api.post('/api/auth', { action: 'nonsense' }),
        await app.api.post('/api/auth', { action: 'login', email: 'x@example.test', password: 'wrongpass' }),
        await app.api.post('/api/auth', {
          action: 'register',
          email: 'rl@example.test',
          username: 'rl_user',
          password: 'password123',
        }),
      ];
      assert.deepEqual(
        attempts.map((r) => r.status),
        [400, 401, 201],
      );
      attempts.forEach((r, i) => {
        assertLimitHeaders(r, 3);
        assert.equal(r.headers.get('ratelimit-remaining'), String(2 - i));
      });
      const limited = await app.api.post('/api/auth', {
        action: 'login',
        email: 'rl@example.test',
        password: 'password123',
      });
      assert.equal(limited.status, 429);
      assert.equal(limited.body.error, 'rate_limited');
      assert.match(limited.body.message, /3 requests per 15 minutes/);
      const retryAfter = Number(limited.headers.get('retry-after'));
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 900);
      assertLimitHeaders(limited, 3);
      assert.equal(limited.headers.get('ratelimit-remaining'), '0');
      // The auth budget is separate from the general one.
      assert.equal((await app.api.get('/api/auth/tokens')).status, 401);
    } finally {
      await app.close();
    }
  },
);

test('X-Forwarded-For is ignored unless TRUST_PROXY=true', async () => {
  const untrusted = await startApp({ RATE_LIMIT_AUTH: '1/15m' });
  try {
    await untrusted.api.post('/api/auth', { action: 'logout' }, { headers: { 'x-forwarded-for': '203.0.113.1' } });
    const r = await untrusted.api.post(
      '/api/auth',
      { action: 'logout' },
      { headers: { 'x-forwarded-for': '203.0.113.2' } },
    );
    assert.equal(r.status, 429, 'a spoofed X-Forwarded-For must not buy a fresh budget');
  } finally {
    await untrusted.close();
  }
  const trusted = await startApp({ RATE_LIMIT_AUTH: '1/15m', TRUST_PROXY: 'true' });
  try {
    assert.equal(
      (await trusted.api.post('/api/auth', { action: 'logout' }, { headers: { 'x-forwarded-for': '203.0.113.1' } }))
        .status,
      200,
    );
    assert.equal(
      (await trusted.api.post('/api/auth', { action: 'logout' }, { headers: { 'x-forwarded-for': '203.0.113.1' } }))
        .status,
      429,
    );
    assert.equal(
      (await trusted.api.post('/api/auth', { action: 'logout' }, { headers: { 'x-forwarded-for': '203.0.113.2' } }))
        .status,
      200,
    );
    // Only the hop our proxy appended counts: what the client wrote before it buys nothing.
    const spoofed = await trusted.api.post(
      '/api/auth',
      { action: 'logout' },
      { headers: { 'x-forwarded-for': '198.51.100.7, 203.0.113.2' } },
    );
    assert.equal(spoofed.status, 429);
  } finally {
    await trusted.close();
  }
});

test(
  'per-IP limits key an IPv6 client by its /64: rotating addresses inside it buys nothing, ' +
    'another /64 has its own budget',
  async () => {
    const app = await startApp({ RATE_LIMIT_AUTH: '2/15m', TRUST_PROXY: 'true' });
    try {
      const from = (xff: string) =>
        app.api.post('/api/auth', { action: 'logout' }, { headers: { 'x-forwarded-for': xff } });
      assert.equal((await from('2001:db8:aa:1::1')).status, 200);
      assert.equal((await from('2001:db8:aa:1:ffff:ffff:ffff:fffe')).status, 200);
      const rotated = await from('2001:db8:aa:1:1234:5678:9abc:def0');
      assert.equal(rotated.status, 429, 'a third address in the same /64 shares its budget');
      assert.equal(rotated.headers.get('ratelimit-remaining'), '0');
      assert.equal((await from('2001:db8:aa:2::1')).status, 200, 'the neighbouring /64 is another client');
      // An IPv4-mapped IPv6 address is its IPv4 client.
      assert.equal((await from('198.51.100.9')).status, 200);
      assert.equal((await from('::ffff:198.51.100.9')).status, 200);
      assert.equal((await from('::ffff:c633:6409')).status, 429);
    } finally {
      await app.close();
    }
  },
);

test('the auth limit cannot be dodged by spelling the path differently', async () => {
  const app = await startApp({ RATE_LIMIT_AUTH: '2/15m' });
  try {
    for (const path of ['/API/Auth', '/api/auth/']) {
      const r = await app.api.post(path, { action: 'logout' }, { unchecked: 'the same route, spelled differently' });
      assert.equal(r.status, 200, `${path}: ${r.text}`);
      assert.equal(r.headers.get('ratelimit-limit'), '2', `${path} spends the auth limit`);
    }
    assert.equal((await app.api.post('/api/auth', { action: 'logout' })).status, 429);
  } finally {
    await app.close();
  }
});

test('RATE_LIMIT_GENERAL applies per IP to every other route; health probes are never limited', async () => {
  const app = await startApp({ RATE_LIMIT_GENERAL: '3/1m' });
  try {
    const unknown = { unchecked: 'an unknown route spends the general limit too' };
    for (let i = 0; i < 3; i++) assertLimitHeaders(await app.api.get('/api/nothing', unknown), 3);
    const limited = await app.api.get('/api/nothing', unknown);
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    for (let i = 0; i < 5; i++) assert.equal((await app.api.get('/healthz')).status, 200);
    assert.equal((await app.api.get('/readyz')).status, 200);
  } finally {
    await app.close();
  }
});

test('with Redis unreachable, limits are still enforced by the in-memory insurance limiter', async () => {
  const app = await startApp({ RATE_LIMIT_AUTH: '2/15m', REDIS_URL: 'redis://127.0.0.1:1' });
  try {
    assert.equal((await app.api.post('/api/auth', { action: 'logout' })).status, 200);
    assert.equal((await app.api.post('/api/auth', { action: 'logout' })).status, 200);
    assert.equal((await app.api.post('/api/auth', { action: 'logout' })).status, 429);
    // Serving on the fallbacks: ready, but degraded (API.md Operations).
    const ready = await app.api.get('/readyz');
    assert.equal(ready.status, 200);
    assert.equal(ready.body.status, 'degraded');
    assert.equal(ready.body.checks.redis.status, 'down');
  } finally {
    await app.close();
  }
});

test(
  'with REDIS_URL, processes sharing one Redis share one budget',
  { skip: !onPostgres && 'needs Redis (PostgreSQL + Redis pass)' },
  async () => {
    const prefix = testRedisPrefix();
    const a = await startApp({ RATE_LIMIT_AUTH: '2/15m', REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix });
    const b = await startApp({ RATE_LIMIT_AUTH: '2/15m', REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix });
    try {
      assert.equal((await a.api.post('/api/auth', { action: 'logout' })).status, 200);
      assert.equal((await b.api.post('/api/auth', { action: 'logout' })).status, 200);
      assert.equal((await a.api.post('/api/auth', { action: 'logout' })).status, 429);
      assert.equal((await b.api.post('/api/auth', { action: 'logout' })).status, 429);
    } finally {
      await a.close();
      await b.close();
    }
  },
);
