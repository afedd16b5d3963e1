/**
 * Provenance through HTTP (issue 50, API.md "Provenance"): the record's `provenance` and `ai_label`, the provenance
 * endpoint under the record's visibility rules, the owner's own label, and the `ai=exclude|only` filter on every
 * listing (sorts, user, tag, Atom), its cursors bound to it and its cached pages fresh after a label changes.
 * What markers in real files do under each AI_POLICY is in ai-policy.test.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { uploadImage, uploadLink } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';

let app: TestApp;
let owner: TestUser;
let other: TestUser;
let admin: TestUser;
const TAG = `prov${randomBytes(3).toString('hex')}`;
/** Link uploads by `owner` tagged TAG: the first LABELLED get the owner's label. */
const ids: string[] = [];
const LABELLED = 5;

const label = (u: TestUser, id: string, value: unknown) =>
  app.api.patch(`/api/upload/${id}`, { ai_generated: value }, { token: u.token });

before(async () => {
  app = await startApp();
  owner = await registerUser(app.api, `prov_owner_${randomBytes(2).toString('hex')}`);
  other = await registerUser(app.api);
  admin = await registerAdmin(app);
  for (let i = 0; i < 12; i++) ids.push(await uploadLink(app.api, owner, { tags: TAG, description: `p${i}` }));
  for (const id of ids.slice(0, LABELLED)) assert.equal((await label(owner, id, true)).status, 200);
});
after(() => app.close());

describe('the record and the provenance endpoint', () => {
  test('an image without markers: provenance all null (not false), no label; the endpoint says so', async () => {
    const r = await uploadImage(app.api, owner.token, await photoJpeg({ seed: 5001 }));
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(r.body.provenance, { ai_generated: null, source_type: null, c2pa: null });
    assert.equal(r.body.ai_label, null);
    const p = await app.api.get(`/api/upload/${r.body.id}/provenance`);
    assert.equal(p.status, 200, p.text);
    assert.deepEqual(p.body, {
      upload_id: r.body.id,
      ai_label: null,
      ai_generated: null,
      source_type: null,
      c2pa: null,
    });
  });

  test('a link: provenance null on the record, 404 from the endpoint; an unknown id 404', async () => {
    const rec = await app.api.get(`/api/upload/${ids[6]}`);
    assert.equal(rec.body.provenance, null);
    const p = await app.api.get(`/api/upload/${ids[6]}/provenance`);
    assert.equal(p.status, 404);
    assert.equal(p.body.error, 'not_found');
    assert.match(p.body.message, /is a link/);
    const missing = await app.api.get('/api/upload/00000000-0000-4000-8000-000000000000/provenance');
    assert.equal(missing.status, 404);
  });

  test('visibility as GET /api/upload/{id}: private reachable, held 404 but to its owner, removed 410', async () => {
    const mk = async (seed: number, fields: Record<string, string> = {}) => {
      const r = await uploadImage(app.api, owner.token, await photoJpeg({ seed }), fields);
      assert.equal(r.status, 201, r.text);
      return r.body.id as string;
    };
    const priv = await mk(5002, { is_private: 'true' });
    assert.equal((await app.api.get(`/api/upload/${priv}/provenance`)).status, 200);
    const held = await mk(5003);
    const hold = await app.api.post(
      `/api/admin/uploads/${held}/moderation`,
      { action: 'hold', reason: 'check' },
      { token: admin.token },
    );
    assert.equal(hold.status, 200, hold.text);
    assert.equal((await app.api.get(`/api/upload/${held}/provenance`)).status, 404);
    assert.equal((await app.api.get(`/api/upload/${held}/provenance`, { token: other.token })).status, 404);
    assert.equal((await app.api.get(`/api/upload/${held}/provenance`, { token: owner.token })).status, 200);
    const removed = await mk(5004);
    await app.api.post(`/api/admin/uploads/${removed}/moderation`, { action: 'remove' }, { token: admin.token });
    const gone = await app.api.get(`/api/upload/${removed}/provenance`);
    assert.equal(gone.status, 410);
    assert.equal(gone.body.error, 'removed');
  });
});

describe("the owner's label", () => {
  test('true labels it (owner), false takes that off; others 403; a bad value 400 naming the field', async () => {
    // Suites run side by side: this upload's owner has no other part in the listings' tests.
    const mine = await registerUser(app.api);
    const id = await uploadLink(app.api, mine);
    const on = await label(mine, id, true);
    assert.equal(on.status, 200, on.text);
    assert.equal(on.body.ai_label, 'owner');
    assert.equal((await app.api.get(`/api/upload/${id}`)).body.ai_label, 'owner');
    const stranger = await label(other, id, false);
    assert.equal(stranger.status, 403);
    assert.equal(stranger.body.error, 'forbidden');
    for (const bad of ['yes', null, 1]) {
      const r = await label(mine, id, bad);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error, 'invalid_request');
      assert.match(r.body.message, /ai_generated/);
    }
    const off = await label(mine, id, false);
    assert.equal(off.status, 200, off.text);
    assert.equal(off.body.ai_label, null);
    // An admin may label too (owner or admin, as privacy).
    assert.equal((await label(admin, id, true)).body.ai_label, 'owner');
    const anon = await app.api.patch(`/api/upload/${id}`, { ai_generated: true });
    assert.equal(anon.status, 401);
  });
});

describe('listings take ai=exclude|only', () => {
  const labelled = () => new Set(ids.slice(0, LABELLED));

  test('every sort, by tag and by user: only lists the labelled uploads, exclude the others', async () => {
    for (const sort of ['new', 'top', 'hot', 'best']) {
      for (const filter of [`tag=${TAG}`, `user=${owner.username}`, `tag=${TAG}&user=${owner.username}`]) {
        const only = await app.api.get(`/api/uploads?sort=${sort}&${filter}&ai=only&limit=50`);
        assert.equal(only.status, 200, only.text);
        assert.deepEqual(new Set(only.body.uploads.map((u: { id: string }) => u.id)), labelled(), `${sort} ${filter}`);
        for (const u of only.body.uploads) assert.equal(u.ai_label, 'owner');
        const excl = await app.api.get(`/api/uploads?sort=${sort}&${filter}&ai=exclude&limit=50`);
        const shown = excl.body.uploads.map((u: { id: string }) => u.id) as string[];
        assert.ok(shown.length >= ids.length - LABELLED, `${sort} ${filter}`);
        for (const id of shown) assert.ok(!labelled().has(id), `${sort} ${filter}: ${id} is labelled`);
      }
    }
    // Without a filter: everything (the labelled uploads are there).
    const all = await app.api.get(`/api/uploads?tag=${TAG}&limit=50`);
    assert.equal(all.body.uploads.length, ids.length);
  });

  test('another value: 400 invalid_request naming ai, on the API, the Atom feed and the feed page', async () => {
    for (const path of [`/api/uploads?ai=yes`, `/feed.atom?ai=maybe`]) {
      const r = await app.api.get(path);
      assert.equal(r.status, 400, `${path}: ${r.text}`);
      assert.equal(r.body.error, 'invalid_request');
      assert.match(r.body.message, /\bai\b/);
    }
  });

  test('cursors page through ai=only to the end and belong to it: another ai filter is invalid_cursor', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let first: string | null = null;
    do {
      const q: string = `/api/uploads?tag=${TAG}&ai=only&sort=top&limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const r = await app.api.get(q);
      assert.equal(r.status, 200, r.text);
      seen.push(...r.body.uploads.map((u: { id: string }) => u.id));
      cursor = r.body.next_cursor;
      first ??= cursor;
    } while (cursor);
    assert.deepEqual(new Set(seen), labelled());
    assert.equal(seen.length, LABELLED);
    for (const ai of ['', '&ai=exclude']) {
      const r = await app.api.get(`/api/uploads?tag=${TAG}&sort=top&limit=2${ai}&cursor=${first}`);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error, 'invalid_cursor');
    }
  });

  test('a label set or taken off shows in the very next cached page (ai=only and ai=exclude)', async () => {
    const mine = await registerUser(app.api);
    const url = (ai: string) => `/api/uploads?user=${mine.username}&ai=${ai}&limit=50`;
    const has = async (ai: string, id: string) =>
      ((await app.api.get(url(ai))).body.uploads as Array<{ id: string }>).some((u) => u.id === id);
    const id = await uploadLink(app.api, mine);
    assert.deepEqual([await has('only', id), await has('exclude', id)], [false, true]);
    assert.equal((await label(mine, id, true)).status, 200);
    assert.deepEqual([await has('only', id), await has('exclude', id)], [true, false]);
    assert.equal((await label(mine, id, false)).status, 200);
    assert.deepEqual([await has('only', id), await has('exclude', id)], [false, true]);
  });

  test('/feed.atom takes ai: its entries are the listing, its title says so', async () => {
    const r = await app.api.get(`/feed.atom?tag=${TAG}&ai=only`);
    assert.equal(r.status, 200, r.text);
    assert.match(r.text, /<title type="text">pixvote — new uploads made with AI tagged /);
    const entries = [...r.text.matchAll(/<id>[^<]*\/uploads\/([0-9a-f-]{36})<\/id>/g)].map((m) => m[1]);
    assert.deepEqual(new Set(entries), labelled());
    const without = await app.api.get(`/feed.atom?tag=${TAG}&ai=exclude`);
    for (const id of labelled()) assert.ok(!without.text.includes(id));
  });

  test('the feed page (no JavaScript needed) lists by ai and links its Atom feed with it', async () => {
    const r = await app.api.get(`/?tag=${TAG}&ai=only`, { unchecked: 'an HTML page' });
    assert.equal(r.status, 200);
    assert.match(r.text, /href="\/feed\.atom\?sort=new&amp;tag=[^"]*&amp;ai=only"/);
    for (const id of labelled()) assert.ok(r.text.includes(`/uploads/${id}`), id);
    assert.ok(!r.text.includes(`/uploads/${ids[LABELLED]}"`));
    assert.match(r.text, /Made with AI \(marked by the uploader\)/);
  });
});
