/**
 * Keyset pages through HTTP (issue 29, API.md Listing and feeds): every listing pages on with `next_cursor` to the
 * end while votes move ranks and new uploads arrive, and shows each upload at most once; every upload whose rank
 * did not move exactly once. Number pages end at 10 000 rows (page_too_deep), a foreign cursor is invalid_cursor,
 * and a user's own uploads page on past the profile's first twelve.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startApp, type TestApp } from '../support/app.ts';
import { registerUser, type TestUser } from '../support/users.ts';
import { uploadFields } from '../support/uploads.ts';
import { lcgRandom } from '../support/hashes.ts';

let app: TestApp;
let owner: TestUser;
let voters: TestUser[];
/** Visible uploads made before the traversals: id → tags. */
const seeded = new Map<string, string[]>();
const privateIds: string[] = [];
const TAG = 'walk';

const link = (u: TestUser, fields: Record<string, string> = {}) =>
  uploadFields(app.api, u.token, {
    upload_type: 'link',
    external_url: `https://example.com/${randomBytes(4).toString('hex')}`,
    ...fields,
  });
const vote = (u: TestUser, id: string, value: string) =>
  app.api.post('/api/vote', { uploadId: id, vote: value }, { token: u.token });

before(async () => {
  app = await startApp();
  owner = await registerUser(app.api, 'cursor_owner');
  voters = await Promise.all(Array.from({ length: 4 }, () => registerUser(app.api)));
  const random = lcgRandom(29);
  for (let i = 0; i < 26; i++) {
    const tags = i % 3 ? [TAG] : ['other'];
    const r = await link(owner, { tags: tags.join(','), description: `c${i}` });
    assert.equal(r.status, 201);
    seeded.set(r.body.id, tags);
  }
  for (let i = 0; i < 3; i++) {
    const r = await link(owner, { tags: TAG, is_private: 'true' });
    privateIds.push(r.body.id);
  }
  // Ranks that differ and ties (same score), so every order's tie-breaks are walked too.
  for (const id of seeded.keys()) {
    for (const v of voters) {
      const x = random();
      if (x < 0.35) await vote(v, id, 'fucks');
      else if (x < 0.5) await vote(v, id, 'does_not_fuck');
    }
  }
});
after(() => app.close());

type Page = { uploads: Array<{ id: string }>; page: number; has_more: boolean; next_cursor: string | null };

describe('GET /api/uploads by cursor, while votes move ranks', () => {
  for (const sort of ['new', 'top', 'hot', 'best']) {
    for (const tag of [null, TAG]) {
      const name = `sort=${sort}${tag ? `, tag=${tag}` : ''}`;
      test(`${name}: to the end, each upload at most once, the unmoved exactly once`, async () => {
        const filter = `sort=${sort}&limit=4${tag ? `&tag=${tag}` : ''}`;
        const random = lcgRandom(sort.length * 7 + (tag ? 1 : 0));
        const expected = [...seeded].filter(([, tags]) => !tag || tags.includes(tag)).map(([id]) => id);
        const moved = new Set<string>();
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const r: { status: number; body: unknown } = await app.api.get(
            `/api/uploads?${filter}${cursor ? `&cursor=${cursor}` : ''}`,
          );
          assert.equal(r.status, 200, JSON.stringify(r.body));
          const page = r.body as Page;
          pages++;
          assert.equal(page.page, pages, 'the page number counts on');
          assert.equal(page.has_more, page.next_cursor !== null);
          seen.push(...page.uploads.map((u) => u.id));
          cursor = page.next_cursor;
          // Between pages: votes move two uploads (one seen, one not yet, when there is one), a new one arrives.
          const notSeen = expected.filter((id) => !seen.includes(id));
          for (const id of [seen[Math.floor(random() * seen.length)], notSeen[Math.floor(random() * notSeen.length)]]) {
            if (!id) continue;
            const v = voters[Math.floor(random() * voters.length)]!;
            const r2 = await vote(v, id, random() < 0.5 ? 'fucks' : 'does_not_fuck');
            assert.equal(r2.status, 200);
            moved.add(id);
          }
          assert.equal((await link(owner, { tags: tag ?? 'other' })).status, 201);
        } while (cursor && pages < 40);
        assert.equal(cursor, null, 'the traversal ends');
        assert.equal(new Set(seen).size, seen.length, `no upload twice: ${seen.join(' ')}`);
        for (const id of privateIds) assert.ok(!seen.includes(id), 'private uploads are never listed');
        for (const id of expected) {
          if (sort === 'new' || !moved.has(id)) assert.ok(seen.includes(id), `${id} (rank unmoved) is listed`);
        }
      });
    }
  }

  test('type=link and user= filters page on too; page 1 by number and by cursor agree', async () => {
    for (const q of ['type=link&sort=top', `user=${owner.username}&sort=best`, 'type=link&sort=new']) {
      const one = (await app.api.get(`/api/uploads?${q}&limit=50`)).body as Page;
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: Page = (await app.api.get(`/api/uploads?${q}&limit=7${cursor ? `&cursor=${cursor}` : ''}`)).body;
        seen.push(...page.uploads.map((u) => u.id));
        cursor = page.next_cursor;
      } while (cursor);
      assert.deepEqual(
        seen.slice(0, 50),
        one.uploads.map((u) => u.id),
        q,
      );
    }
  });
});

describe('cursor and page errors', () => {
  test('a foreign or malformed cursor is 400 invalid_cursor; past 10 000 rows, 400 page_too_deep', async () => {
    const first = (await app.api.get('/api/uploads?sort=top&limit=3')).body as Page;
    assert.ok(first.next_cursor);
    for (const q of [
      `sort=new&limit=3&cursor=${first.next_cursor}`,
      `sort=top&limit=4&cursor=${first.next_cursor}`,
      `sort=top&limit=3&tag=${TAG}&cursor=${first.next_cursor}`,
      'cursor=bm90IGEgY3Vyc29y',
      'cursor=%E2%9C%93',
    ]) {
      const r = await app.api.get(`/api/uploads?${q}`);
      assert.equal(r.status, 400, q);
      assert.equal(r.body.error, 'invalid_cursor', q);
    }
    assert.equal((await app.api.get('/api/uploads?page=201&limit=50')).status, 200);
    const deep = await app.api.get('/api/uploads?page=202&limit=50');
    assert.equal(deep.status, 400);
    assert.equal(deep.body.error, 'page_too_deep');
    assert.match(deep.body.message, /cursor/);
  });
});

describe('GET /api/profile/uploads', () => {
  test("the profile's first twelve, then the rest by cursor: private ones too, each once, newest first", async () => {
    const profile = await app.api.get('/api/profile', { token: owner.token });
    assert.equal(profile.status, 200);
    assert.equal(profile.body.uploads.length, 12);
    const seen: string[] = profile.body.uploads.map((u: { id: string }) => u.id);
    let cursor: string | null = profile.body.next_cursor;
    while (cursor) {
      const r = await app.api.get(`/api/profile/uploads?cursor=${cursor}`, { token: owner.token });
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('cache-control'), 'private, max-age=30');
      seen.push(...r.body.uploads.map((u: { id: string }) => u.id));
      cursor = r.body.next_cursor;
    }
    assert.equal(new Set(seen).size, seen.length);
    assert.equal(seen.length, profile.body.stats.uploads);
    for (const id of [...seeded.keys(), ...privateIds]) assert.ok(seen.includes(id));
    const other = await registerUser(app.api);
    const foreign = await app.api.get(`/api/profile/uploads?cursor=${profile.body.next_cursor}`, {
      token: other.token,
    });
    assert.equal(foreign.status, 400);
    assert.equal(foreign.body.error, 'invalid_cursor');
    assert.equal((await app.api.get('/api/profile/uploads')).status, 401);
  });
});
