/**
 * Free-text fields through the API, on the run's database: a limit in characters counts Unicode code points (API.md:
 * "description is 612 characters; the limit is 500"), whatever the field (an upload's description, a webhook's, a
 * report's note, a token's name), so text in any script or made of emoji gets the same room; and a lone UTF-16
 * surrogate (`"\ud800"` in JSON: valid JSON, no character) is refused with 400 naming the field and nothing stored,
 * where it used to be written as U+FFFD (a different text than the one sent).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../support/app.ts';
import { registerUser, type TestUser } from '../support/users.ts';
import { countUploads, uploadFields } from '../support/uploads.ts';

let app: TestApp;
let owner: TestUser;
let reporter: TestUser;

before(async () => {
  app = await startApp();
  owner = await registerUser(app.api);
  reporter = await registerUser(app.api);
});
after(() => app.close());

/** Astral characters (two UTF-16 units each), one character apiece: 🐈 (U+1F408), 𝒜 (U+1D49C), 𠀀 (U+20000). */
const astral = (n: number) => Array.from({ length: n }, (_, i) => ['🐈', '𝒜', '𠀀'][i % 3]).join('');

const link = () => `https://example.com/${Math.random()}`;

function refused(r: { status: number; body: { error: string; message: string } }, field: string, what: RegExp): void {
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.equal(r.body.error, 'invalid_request');
  assert.match(r.body.message, new RegExp(`^${field}\\b`));
  assert.match(r.body.message, what);
}

describe('an upload description', () => {
  test('500 astral characters (1 000 UTF-16 units) are within the limit and come back as sent', async () => {
    const description = astral(500);
    const r = await uploadFields(app.api, owner.token, { upload_type: 'link', external_url: link(), description });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal((await app.api.get(`/api/upload/${r.body.id}`)).body.description, description);
  });

  test('501 of them → 400 counting characters, nothing stored', async () => {
    const before = await countUploads(app);
    const r = await app.api.post(
      '/api/upload',
      { upload_type: 'link', external_url: link(), description: astral(501) },
      { token: owner.token },
    );
    refused(r, 'description', /^description is 501 characters; the limit is 500$/);
    assert.equal(await countUploads(app), before);
  });

  test('a lone surrogate, high or low, anywhere → 400 naming the field and where, nothing stored', async () => {
    const before = await countUploads(app);
    for (const description of ['\ud800', 'cat \udc00', `${astral(3)}\udbff!`, '\udfff\ud800']) {
      const r = await app.api.post(
        '/api/upload',
        { upload_type: 'link', external_url: link(), description },
        { token: owner.token },
      );
      refused(r, 'description', /lone UTF-16 surrogate \(\\u[0-9a-f]{4} at character \d+\)/);
    }
    const at = await app.api.post(
      '/api/upload',
      { upload_type: 'link', external_url: link(), description: `${astral(3)}\udbff!` },
      { token: owner.token },
    );
    assert.match(at.body.message, /\\udbff at character 4\)/);
    assert.equal(await countUploads(app), before);
  });
});

test('a webhook description counts characters and refuses lone surrogates, creating nothing', async () => {
  const create = (description: string) =>
    app.api.post(
      '/api/webhooks',
      { url: 'https://hooks.example.com/pixvote', events: ['upload.processed'], description },
      { token: owner.token },
    );
  const ok = await create(astral(500));
  assert.equal(ok.status, 201, JSON.stringify(ok.body));
  assert.equal(ok.body.description, astral(500));
  refused(await create(astral(501)), 'description', /^description is 501 characters; the limit is 500$/);
  refused(await create('hook \ud83d'), 'description', /lone UTF-16 surrogate \(\\ud83d at character 6\)/);
  const patched = await app.api.patch(
    `/api/webhooks/${ok.body.id}`,
    { description: 'x\udc00' },
    { token: owner.token },
  );
  refused(patched, 'description', /lone UTF-16 surrogate/);
  const list = await app.api.get('/api/webhooks', { token: owner.token });
  assert.deepEqual(
    list.body.webhooks.map((w: { description: string }) => w.description),
    [astral(500)],
  );
});

test('a report note and a token name: the same rule', async () => {
  const up = await uploadFields(app.api, owner.token, { upload_type: 'link', external_url: link() });
  assert.equal(up.status, 201);
  const report = (note: string) =>
    app.api.post(`/api/upload/${up.body.id}/report`, { reason: 'other', note }, { token: reporter.token });
  refused(await report(astral(501)), 'note', /^note is 501 characters; the limit is 500$/);
  refused(await report('\ud800'), 'note', /lone UTF-16 surrogate/);
  const noted = await report(astral(500));
  assert.ok(noted.status === 201 || noted.status === 200, JSON.stringify(noted.body));

  const token = (name: string) => app.api.post('/api/auth/tokens/generate', { name }, { token: owner.token });
  const before = (await app.api.get('/api/auth/tokens', { token: owner.token })).body.tokens.length;
  refused(await token(astral(101)), 'name', /^name is 101 characters; the limit is 100$/);
  refused(await token('ci \udc00'), 'name', /lone UTF-16 surrogate/);
  assert.equal((await app.api.get('/api/auth/tokens', { token: owner.token })).body.tokens.length, before);
  const named = await token(astral(100));
  assert.equal(named.status, 201, JSON.stringify(named.body));
  assert.equal(named.body.name, astral(100));
});

test('a password: a lone surrogate is refused at registration (it would be hashed as U+FFFD)', async () => {
  const r = await app.api.post('/api/auth', {
    action: 'register',
    email: `lone-${Date.now()}@example.com`,
    username: `lone_${Date.now() % 1e9}`,
    password: 'correct horse \ud800',
  });
  refused(r, 'password', /lone UTF-16 surrogate/);
  const short = await app.api.post('/api/auth', {
    action: 'register',
    email: `short-${Date.now()}@example.com`,
    username: `short_${Date.now() % 1e9}`,
    password: astral(7),
  });
  refused(short, 'password', /at least 8 characters/);
});
