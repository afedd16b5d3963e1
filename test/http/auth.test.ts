import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { startApp, type TestApp } from '../support/app.ts';
import { registerUser, apiToken } from '../support/users.ts';

let app: TestApp;
before(async () => {
  app = await startApp({ ADMIN_USERNAMES: 'Boss_1' });
});
after(() => app.close());

const register = (body: Record<string, unknown>) => app.api.post('/api/auth', { action: 'register', ...body });

describe('POST /api/auth register', () => {
  test('returns 201 with a JWT and the user, and sets the auth-token cookie', async () => {
    const r = await register({ email: 'Reg1@Example.test', username: 'reg_one', password: 'correct horse' });
    assert.equal(r.status, 201);
    assert.match(r.body.token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
    assert.equal(r.body.user.username, 'reg_one');
    assert.equal(r.body.user.email, 'Reg1@Example.test');
    assert.equal(r.body.user.role, 'user');
    assert.match(r.body.user.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const cookie = r.headers.get('set-cookie') ?? '';
    assert.match(cookie, new RegExp(`^auth-token=${r.body.token.replace(/[.]/g, '\\.')};`));
    assert.match(cookie, /httponly/i);
    assert.match(cookie, /samesite=lax/i);
    assert.match(cookie, /path=\//i);
    assert.match(cookie, /expires=|max-age=/i);
    assert.doesNotMatch(cookie, /secure/i, 'no Secure flag over plain HTTP');
    const claims = jwt.decode(r.body.token, { complete: true })!;
    assert.equal(claims.header.alg, 'HS256');
    const payload = claims.payload as jwt.JwtPayload;
    assert.equal(payload.sub, r.body.user.id);
    assert.equal(payload.exp! - payload.iat!, 24 * 3600, 'JWT_TTL defaults to 24h');
  });

  test('ignores role and id in the body', async () => {
    const r = await register({
      email: 'sneaky@example.test',
      username: 'sneaky',
      password: 'password123',
      role: 'admin',
      id: '00000000-0000-4000-8000-000000000000',
    });
    assert.equal(r.status, 201);
    assert.equal(r.body.user.role, 'user');
    assert.notEqual(r.body.user.id, '00000000-0000-4000-8000-000000000000');
  });

  test('registering a name listed in ADMIN_USERNAMES gives a plain user (no squatting)', async () => {
    const r = await register({ email: 'boss@example.test', username: 'boss_1', password: 'password123' });
    assert.equal(r.status, 201);
    assert.equal(r.body.user.role, 'user');
    const me = await app.api.get('/api/profile', { token: r.body.token });
    assert.equal(me.body.user.role, 'user');
    const login = await app.api.post('/api/auth', { action: 'login', username: 'boss_1', password: 'password123' });
    assert.equal(login.body.user.role, 'user');
  });

  const invalid: Array<[string, Record<string, unknown>, RegExp]> = [
    ['a short username', { email: 'x1@example.test', username: 'ab', password: 'password123' }, /username/],
    ['a username with a dash', { email: 'x2@example.test', username: 'ab-cd', password: 'password123' }, /username/],
    [
      'a 33-character username',
      { email: 'x3@example.test', username: 'a'.repeat(33), password: 'password123' },
      /username/,
    ],
    ['an invalid email', { email: 'not-an-email', username: 'valid_name', password: 'password123' }, /email/],
    [
      'a 7-character password',
      { email: 'x4@example.test', username: 'valid_name', password: '1234567' },
      /password.*8/,
    ],
    [
      'a 257-character password',
      { email: 'x5@example.test', username: 'valid_name', password: 'p'.repeat(257) },
      /password.*256/,
    ],
    ['a missing password', { email: 'x6@example.test', username: 'valid_name' }, /password is required/],
    ['a numeric username', { email: 'x7@example.test', username: 12345, password: 'password123' }, /username/],
  ];
  for (const [what, body, message] of invalid) {
    test(`rejects ${what} with 400 invalid_request naming the field`, async () => {
      const r = await register(body);
      assert.equal(r.status, 400);
      assert.equal(r.body.error, 'invalid_request');
      assert.match(r.body.message, message);
    });
  }

  test('rejects a taken username (any case) and a taken email (any case) with 409 conflict', async () => {
    await register({ email: 'taken@example.test', username: 'TakenName', password: 'password123' });
    const byName = await register({ email: 'other@example.test', username: 'takenname', password: 'password123' });
    assert.equal(byName.status, 409);
    assert.equal(byName.body.error, 'conflict');
    assert.match(byName.body.message, /username/);
    const byEmail = await register({ email: 'TAKEN@example.test', username: 'fresh_name', password: 'password123' });
    assert.equal(byEmail.status, 409);
    assert.match(byEmail.body.message, /email/);
  });

  test('an unknown action or a missing body is 400', async () => {
    assert.equal((await app.api.post('/api/auth', { action: 'delete' })).body.error, 'invalid_request');
    const none = await app.api.post('/api/auth', undefined);
    assert.equal(none.status, 400);
    assert.equal(none.body.error, 'invalid_request');
  });
});

describe('POST /api/auth login', () => {
  test('works by email or username, case-insensitively, and sets the cookie', async () => {
    const u = await registerUser(app.api, 'Login_Case');
    const byEmail = await app.api.post('/api/auth', {
      action: 'login',
      email: u.email.toUpperCase(),
      password: u.password,
    });
    assert.equal(byEmail.status, 200);
    assert.equal(byEmail.body.user.id, u.id);
    assert.match(byEmail.headers.get('set-cookie') ?? '', /^auth-token=/);
    const byName = await app.api.post('/api/auth', { action: 'login', username: 'login_case', password: u.password });
    assert.equal(byName.status, 200);
    assert.equal(byName.body.user.id, u.id);
  });

  test('a wrong password and an unknown user get the same 401 body', async () => {
    const u = await registerUser(app.api);
    const wrong = await app.api.post('/api/auth', { action: 'login', email: u.email, password: 'wrong password' });
    const unknown = await app.api.post('/api/auth', {
      action: 'login',
      email: 'nobody@example.test',
      password: 'wrong password',
    });
    assert.equal(wrong.status, 401);
    assert.equal(unknown.status, 401);
    assert.deepEqual(wrong.body, unknown.body);
    assert.equal(wrong.body.error, 'unauthorized');
  });

  test('login without email or username is 400', async () => {
    const r = await app.api.post('/api/auth', { action: 'login', password: 'whatever1' });
    assert.equal(r.status, 400);
    assert.match(r.body.message, /email or username/);
  });
});

describe('authentication', () => {
  test('Bearer JWT, API token and cookie all authenticate', async () => {
    const u = await registerUser(app.api);
    const viaJwt = await app.api.get('/api/me', { token: u.token });
    assert.equal(viaJwt.status, 200);
    assert.equal(viaJwt.body.user.id, u.id);
    const pv = await apiToken(app.api, u);
    assert.equal((await app.api.get('/api/me', { token: pv })).body.user.id, u.id);
    const viaCookie = await app.api.get('/api/me', { headers: { cookie: `auth-token=${u.token}` } });
    assert.equal(viaCookie.body.user.id, u.id);
  });

  test('missing, malformed, tampered, wrong-secret, alg=none and expired tokens are 401', async () => {
    const u = await registerUser(app.api);
    const [h, p] = u.token.split('.');
    const secret = app.config.jwtSecret;
    const now = Math.floor(Date.now() / 1000);
    const bad = {
      missing: undefined,
      garbage: 'not-a-token',
      tampered: `${h}.${p}.${'A'.repeat(43)}`,
      otherSecret: jwt.sign({ sub: u.id }, 'x'.repeat(40), { algorithm: 'HS256' }),
      algNone: `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${p}.`,
      hs512: jwt.sign({ sub: u.id }, secret, { algorithm: 'HS512' }),
      expired: jwt.sign({ sub: u.id, iat: now - 7200, exp: now - 3600 }, secret, { algorithm: 'HS256' }),
      unknownApiToken: 'pv_' + 'x'.repeat(43),
    };
    for (const [what, token] of Object.entries(bad)) {
      const r = await app.api.get('/api/me', token ? { token } : {});
      assert.equal(r.status, 401, what);
      assert.equal(r.body.error, 'unauthorized', what);
    }
    const basic = await app.api.get('/api/me', { headers: { authorization: 'Basic dXNlcjpwYXNz' } });
    assert.equal(basic.status, 401);
  });

  test('a bad Bearer token is 401 on public routes too; a stale cookie is anonymous; sign-in works', async () => {
    const u = await registerUser(app.api);
    const now = Math.floor(Date.now() / 1000);
    const expired = jwt.sign({ sub: u.id, iat: now - 7200, exp: now - 3600 }, app.config.jwtSecret, {
      algorithm: 'HS256',
    });
    for (const token of [expired, 'not-a-token', 'pv_' + 'x'.repeat(43)]) {
      for (const path of ['/api/uploads', '/api/modlog', '/api/tags?q=a']) {
        const r = await app.api.get(path, { token });
        assert.equal(r.status, 401, `${path} with ${token.slice(0, 12)}…`);
        assert.equal(r.body.error, 'unauthorized');
        assert.equal(r.headers.get('www-authenticate'), 'Bearer error="invalid_token"');
      }
    }
    // The cookie of an expired session: the pages and public reads serve an anonymous visitor.
    const cookie = { headers: { cookie: `auth-token=${expired}` } };
    assert.equal((await app.api.get('/api/uploads', cookie)).status, 200);
    assert.equal((await app.api.get('/api/me', cookie)).status, 401);
    // A client holding a stale token signs in again with it still attached.
    const again = await app.api.post(
      '/api/auth',
      { action: 'login', username: u.username, password: u.password },
      { token: expired },
    );
    assert.equal(again.status, 200, again.text);
    // Another scheme (a proxy's Basic credentials) is not judged on a public route.
    const basic = await app.api.get('/api/uploads', { headers: { authorization: 'Basic dXNlcjpwYXNz' } });
    assert.equal(basic.status, 200);
  });

  test("a deleted user's tokens stop working", async () => {
    const u = await registerUser(app.api);
    const pv = await apiToken(app.api, u);
    await app.composed.db.db().deleteFrom('users').where('id', '=', u.id).execute();
    assert.equal((await app.api.get('/api/me', { token: u.token })).status, 401);
    assert.equal((await app.api.get('/api/me', { token: pv })).status, 401);
  });

  test('a cookie-only state-changing request from another site is 403; the same from this site passes', async () => {
    const u = await registerUser(app.api);
    const cookie = `auth-token=${u.token}`;
    const crossFetch = await app.api.post(
      '/api/auth/tokens/generate',
      { name: 'x' },
      { headers: { cookie, 'sec-fetch-site': 'cross-site' } },
    );
    assert.equal(crossFetch.status, 403);
    assert.equal(crossFetch.body.error, 'forbidden');
    const crossOrigin = await app.api.post(
      '/api/auth/tokens/generate',
      { name: 'x' },
      { headers: { cookie, origin: 'https://evil.example' } },
    );
    assert.equal(crossOrigin.status, 403);
    const sameOrigin = await app.api.post(
      '/api/auth/tokens/generate',
      { name: 'x' },
      { headers: { cookie, origin: app.url, 'sec-fetch-site': 'same-origin' } },
    );
    assert.equal(sameOrigin.status, 201);
    // A Bearer token is not ambient authority: cross-site is fine.
    const bearer = await app.api.post(
      '/api/auth/tokens/generate',
      { name: 'x' },
      { token: u.token, headers: { origin: 'https://evil.example' } },
    );
    assert.equal(bearer.status, 201);
    // Reads through the cookie are fine cross-site.
    assert.equal((await app.api.get('/api/me', { headers: { cookie, 'sec-fetch-site': 'cross-site' } })).status, 200);
  });

  test('logout clears the cookie', async () => {
    const r = await app.api.post('/api/auth', { action: 'logout' });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { success: true });
    assert.match(r.headers.get('set-cookie') ?? '', /^auth-token=;.*expires=Thu, 01 Jan 1970/i);
  });
});

describe('API tokens', () => {
  test('generate shows the secret once; the database holds only its SHA-256', async () => {
    const u = await registerUser(app.api);
    const r = await app.api.post('/api/auth/tokens/generate', { name: 'ci uploader' }, { token: u.token });
    assert.equal(r.status, 201);
    assert.match(r.body.token, /^pv_[\w-]{43}$/);
    assert.equal(r.body.name, 'ci uploader');
    assert.match(r.body.id, /^[0-9a-f-]{36}$/);
    assert.ok(r.body.created_at);
    const rows = await app.composed.db.db().selectFrom('api_tokens').selectAll().where('id', '=', r.body.id).execute();
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.token_hash, createHash('sha256').update(r.body.token).digest('hex'));
    assert.ok(!JSON.stringify(rows[0]!).includes(r.body.token));
    const list = await app.api.get('/api/auth/tokens', { token: u.token });
    assert.equal(list.status, 200);
    assert.deepEqual(Object.keys(list.body.tokens[0]).sort(), [
      'created_at',
      'expires_at',
      'id',
      'last_used_at',
      'name',
      'scopes',
    ]);
    assert.equal(list.body.tokens[0].last_used_at, null);
  });

  test('using a token records last_used_at; revoking it gives 401 at once', async () => {
    const u = await registerUser(app.api);
    const gen = await app.api.post('/api/auth/tokens/generate', { name: 'bot' }, { token: u.token });
    assert.equal((await app.api.get('/api/me', { token: gen.body.token })).status, 200);
    const list = await app.api.get('/api/auth/tokens', { token: u.token });
    assert.ok(list.body.tokens[0].last_used_at);
    const del = await app.api.del(`/api/auth/tokens/${gen.body.id}`, { token: u.token });
    assert.equal(del.status, 200);
    assert.equal(del.body.success, true);
    assert.equal((await app.api.get('/api/me', { token: gen.body.token })).status, 401);
    assert.equal((await app.api.del(`/api/auth/tokens/${gen.body.id}`, { token: u.token })).status, 404);
  });

  test("a user cannot list or revoke another user's token", async () => {
    const a = await registerUser(app.api);
    const b = await registerUser(app.api);
    const gen = await app.api.post('/api/auth/tokens/generate', { name: 'a' }, { token: a.token });
    assert.equal((await app.api.get('/api/auth/tokens', { token: b.token })).body.tokens.length, 0);
    const del = await app.api.del(`/api/auth/tokens/${gen.body.id}`, { token: b.token });
    assert.equal(del.status, 404);
    assert.equal((await app.api.get('/api/me', { token: gen.body.token })).status, 200);
    assert.equal((await app.api.del('/api/auth/tokens/not-a-uuid', { token: b.token })).status, 404);
  });

  test('token endpoints need a user and a name', async () => {
    assert.equal((await app.api.post('/api/auth/tokens/generate', { name: 'x' })).status, 401);
    const u = await registerUser(app.api);
    const r = await app.api.post('/api/auth/tokens/generate', { name: '  ' }, { token: u.token });
    assert.equal(r.status, 400);
    assert.match(r.body.message, /name/);
  });
});

test('passwords are stored with scrypt N=2^17, r=8, p=1 by default, hashed in the dedicated pool', async () => {
  const prod = await startApp({}, { productionScrypt: true });
  try {
    const hashes = () => prod.composed.passwordHashes.stats().completed;
    // A failed login first: an unknown user is checked against a decoy, one hash in the pool like any check.
    assert.equal(
      (await prod.api.post('/api/auth', { action: 'login', username: 'nobody_yet', password: 'whatever-1' })).status,
      401,
    );
    const before = hashes();
    const u = await registerUser(prod.api);
    assert.equal(hashes(), before + 1, "register hashed in the pool, not on libuv's threadpool");
    const row = await prod.composed.db
      .db()
      .selectFrom('users')
      .select('password_hash')
      .where('id', '=', u.id)
      .executeTakeFirstOrThrow();
    assert.match(row.password_hash, /^scrypt\$131072\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
    const ok = await prod.api.post('/api/auth', { action: 'login', username: u.username, password: u.password });
    assert.equal(ok.status, 200);
    assert.equal(hashes(), before + 2, 'login verified in the pool');
    const wrongPassword = await prod.api.post('/api/auth', {
      action: 'login',
      username: u.username,
      password: 'not-the-password',
    });
    const wrongUser = await prod.api.post('/api/auth', {
      action: 'login',
      username: 'nobody_here',
      password: 'not-the-password',
    });
    assert.equal(wrongPassword.status, 401);
    assert.deepEqual(wrongUser.body, wrongPassword.body);
    assert.equal(hashes(), before + 4, 'an unknown user costs one production-cost scrypt too');
  } finally {
    await prod.close();
  }
});

test('behind a trusted HTTPS proxy the cookie is Secure; without TRUST_PROXY the header is ignored', async () => {
  const proxied = await startApp({ TRUST_PROXY: 'true' });
  try {
    const r = await proxied.api.post(
      '/api/auth',
      { action: 'register', email: 'sec@example.test', username: 'secure_one', password: 'password123' },
      { headers: { 'x-forwarded-proto': 'https' } },
    );
    assert.equal(r.status, 201);
    assert.match(r.headers.get('set-cookie') ?? '', /;\s*secure/i);
  } finally {
    await proxied.close();
  }
  const r = await app.api.post(
    '/api/auth',
    { action: 'register', email: 'insec@example.test', username: 'insecure_one', password: 'password123' },
    { headers: { 'x-forwarded-proto': 'https' } },
  );
  assert.doesNotMatch(r.headers.get('set-cookie') ?? '', /secure/i);
});

test('ADMIN_USERNAMES promotes accounts that exist when the server starts, and only those', async () => {
  const first = await startApp();
  try {
    const early = await registerUser(first.api, 'early_boss');
    const plain = await registerUser(first.api);
    assert.equal((await first.api.get('/api/profile', { token: early.token })).body.user.role, 'user');
    // A restart (here a second process on the same database) with the variable set.
    const restarted = await startApp(
      { ADMIN_USERNAMES: 'EARLY_BOSS, not_yet_registered' },
      {
        sharedDataDir: first.config.dataDir,
        ...(first.config.databaseUrl ? { databaseUrl: first.config.databaseUrl } : {}),
      },
    );
    try {
      assert.equal((await restarted.api.get('/api/profile', { token: early.token })).body.user.role, 'admin');
      // The role lives in the database: the process started without the variable sees it at once.
      assert.equal((await first.api.get('/api/profile', { token: early.token })).body.user.role, 'admin');
      assert.equal((await restarted.api.get('/api/profile', { token: plain.token })).body.user.role, 'user');
      // A listed name nobody had at startup stays free of privilege when registered later.
      const late = await registerUser(restarted.api, 'not_yet_registered');
      assert.equal((await restarted.api.get('/api/profile', { token: late.token })).body.user.role, 'user');
    } finally {
      await restarted.close();
    }
  } finally {
    await first.close();
  }
});
