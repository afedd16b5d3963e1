import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { countUploads, uploadFields } from '../support/uploads.ts';
import type { Reply } from '../support/http.ts';

let app: TestApp;
let owner: TestUser;
let other: TestUser;
let admin: TestUser;

before(async () => {
  app = await startApp();
  owner = await registerUser(app.api);
  other = await registerUser(app.api);
  admin = await registerAdmin(app, 'tag_admin');
});
after(() => app.close());

async function upload(tags = '', fields: Record<string, string> = {}): Promise<string> {
  const r = await uploadFields(app.api, owner.token, {
    upload_type: 'link',
    external_url: `https://example.com/${Math.random()}`,
    tags,
    ...fields,
  });
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
    assert.deepEqual(
      r.body.tags.map((t: { name: string; slug: string }) => [t.name, t.slug]),
      [
        ['alpha', 'alpha'],
        ['beta', 'beta'],
      ],
    );
    assert.ok(r.body.tags.every((t: { id: string }) => typeof t.id === 'string'));
    assert.equal((await app.api.get('/api/uploads/00000000-0000-4000-8000-000000000000/tags')).status, 404);
  });
});

describe('POST /api/uploads/{id}/tags', () => {
  test('normalizes (trim, lowercase, collapse spaces), adds, and ignores tags already there', async () => {
    const id = await upload('cats');
    const r = await app.api.post(
      `/api/uploads/${id}/tags`,
      { tags: ['  Cute   Cats ', 'CATS', 'snake_case', 'kebab-case'] },
      { token: owner.token },
    );
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
      ['x1', 'x2', 'x3', 'x4', 'x5', 'x6'].map((t) =>
        app.api.post(`/api/uploads/${id}/tags`, { tags: [t] }, { token: owner.token }),
      ),
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
    assert.equal(
      (
        await app.api.post(
          '/api/uploads/00000000-0000-4000-8000-000000000000/tags',
          { tags: ['x'] },
          { token: owner.token },
        )
      ).status,
      404,
    );
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
  assert.deepEqual(
    r.body.tags.map((t: { name: string; uploads: number }) => [t.name, t.uploads]),
    [
      ['zebra', 3],
      ['zebrafish', 1],
    ],
  );
  const escaped = await app.api.get('/api/tags?q=%25');
  assert.deepEqual(escaped.body.tags, [], 'a % in the prefix is matched literally');
});

test('GET /api/tags pages on by cursor: every tag once, in order, to the end; a foreign cursor is 400', async () => {
  // 7 tags "pg…": pgtag0 on 3 uploads, pgtag1 on 2, the rest on 1 (ties by name).
  await upload('pgtag0, pgtag1, pgtag2, pgtag3, pgtag4');
  await upload('pgtag0, pgtag1, pgtag5');
  await upload('pgtag0, pgtag6');
  const seen: Array<[string, number]> = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const r: Reply<{ tags: Array<{ name: string; uploads: number }>; next_cursor: string | null }> = await app.api.get(
      `/api/tags?q=pg&limit=3${cursor ? `&cursor=${cursor}` : ''}`,
    );
    assert.equal(r.status, 200);
    assert.ok(r.body.tags.length <= 3);
    seen.push(...r.body.tags.map((t): [string, number] => [t.name, t.uploads]));
    cursor = r.body.next_cursor;
    pages++;
  } while (cursor && pages < 10);
  assert.deepEqual(seen, [
    ['pgtag0', 3],
    ['pgtag1', 2],
    ['pgtag2', 1],
    ['pgtag3', 1],
    ['pgtag4', 1],
    ['pgtag5', 1],
    ['pgtag6', 1],
  ]);
  assert.equal(pages, 3);
  const first = await app.api.get('/api/tags?q=pg&limit=3');
  const foreign = await app.api.get(`/api/tags?q=pg&limit=4&cursor=${first.body.next_cursor}`);
  assert.equal(foreign.status, 400);
  assert.equal(foreign.body.error, 'invalid_cursor');
  const feedCursor = await app.api.get(`/api/uploads?limit=3&cursor=${first.body.next_cursor}`);
  assert.equal(feedCursor.body.error, 'invalid_cursor', "a tag search's cursor is not a feed's");
});

/** GET /api/tags?q= as [name, uploads] pairs. */
async function suggest(q: string, token?: string): Promise<Array<[string, number]>> {
  const r = await app.api.get(`/api/tags?q=${encodeURIComponent(q)}`, token ? { token } : {});
  assert.equal(r.status, 200);
  return r.body.tags.map((t: { name: string; uploads: number }) => [t.name, t.uploads]);
}

describe('tags see only what a listing shows (public uploads, for everyone)', () => {
  test('GET /api/tags lists no tag that only private uploads carry, to anyone, owner and admin included', async () => {
    await upload('hushhush, hushshared', { is_private: 'true' });
    await upload('hushshared');
    for (const token of [undefined, owner.token, other.token, admin.token]) {
      assert.deepEqual(
        await suggest('hush', token),
        [['hushshared', 1]],
        `as ${token === admin.token ? 'admin' : token === owner.token ? 'owner' : 'someone else'}`,
      );
    }
  });

  test('counts follow privacy changes, tag edits on private uploads and deletes', async () => {
    const secret = await upload('mothfirst', { is_private: 'true' });
    const open = await upload('mothfirst');
    assert.deepEqual(await suggest('moth'), [['mothfirst', 1]]);
    // Tags added to a private upload list nothing.
    assert.equal(
      (await app.api.post(`/api/uploads/${secret}/tags`, { tags: ['mothsecond'] }, { token: owner.token })).status,
      200,
    );
    assert.deepEqual(await suggest('moth'), [['mothfirst', 1]]);
    // Made public, its tags count; private again, they stop counting.
    assert.equal(
      (await app.api.patch(`/api/upload/${secret}/privacy`, { is_private: false }, { token: owner.token })).status,
      200,
    );
    assert.deepEqual(await suggest('moth'), [
      ['mothfirst', 2],
      ['mothsecond', 1],
    ]);
    assert.equal(
      (await app.api.patch(`/api/upload/${secret}/privacy`, { is_private: true }, { token: admin.token })).status,
      200,
    );
    assert.deepEqual(await suggest('moth'), [['mothfirst', 1]]);
    // Removing a tag from, or deleting, a private upload takes nothing from the public count.
    assert.equal((await app.api.del(`/api/uploads/${secret}/tags/mothfirst`, { token: owner.token })).status, 200);
    assert.deepEqual(await suggest('moth'), [['mothfirst', 1]]);
    assert.equal((await app.api.del(`/api/upload/${secret}`, { token: owner.token })).status, 200);
    assert.deepEqual(await suggest('moth'), [['mothfirst', 1]]);
    assert.equal((await app.api.del(`/api/upload/${open}`, { token: owner.token })).status, 200);
    assert.deepEqual(await suggest('moth'), []);
  });

  test(
    'GET /api/uploads/{id}/tags of a private upload answers its tags (reachable by id), ' + 'and they stay unlisted',
    async () => {
      const id = await upload('quietone', { is_private: 'true' });
      assert.deepEqual(names((await app.api.get(`/api/uploads/${id}/tags`)).body.tags), ['quietone']);
      assert.deepEqual(await suggest('quiet'), []);
    },
  );

  test('under concurrent privacy flips, tag edits and deletes the count equals what the listing shows', async () => {
    const ids = await Promise.all(
      Array.from({ length: 12 }, (_, i) => upload('flipcount', { is_private: String(i % 2 === 0) })),
    );
    await Promise.all(
      ids.map(async (id, i) => {
        for (let round = 0; round < 4; round++) {
          const flip = app.api.patch(
            `/api/upload/${id}/privacy`,
            { is_private: (i + round) % 2 === 1 },
            { token: owner.token },
          );
          const edit =
            round % 2 === 0
              ? app.api.del(`/api/uploads/${id}/tags/flipcount`, { token: owner.token })
              : app.api.post(`/api/uploads/${id}/tags`, { tags: ['flipcount'] }, { token: owner.token });
          for (const r of await Promise.all([flip, edit]))
            assert.ok(r.status === 200 || r.status === 404, `answered ${r.status}`);
        }
        if (i % 3 === 0) assert.equal((await app.api.del(`/api/upload/${id}`, { token: owner.token })).status, 200);
      }),
    );
    const listed = await app.api.get('/api/uploads?tag=flipcount&limit=50');
    const expected = listed.body.uploads.length;
    assert.deepEqual(await suggest('flipcount'), expected ? [['flipcount', expected]] : []);
    const row = await app.composed.db
      .db()
      .selectFrom('tags')
      .select('upload_count')
      .where('slug', '=', 'flipcount')
      .executeTakeFirstOrThrow();
    assert.equal(Number(row.upload_count), expected);
    // Each link's `listed` (m025: what the tag's listing reads) is its upload's visibility, read from the rows.
    const links = await app.composed.db
      .db()
      .selectFrom('upload_tags as ut')
      .innerJoin('uploads as u', 'u.id', 'ut.upload_id')
      .innerJoin('tags as t', 't.id', 'ut.tag_id')
      .select(['u.id', 'ut.listed', 'u.is_private', 'u.moderation'])
      .where('t.slug', '=', 'flipcount')
      .execute();
    const d = app.composed.db.dialect;
    for (const l of links)
      assert.equal(d.readBool(l.listed), !d.readBool(l.is_private) && l.moderation === 'visible', `link of ${l.id}`);
    const truth = links.filter((l) => !d.readBool(l.is_private) && l.moderation === 'visible').map((l) => l.id);
    assert.deepEqual(listed.body.uploads.map((u: { id: string }) => u.id).sort(), truth.sort());
  });
});

describe('tag names fold compatibility forms and refuse invisible characters', () => {
  test('fullwidth and compatibility forms fold to plain letters (POST /api/uploads/{id}/tags)', async () => {
    const id = await upload('cats');
    const r = await app.api.post(
      `/api/uploads/${id}/tags`,
      { tags: ['ＣＡＴＳ', 'Ｃｕｔｅ\u3000Ｃａｔｓ', 'ﬁsh', '①'] },
      { token: owner.token },
    );
    assert.equal(r.status, 200);
    assert.deepEqual(names(r.body.tags).sort(), ['1', 'cats', 'cute cats', 'fish']);
  });

  test("fullwidth forms fold in the upload's tags field too", async () => {
    const r = await uploadFields(app.api, owner.token, {
      upload_type: 'link',
      external_url: 'https://example.com/fold',
      tags: 'ＤＯＧＳ, dogs, Ｐｅｔｓ',
    });
    assert.equal(r.status, 201);
    assert.deepEqual(names(r.body.tags), ['dogs', 'pets']);
  });

  test('letters with their marks (Hindi, Tamil, Hebrew points, İ) are tags, listed and found', async () => {
    const written = ['हिन्दी', 'தமிழ் நாடு', 'עִבְרִית', 'İstanbul'];
    const r = await uploadFields(app.api, owner.token, {
      upload_type: 'link',
      external_url: 'https://example.com/marks',
      tags: written.join(', '),
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.deepEqual(names(r.body.tags).sort(), ['हिन्दी', 'தமிழ் நாடு', 'עִבְרִית', 'i\u0307stanbul'].sort());
    const tamil = (r.body.tags as Array<{ name: string; slug: string }>).find((t) => t.name === 'தமிழ் நாடு')!.slug;
    assert.equal(tamil, 'தமிழ்-நாடு');
    const listed = await app.api.get(`/api/uploads?tag=${encodeURIComponent(tamil)}`);
    assert.equal(listed.status, 200);
    assert.deepEqual(
      (listed.body.uploads as Array<{ id: string }>).map((u) => u.id),
      [r.body.id],
    );
    const suggested = await app.api.get(`/api/tags?q=${encodeURIComponent('हि')}`);
    assert.ok(names(suggested.body.tags).includes('हिन्दी'), JSON.stringify(suggested.body));
    // A mark on nothing (after a space) is still refused.
    const bare = await app.api.post(`/api/uploads/${r.body.id}/tags`, { tags: ['a \u0301b'] }, { token: owner.token });
    assert.equal(bare.status, 400);
    assert.equal(bare.body.error, 'invalid_tag');
  });

  const invisible: Array<[string, string]> = [
    ['ca\u200Bts', 'U+200B'], // zero-width space
    ['ca\u200Cts', 'U+200C'], // zero-width non-joiner
    ['ca\u200Dts', 'U+200D'], // zero-width joiner
    ['\uFEFFcats', 'U+FEFF'], // byte order mark
    ['cats\u202E', 'U+202E'], // right-to-left override
    ['ca\u2066ts', 'U+2066'], // left-to-right isolate
    ['ca\u200Fts', 'U+200F'], // right-to-left mark
    ['ca\u00ADts', 'U+00AD'], // soft hyphen
    ['ca\u2060ts', 'U+2060'], // word joiner
    ['\u3164', 'U+3164'], // Hangul filler: a "letter" that shows nothing
    ['ca\u0007ts', 'U+0007'], // a control character
  ];

  test('an invisible character → 400 invalid_tag naming the tag and the character; nothing added', async () => {
    const id = await upload('visible');
    for (const [tag, code] of invisible) {
      const r = await app.api.post(`/api/uploads/${id}/tags`, { tags: ['fine', tag] }, { token: owner.token });
      assert.equal(r.status, 400, code);
      assert.equal(r.body.error, 'invalid_tag', code);
      // Named as sent, the invisible character spelled out where it sits.
      assert.ok(r.body.message.includes(`tag "${tag.replace(/[^a-z]/, `<${code}>`)}"`), `${code}: ${r.body.message}`);
    }
    assert.deepEqual(names((await app.api.get(`/api/uploads/${id}/tags`)).body.tags), ['visible']);
    assert.deepEqual(await suggest('fine'), []);
  });

  test("an invisible character in the upload's tags field → 400 invalid_tag; nothing stored", async () => {
    const before = await countUploads(app);
    for (const [tag, code] of invisible) {
      const r = await uploadFields(app.api, owner.token, {
        upload_type: 'link',
        external_url: 'https://example.com/invisible',
        tags: `fine, ${tag}`,
      });
      assert.equal(r.status, 400, code);
      assert.equal(r.body.error, 'invalid_tag', code);
      assert.ok(r.body.message.includes(code), `${code}: ${r.body.message}`);
    }
    assert.equal(await countUploads(app), before);
  });
});
