import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../support/app.ts';
import { registerUser, type TestUser } from '../support/users.ts';
import { uploadFields } from '../support/uploads.ts';

let app: TestApp;
let owner: TestUser;
let other: TestUser;
let admin: TestUser;

before(async () => {
  app = await startApp({ ADMIN_USERNAMES: 'tag_admin' });
  owner = await registerUser(app.api);
  other = await registerUser(app.api);
  admin = await registerUser(app.api, 'tag_admin');
});
after(() => app.close());

async function upload(tags = ''): Promise<string> {
  const r = await uploadFields(app.api, owner.token, { upload_type: 'link', external_url: `https://example.com/${Math.random()}`, tags });
  assert.equal(r.status, 201);
  return r.body.id;
}

const names = (tags: Array<{ name: string }>) => tags.map((t) => t.name);

describe('GET /api/uploads/{id}/tags', () => {
  test('needs no authentication; 404 for an unknown upload', async () => {
    const id = await upload('alpha, Beta');
    const r = await app.api.get(`/api/uploads/${id}/tags`);
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body), ['tags']);
    assert.deepEqual(r.body.tags.map((t: { name: string; slug: string }) => [t.name, t.slug]), [['alpha', 'alpha'], ['beta', 'beta']]);
    assert.ok(r.body.tags.every((t: { id: string }) => typeof t.id === 'string'));
    assert.equal((await app.api.get('/api/uploads/00000000-0000-4000-8000-000000000000/tags')).status, 404);
  });
});

describe('POST /api/uploads/{id}/tags', () => {
  test('normalizes (trim, lowercase, collapse spaces), adds, and ignores tags already there', async () => {
    const id = await upload('cats');
    const r = await app.api.post(`/api/uploads/${id}/tags`, { tags: ['  Cute   Cats ', 'CATS', 'snake_case', 'kebab-case'] }, { token: owner.token });
    assert.equal(r.status, 200);
    assert.equal(r.body.success, true);
    assert.deepEqual(names(r.body.tags), ['cats', 'cute cats', 'kebab-case', 'snake_case']);
    assert.equal(r.body.tags.find((t: { name: string }) => t.name === 'cute cats').slug, 'cute-cats');
    assert.deepEqual(names((await app.api.get(`/api/uploads/${id}/tags`)).body.tags), names(r.body.tags));
  });

  test('more than 10 after adding → 400 too_many_tags and nothing is added', async () => {
    const id = await upload('t1,t2,t3,t4,t5,t6,t7,t8');
    const r = await app.api.post(`/api/uploads/${id}/tags`, { tags: ['t9', 't10', 't11'] }, { token: owner.token });
    assert.equal(r.status, 400);
    assert.equal(r.body.error, 'too_many_tags');
    assert.match(r.body.message, /11 tags; the limit is 10/);
    assert.equal((await app.api.get(`/api/uploads/${id}/tags`)).body.tags.length, 8);
    const ok = await app.api.post(`/api/uploads/${id}/tags`, { tags: ['t9', 't10', 't1'] }, { token: owner.token });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.tags.length, 10);
  });

  test('concurrent adds cannot pass the limit together', async () => {
    const id = await upload('a1,a2,a3,a4,a5,a6');
    const replies = await Promise.all(
      ['x1', 'x2', 'x3', 'x4', 'x5', 'x6'].map((t) => app.api.post(`/api/uploads/${id}/tags`, { tags: [t] }, { token: owner.token })),
    );
    assert.equal(replies.filter((r) => r.status === 200).length, 4);
    assert.equal(replies.filter((r) => r.status === 400).length, 2);
    assert.equal((await app.api.get(`/api/uploads/${id}/tags`)).body.tags.length, 10);
  });

  test('invalid names → 400 invalid_tag naming the tag; a non-array → 400 invalid_request', async () => {
    const id = await upload();
    for (const bad of [['ok', '<b>'], ['   '], ['x'.repeat(33)], ['semi;colon']]) {
      const r = await app.api.post(`/api/uploads/${id}/tags`, { tags: bad }, { token: owner.token });
      assert.equal(r.status, 400, JSON.stringify(bad));
      assert.equal(r.body.error, 'invalid_tag');
    }
    assert.equal((await app.api.get(`/api/uploads/${id}/tags`)).body.tags.length, 0);
    const notArray = await app.api.post(`/api/uploads/${id}/tags`, { tags: 'cats' }, { token: owner.token });
    assert.equal(notArray.status, 400);
    assert.equal(notArray.body.error, 'invalid_request');
  });

  test('401 without a token, 403 for another user, 404 for an unknown upload; admins may', async () => {
    const id = await upload();
    assert.equal((await app.api.post(`/api/uploads/${id}/tags`, { tags: ['x'] })).status, 401);
    const forbidden = await app.api.post(`/api/uploads/${id}/tags`, { tags: ['x'] }, { token: other.token });
    assert.equal(forbidden.status, 403);
    assert.equal(forbidden.body.error, 'forbidden');
    assert.equal((await app.api.post('/api/uploads/00000000-0000-4000-8000-000000000000/tags', { tags: ['x'] }, { token: owner.token })).status, 404);
    const byAdmin = await app.api.post(`/api/uploads/${id}/tags`, { tags: ['curated'] }, { token: admin.token });
    assert.equal(byAdmin.status, 200);
    assert.deepEqual(names(byAdmin.body.tags), ['curated']);
  });
});

describe('DELETE /api/uploads/{id}/tags/{slug}', () => {
  test('removes one tag (owner or admin); 404 when the upload does not carry it', async () => {
    const id = await upload('keep me, drop me');
    assert.equal((await app.api.del(`/api/uploads/${id}/tags/drop-me`, { token: other.token })).status, 403);
    const r = await app.api.del(`/api/uploads/${id}/tags/drop-me`, { token: owner.token });
    assert.equal(r.status, 200);
    assert.deepEqual(names(r.body.tags), ['keep me']);
    assert.equal((await app.api.del(`/api/uploads/${id}/tags/drop-me`, { token: owner.token })).status, 404);
  });
});

test('GET /api/tags?q= suggests by prefix, most used first', async () => {
  await upload('zebra, zebrafish');
  await upload('zebra');
  await upload('zebra, zulu');
  const r = await app.api.get('/api/tags?q=ZE');
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.tags.map((t: { name: string; uploads: number }) => [t.name, t.uploads]), [['zebra', 3], ['zebrafish', 1]]);
  const escaped = await app.api.get('/api/tags?q=%25');
  assert.deepEqual(escaped.body.tags, [], 'a % in the prefix is matched literally');
});
