/** Scoped and expiring API tokens (API.md Auth, Scopes; issue 31 part 1). */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { uploadLink } from '../support/uploads.ts';
import type { Reply } from '../support/http.ts';
import { launchBrowser, noBrowser, openPage, watchedPage } from '../support/browser.ts';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let app: TestApp;
before(async () => {
  app = await startApp();
});
after(() => app.close());

async function token(user: TestUser, body: Record<string, unknown>, as = user.token): Promise<Reply> {
  return app.api.post('/api/auth/tokens/generate', { name: 'scoped', ...body }, { token: as });
}

async function scoped(user: TestUser, body: Record<string, unknown>): Promise<{ token: string; id: string }> {
  const r = await token(user, body);
  assert.equal(r.status, 201, r.text);
  return { token: r.body.token, id: r.body.id };
}

const HASH = 'a'.repeat(64);

/** Sets a token's expires_at in the app's own database (a token that has run out, without waiting). */
async function expire(id: string, at: Date): Promise<void> {
  const { db, dialect } = { db: app.composed.db.db(), dialect: app.composed.db.dialect };
  const r = await db
    .updateTable('api_tokens')
    .set({ expires_at: dialect.date(at) })
    .where('id', '=', id)
    .executeTakeFirst();
  assert.equal(Number(r.numUpdatedRows), 1);
}

function assertScope(r: Reply, scope: string): void {
  assert.equal(r.status, 403, r.text);
  assert.equal(r.body.error, 'insufficient_scope');
  assert.match(r.body.message, new RegExp(`"${scope}"`));
}

describe('a token with only `upload`', () => {
  let owner: TestUser;
  let t: string;
  let own: string;
  before(async () => {
    owner = await registerUser(app.api);
    t = (await scoped(owner, { scopes: ['upload'] })).token;
    own = await uploadLink(app.api, owner, { is_private: 'true' });
  });

  test('uploads and pre-checks', async () => {
    const id = await uploadLink(app.api, { token: t });
    assert.ok(id);
    const check = await app.api.post('/api/uploads/check', { sha256: [HASH] }, { token: t });
    assert.equal(check.status, 200, check.text);
  });

  test('may not vote, manage, or read the profile', async () => {
    const other = await uploadLink(app.api, await registerUser(app.api));
    assertScope(await app.api.post('/api/vote', { uploadId: other, vote: 'fucks' }, { token: t }), 'vote');
    assertScope(await app.api.patch(`/api/upload/${own}/privacy`, { is_private: false }, { token: t }), 'manage');
    assertScope(await app.api.del(`/api/upload/${own}`, { token: t }), 'manage');
    assertScope(await app.api.post(`/api/uploads/${own}/tags`, { tags: ['cats'] }, { token: t }), 'manage');
    assertScope(await app.api.get('/api/profile', { token: t }), 'read');
    assertScope(await app.api.get('/api/me', { token: t }), 'read');
    assertScope(await app.api.get('/api/auth/tokens', { token: t }), 'manage');
  });

  test('is served as anonymous where `read` would show more (an upload without `my_vote`)', async () => {
    const anonymous = await app.api.get(`/api/upload/${own}`, { token: t });
    assert.equal(anonymous.status, 200, 'private means unlisted: anyone with the id may see it');
    assert.equal('my_vote' in anonymous.body, false);
    assert.equal(anonymous.headers.get('cache-control'), 'public, no-cache');
    const owned = await app.api.get(`/api/upload/${own}`, { token: owner.token });
    assert.equal('my_vote' in owned.body, true);
  });

  test('may revoke itself, and only itself', async () => {
    const other = await scoped(owner, {});
    const self = await scoped(owner, { scopes: ['upload'] });
    assertScope(await app.api.del(`/api/auth/tokens/${other.id}`, { token: self.token }), 'manage');
    assert.equal((await app.api.del(`/api/auth/tokens/${self.id}`, { token: self.token })).status, 200);
    assert.equal((await app.api.post('/api/uploads/check', { sha256: [HASH] }, { token: self.token })).status, 401);
  });
});

test('a page asked for with a token shows what the API shows that token (issue 44)', async () => {
  const owner = await registerUser(app.api);
  const admin = await registerAdmin(app);
  const secret = `held note ${Math.random().toString(36).slice(2)}`;
  const held = await uploadLink(app.api, owner, { description: secret, is_private: 'true' });
  const hold = await app.api.post(`/api/admin/uploads/${held}/moderation`, { action: 'hold' }, { token: admin.token });
  assert.equal(hold.status, 200, hold.text);
  const page = (path: string, headers: Record<string, string>) =>
    app.api.get(path, { headers: { accept: 'text/html', ...headers }, unchecked: 'an HTML page, not an API route' });
  for (const [scopes, shown] of [
    [['upload', 'vote', 'manage'], false],
    [['read'], true],
  ] as const) {
    const t = (await scoped(owner, { scopes })).token;
    const api = await app.api.get(`/api/upload/${held}`, { token: t });
    const html = await page(`/uploads/${held}`, { authorization: `Bearer ${t}` });
    assert.equal(api.status, shown ? 200 : 404, `${scopes}: ${api.text}`);
    assert.equal(html.status, api.status, `${scopes}: the page answers as the API does`);
    assert.equal(html.text.includes(secret), shown, `${scopes}: the description is shown only with \`read\``);
    assert.equal(html.text.includes(`data-user-id="${owner.id}"`), shown, `${scopes}: the visitor is the owner`);
  }
  // The cookie (and a JWT) have every scope: the owner sees their held upload.
  const cookie = await page(`/uploads/${held}`, { cookie: `auth-token=${owner.token}` });
  assert.equal(cookie.status, 200);
  assert.ok(cookie.text.includes(secret));
});

test('a token made without scopes does everything its owner may (tokens made before scopes keep working)', async () => {
  const owner = await registerUser(app.api);
  const r = await token(owner, {});
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(r.body.scopes, ['upload', 'vote', 'read', 'manage']);
  assert.equal(r.body.expires_at, null);
  const t = { token: r.body.token as string };
  const id = await uploadLink(app.api, t);
  const other = await uploadLink(app.api, await registerUser(app.api));
  assert.equal((await app.api.post('/api/vote', { uploadId: other, vote: 'fucks' }, t)).status, 200);
  assert.equal((await app.api.patch(`/api/upload/${id}/privacy`, { is_private: true }, t)).status, 200);
  assert.equal((await app.api.get('/api/profile', t)).status, 200);
  assert.equal((await app.api.post('/api/uploads/check', { sha256: [HASH] }, t)).status, 200);
  assert.equal((await app.api.get('/api/auth/tokens', t)).status, 200);
  assert.equal((await app.api.del(`/api/upload/${id}`, t)).status, 200);
});

test('the list shows each token’s scopes and expiry', async () => {
  const owner = await registerUser(app.api);
  const before = Date.now();
  const a = await token(owner, { scopes: ['read', 'upload', 'read'], expires_in: '30d' });
  assert.equal(a.status, 201, a.text);
  assert.deepEqual(a.body.scopes, ['upload', 'read'], 'in the contract’s order, once each');
  const exp = Date.parse(a.body.expires_at);
  assert.ok(exp >= before + 30 * 86_400_000 && exp <= Date.now() + 30 * 86_400_000, a.body.expires_at);
  const at = new Date(Date.now() + 7 * 86_400_000).toISOString();
  const b = await token(owner, { scopes: ['vote'], expires_at: at });
  assert.equal(b.status, 201, b.text);
  const list = await app.api.get('/api/auth/tokens', { token: owner.token });
  assert.deepEqual(
    list.body.tokens.map((t: { scopes: string[]; expires_at: string | null }) => [t.scopes, t.expires_at]),
    [
      [['upload', 'read'], a.body.expires_at],
      [['vote'], at],
    ],
  );
});

test('an expired token gets 401; a public read is served as anonymous', async () => {
  const owner = await registerUser(app.api);
  const t = await scoped(owner, { expires_in: '1h' });
  assert.equal((await app.api.get('/api/me', { token: t.token })).status, 200);
  await expire(t.id, new Date(Date.now() - 1000));
  const r = await app.api.get('/api/me', { token: t.token });
  assert.equal(r.status, 401);
  assert.equal(r.body.error, 'unauthorized');
  assert.equal((await app.api.post('/api/uploads/check', { sha256: [HASH] }, { token: t.token })).status, 401);
  const listed = await app.api.get('/api/auth/tokens', { token: owner.token });
  assert.ok(Date.parse(listed.body.tokens[0].expires_at) < Date.now(), 'still listed, with when it expired');
});

test('invalid scopes and expiries are 400 naming the field', async () => {
  const owner = await registerUser(app.api);
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ scopes: ['upload', 'admin'] }, /^scopes\.1: unknown scope/],
    [{ scopes: [] }, /^scopes must name at least one scope/],
    [{ scopes: 'upload' }, /^scopes must be an array/],
    [{ expires_in: '366d' }, /^expires_in must be at most a year/],
    [{ expires_in: 'soon' }, /^expires_in must be a duration/],
    [{ expires_at: 'tomorrow' }, /^expires_at must be an ISO-8601/],
    [{ expires_at: new Date(Date.now() - 60_000).toISOString() }, /^expires_at must be in the future/],
    [{ expires_at: new Date(Date.now() + 400 * 86_400_000).toISOString() }, /^expires_at must be at most a year/],
    [{ expires_in: '1d', expires_at: new Date(Date.now() + 86_400_000).toISOString() }, /not both/],
  ];
  for (const [body, message] of cases) {
    const r = await token(owner, body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.body.error, 'invalid_request');
    assert.match(r.body.message, message, JSON.stringify(body));
  }
  assert.equal((await token(owner, { expires_in: '365d' })).status, 201, 'a year is allowed');
});

test('`moderate`: only admins may ask for it, and an admin token needs it for /api/admin/*', async () => {
  const user = await registerUser(app.api);
  const refused = await token(user, { scopes: ['upload', 'moderate'] });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error, 'forbidden');
  assert.match(refused.body.message, /moderate/);
  const plain = await scoped(user, {});
  const asUser = await app.api.get('/api/admin/moderation', { token: plain.token });
  assert.equal(asUser.status, 403);
  assert.equal(asUser.body.error, 'forbidden', 'a non-admin hears forbidden, not insufficient_scope');

  const admin = await registerAdmin(app);
  const mod = await scoped(admin, { scopes: ['moderate'] });
  assert.equal((await app.api.get('/api/admin/moderation', { token: mod.token })).status, 200);
  const all = await token(admin, {});
  assert.deepEqual(all.body.scopes, ['upload', 'vote', 'read', 'manage', 'moderate']);
  assert.equal((await app.api.get('/api/admin/moderation', { token: all.body.token })).status, 200);
  const uploader = await scoped(admin, { scopes: ['upload', 'read'] });
  assertScope(await app.api.get('/api/admin/moderation', { token: uploader.token }), 'moderate');
  assertScope(await app.api.get('/api/admin/users', { token: uploader.token }), 'moderate');
  // The modlog is public: without `moderate` the admin's token reads the public view (no moderator named).
  const log = await app.api.get('/api/modlog', { token: uploader.token });
  assert.equal(log.status, 200);
});

test('a token with `manage` mints no token beyond its own scopes and expiry', async () => {
  const owner = await registerUser(app.api);
  const manager = await scoped(owner, { scopes: ['manage', 'upload'], expires_in: '7d' });
  const wider = await token(owner, { scopes: ['vote'] }, manager.token);
  assert.equal(wider.status, 403);
  assert.equal(wider.body.error, 'forbidden');
  const longer = await token(owner, { expires_in: '30d' }, manager.token);
  assert.equal(longer.status, 403);
  assert.match(longer.body.message, /outlive/);
  const child = await token(owner, {}, manager.token);
  assert.equal(child.status, 201, child.text);
  assert.deepEqual(child.body.scopes, ['upload', 'manage']);
  const list = await app.api.get('/api/auth/tokens', { token: owner.token });
  const parent = list.body.tokens.find((t: { id: string }) => t.id === manager.id);
  assert.equal(child.body.expires_at, parent.expires_at, 'it expires with the token that made it');
});

test('JWTs and the cookie have every scope', async () => {
  const owner = await registerUser(app.api);
  assert.equal((await app.api.get('/api/profile', { token: owner.token })).status, 200);
  const r = await app.api.get('/api/profile', { headers: { cookie: `auth-token=${owner.token}` } });
  assert.equal(r.status, 200);
});

test('the document names the scope of every authenticated operation', async () => {
  const doc = (await app.api.get('/api/openapi.json')).body;
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, Record<string, unknown>>>)) {
    for (const [method, op] of Object.entries(ops)) {
      const security = op.security as Array<Record<string, string[]>>;
      const authenticated = security.some((s) => Object.keys(s).length > 0);
      if (!authenticated) continue;
      const scope = op['x-scope'] as string | undefined;
      assert.ok(scope, `${method} ${path} has an x-scope`);
      assert.deepEqual(
        security.find((s) => 'apiToken' in s),
        { apiToken: [scope] },
        `${method} ${path}`,
      );
      if (path.startsWith('/api/admin/')) assert.equal(scope, 'moderate', `${method} ${path}`);
    }
  }
  assert.equal(doc.paths['/api/vote'].post['x-scope'], 'vote');
  assert.equal(doc.paths['/api/v1/upload'].post['x-scope'], 'upload');
  assert.equal(doc.paths['/api/uploads/check'].post['x-scope'], 'upload');
  assert.equal(doc.paths['/api/profile'].get['x-scope'], 'read');
  assert.equal(doc.paths['/api/upload/{id}/privacy'].patch['x-scope'], 'manage');
  assert.ok(
    doc.paths['/api/vote'].post.responses['403'].content['application/json'].schema.properties.error.enum.includes(
      'insufficient_scope',
    ),
  );
});

test(
  'the profile’s token form asks for scopes and an expiry, the list shows them; axe-clean at 375 px',
  { skip: noBrowser },
  async () => {
    const owner = await registerUser(app.api);
    await scoped(owner, { scopes: ['vote'], expires_in: '30d' });
    const browser = await launchBrowser();
    try {
      const context = await browser.newContext({ viewport: { width: 375, height: 740 } });
      await context.addCookies([{ name: 'auth-token', value: owner.token, url: app.url }]);
      const w = await watchedPage(context, app.url);
      await openPage(w.page, `${app.url}/profile`);
      const page = w.page;
      assert.equal(await page.locator('#token-scope-moderate').count(), 0, 'moderate is for admins only');
      assert.match(await page.locator('table.tokens tbody').innerText(), /vote\s+.*\d/);
      await page.fill('#token-name', 'uploader');
      for (const scope of ['vote', 'read', 'manage']) await page.uncheck(`#token-scope-${scope}`);
      await page.selectOption('#token-expiry', '90d');
      await page.click('form.inline button[type=submit]');
      await page.waitForSelector('#new-token');
      const secret = await page.inputValue('#new-token');
      assertScope(await app.api.get('/api/me', { token: secret }), 'read');
      const list = (await app.api.get('/api/auth/tokens', { token: owner.token })).body.tokens;
      const made = list.find((t: { name: string }) => t.name === 'uploader');
      assert.deepEqual(made.scopes, ['upload']);
      assert.ok(Date.parse(made.expires_at) > Date.now() + 89 * 86_400_000);
      await page.waitForFunction("document.querySelectorAll('table.tokens tbody tr').length === 2");
      await page.evaluate(axeSource);
      const result = await page.evaluate<{ violations: Array<{ id: string; impact: string }> }>(
        "axe.run(document, { resultTypes: ['violations'] })",
      );
      assert.deepEqual(
        result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id),
        [],
      );
      const width = await page.evaluate<number>('document.scrollingElement.scrollWidth');
      assert.ok(width <= 375, `${width} px wide at 375 px`);
      assert.deepEqual(w.take(), []);
      await context.close();
    } finally {
      await browser.close();
    }
  },
);
