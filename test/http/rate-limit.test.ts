import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp } from '../support/app.ts';
import { onPostgres, TEST_REDIS_URL } from '../support/env.ts';
import { testRedisPrefix } from '../support/redis.ts';
import type { Client, Reply } from '../support/http.ts';
import { registerUser } from '../support/users.ts';
import { pngImage } from '../support/fixtures.ts';

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

/** An image upload made from `ip` (TRUST_PROXY=true), so it spends none of another address's general budget. */
async function imageUploadFrom(api: Client, ip: string): Promise<string> {
  const headers = { 'x-forwarded-for': ip };
  const user = await registerUser(api);
  const form = new FormData();
  form.append('upload_type', 'image');
  form.append('file', new Blob([await pngImage(64, 48)]), 'media.png');
  const up = await api.post('/api/v1/upload', undefined, { token: user.token, raw: form, headers });
  assert.equal(up.status, 201, up.text);
  return up.body.id as string;
}

/** The static assets a page names (stylesheet, icon, entry module, module preloads). */
function assetsOf(html: string): string[] {
  const paths = [...html.matchAll(/(?:href|src)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
  return [...new Set(paths)];
}

const PAGE = { unchecked: 'an HTML page or asset, not an API route' };

test(
  'image variants, /assets/* and /favicon.ico spend RATE_LIMIT_MEDIA, not RATE_LIMIT_GENERAL: ' +
    'browsing leaves the general budget whole',
  async () => {
    const app = await startApp({ RATE_LIMIT_GENERAL: '5/15m', RATE_LIMIT_MEDIA: '1000/15m', TRUST_PROXY: 'true' });
    try {
      const id = await imageUploadFrom(app.api, '198.51.100.50');
      const page = await app.api.get('/', { ...PAGE, headers: { 'x-forwarded-for': '198.51.100.50' } });
      assert.equal(page.status, 200);
      const assets = assetsOf(page.text);
      // icon, stylesheet, the page's bundle
      assert.ok(assets.length >= 3, `the feed page names its assets: ${assets.join(', ')}`);

      // Another address browses: far more image and asset GETs than the general limit of 5.
      const headers = { 'x-forwarded-for': '203.0.113.50' };
      let spent = 0;
      for (let i = 0; i < 50; i++) {
        const size = (['thumb', 'medium', 'full'] as const)[i % 3];
        const r = await app.api.get(`/api/image/${id}?size=${size}`, { headers });
        assert.equal(r.status, 200, `image GET ${i}: ${r.text}`);
        assertLimitHeaders(r, 1000);
        assert.equal(r.headers.get('ratelimit-remaining'), String(1000 - ++spent));
      }
      for (let i = 0; i < 50; i++) {
        const r = await app.api.get(assets[i % assets.length]!, { ...PAGE, headers });
        assert.equal(r.status, 200, assets[i % assets.length]);
        assertLimitHeaders(r, 1000);
        assert.equal(r.headers.get('ratelimit-remaining'), String(1000 - ++spent));
      }
      for (let i = 0; i < 5; i++) {
        const icon = await app.api.get('/favicon.ico', { ...PAGE, headers });
        assert.equal(icon.status, 200);
        assert.equal(icon.headers.get('ratelimit-remaining'), String(1000 - ++spent));
        const head = await app.api.request('HEAD', `/api/image/${id}?size=thumb`, undefined, {
          headers,
          unchecked: 'HEAD: the GET without its body',
        });
        assert.equal(head.status, 200);
        assert.equal(head.headers.get('ratelimit-remaining'), String(1000 - ++spent), 'HEAD spends media too');
      }

      // The general budget of that address is whole: its first general request leaves 4 of 5.
      const feed = await app.api.get('/api/uploads', { headers });
      assert.equal(feed.status, 200);
      assertLimitHeaders(feed, 5);
      assert.equal(feed.headers.get('ratelimit-remaining'), '4');
      // Pages and every other /api/* route still spend general, variants of the image route's path included.
      const html = await app.api.get(`/uploads/${id}`, { ...PAGE, headers });
      assert.equal(html.status, 200);
      assertLimitHeaders(html, 5);
      assert.equal(html.headers.get('ratelimit-remaining'), '3');
      const upload = await app.api.get(`/api/upload/${id}`, { headers });
      assert.equal(upload.status, 200);
      assert.equal(upload.headers.get('ratelimit-remaining'), '2');
      const post = await app.api.post(`/api/image/${id}`, {}, { headers, unchecked: 'a method the route lacks' });
      assert.equal(post.status, 405);
      assert.equal(post.headers.get('ratelimit-limit'), '5', 'only GET and HEAD of the image route spend media');
      assert.equal(post.headers.get('ratelimit-remaining'), '1');
    } finally {
      await app.close();
    }
  },
);

test(
  'RATE_LIMIT_MEDIA spent: the next image or asset GET is 429 rate_limited with Retry-After, ' +
    'while general routes still answer',
  async () => {
    const app = await startApp({ RATE_LIMIT_MEDIA: '3/15m', RATE_LIMIT_GENERAL: '100/15m' });
    try {
      const id = await imageUploadFrom(app.api, '127.0.0.1');
      for (let i = 0; i < 3; i++) {
        const r = await app.api.get(`/api/image/${id}?size=thumb`);
        assert.equal(r.status, 200);
        assertLimitHeaders(r, 3);
        assert.equal(r.headers.get('ratelimit-remaining'), String(2 - i));
      }
      const limited = await app.api.get(`/api/image/${id}?size=thumb`);
      assert.equal(limited.status, 429);
      assert.equal(limited.body.error, 'rate_limited');
      assert.match(limited.body.message, /media rate limit exceeded \(3 requests per 15 minutes\)/);
      const retryAfter = Number(limited.headers.get('retry-after'));
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 900, String(retryAfter));
      assertLimitHeaders(limited, 3);
      assert.equal(limited.headers.get('ratelimit-remaining'), '0');
      // The page assets share the media budget.
      for (const path of ['/favicon.ico', '/assets/app.000000000000.js']) {
        const r = await app.api.get(path, PAGE);
        assert.equal(r.status, 429, path);
        assert.equal(r.headers.get('ratelimit-limit'), '3', path);
        assert.ok(Number(r.headers.get('retry-after')) >= 1, path);
      }
      // The general budget is another one.
      const feed = await app.api.get('/api/uploads');
      assert.equal(feed.status, 200);
      assertLimitHeaders(feed, 100);
      assert.equal((await app.api.get('/', PAGE)).status, 200);
    } finally {
      await app.close();
    }
  },
);

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

test(
  'with REDIS_URL, processes sharing one Redis share one media budget',
  { skip: !onPostgres && 'needs Redis (PostgreSQL + Redis pass)' },
  async () => {
    const prefix = testRedisPrefix();
    const env = { RATE_LIMIT_MEDIA: '3/15m', REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix };
    const a = await startApp(env);
    const b = await startApp(env);
    try {
      const missing = `/api/image/${crypto.randomUUID()}`;
      assert.equal((await a.api.get('/favicon.ico', PAGE)).status, 200);
      assert.equal((await b.api.get('/favicon.ico', PAGE)).status, 200);
      // A variant that does not exist spends the media limit too (it is decided before routing).
      const last = await a.api.get(missing);
      assert.equal(last.status, 404);
      assert.equal(last.headers.get('ratelimit-remaining'), '0');
      const fromB = await b.api.get(missing);
      assert.equal(fromB.status, 429, 'the third request anywhere was the last');
      assert.equal(fromB.body.error, 'rate_limited');
      assert.equal((await a.api.get('/favicon.ico', PAGE)).status, 429);
      // Neither process's general budget was touched.
      assert.equal((await b.api.get('/api/uploads')).status, 200);
    } finally {
      await a.close();
      await b.close();
    }
  },
);
