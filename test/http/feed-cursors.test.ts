/**
 * Keyset pages through HTTP (issue 29, API.md Listing and feeds): every listing pages on with `next_cursor` to the
 * end while votes move ranks and new uploads arrive, and shows each upload at most once; every upload whose rank did
 * not move exactly once (and, below, with a clock that separates the votes from the pages' reads: every visible
 * upload exactly once, in the order of its keys when the traversal began). Number pages end at 10 000 rows
 * (page_too_deep), a foreign cursor is invalid_cursor, and a user's own uploads page on past the profile's first
 * twelve.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startApp, type TestApp } from '../support/app.ts';
import { registerUser, type TestUser } from '../support/users.ts';
import { uploadFields } from '../support/uploads.ts';
import { lcgRandom } from '../support/hashes.ts';
import { wilsonLowerBound } from '../../src/domain/ranking.ts';
import { RANK_MOVES_KEEP_MS, RANK_MOVES_WINDOW_MS } from '../../src/domain/feeds/cursor.ts';

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
    // A position forged within the same listing (its JSON edited, the MAC kept) is refused as tampered with.
    const bytes = Buffer.from(first.next_cursor, 'base64url');
    const json = bytes.subarray(0, -16).toString();
    const forged = json.replace(/"[0-9a-f-]{36}"\]$/, '"00000000-0000-4000-8000-000000000000"]');
    assert.notEqual(forged, json);
    const tampered = Buffer.concat([Buffer.from(forged), bytes.subarray(-16)]).toString('base64url');
    const refused = await app.api.get(`/api/uploads?sort=top&limit=3&cursor=${tampered}`);
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error, 'invalid_cursor');
    assert.match(refused.body.message, /tampered/);
    assert.equal((await app.api.get(`/api/uploads?sort=top&limit=3&cursor=${first.next_cursor}`)).status, 200);

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

/**
 * Exact cursors (the journal of rank moves, m019): between every page, votes move uploads across the page
 * boundary, up and down, some already shown and some not yet; each traversal still shows every visible upload once,
 * in the order of the keys they had when it began. The app's clock ticks at least a millisecond a reading (a vote
 * after a page is always later than that page's `since`) and can be moved on (a cursor older than the window).
 */
describe('ranked cursors while votes move uploads across the page boundary', () => {
  let exact: TestApp;
  let skew = 0;
  let last = 0;
  const clock = {
    now: () => {
      last = Math.max(Date.now() + skew, last + 1);
      return new Date(last);
    },
  };
  let author: TestUser;
  let crowd: TestUser[];
  const EXACT_TAG = 'exact-walk';
  const tagged = new Map<string, boolean>();
  const privates: string[] = [];
  type View = { id: string; upvotes: number; downvote_count: number; created_at: string };
  type Walk = { uploads: View[]; page: number; has_more: boolean; next_cursor: string | null };

  const castAs = async (u: TestUser, id: string, value: string) => {
    const r = await exact.api.post('/api/vote', { uploadId: id, vote: value }, { token: u.token });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  };
  /** Moves an upload's ranks: three of the crowd take back their votes on it, then vote it up (or down). */
  const move = async (random: () => number, id: string, up: boolean) => {
    const voters = [...crowd].sort(() => random() - 0.5).slice(0, 3);
    for (const v of voters) {
      await castAs(v, id, 'none');
      await castAs(v, id, up ? 'fucks' : 'does_not_fuck');
    }
  };
  /** Every upload of the listing with its counts now (one page: the listing has fewer than 50). */
  const everything = async (tag: string | null): Promise<View[]> => {
    const r = await exact.api.get(`/api/uploads?sort=new&limit=50${tag ? `&tag=${tag}` : ''}`);
    assert.equal(r.status, 200);
    assert.equal(r.body.has_more, false);
    return r.body.uploads;
  };
  const keyOf = (sort: string, u: { upvotes: number; downvote_count: number }) =>
    sort === 'top' ? u.upvotes - u.downvote_count : wilsonLowerBound(u.upvotes, u.downvote_count);

  before(async () => {
    exact = await startApp({}, { clock });
    const api = exact.api;
    author = await registerUser(api);
    crowd = await Promise.all(Array.from({ length: 6 }, () => registerUser(api)));
    const random = lcgRandom(2919);
    for (let i = 0; i < 20; i++) {
      const onTag = i % 4 !== 0;
      const r = await uploadFields(api, author.token, {
        upload_type: 'link',
        external_url: `https://example.com/exact/${randomBytes(4).toString('hex')}`,
        tags: onTag ? EXACT_TAG : 'exact-other',
      });
      assert.equal(r.status, 201);
      tagged.set(r.body.id, onTag);
    }
    for (let i = 0; i < 2; i++) {
      const r = await uploadFields(api, author.token, {
        upload_type: 'link',
        external_url: `https://example.com/exact/private-${i}`,
        tags: EXACT_TAG,
        is_private: 'true',
      });
      privates.push(r.body.id);
    }
    // Scores that differ, with ties.
    for (const id of tagged.keys()) {
      for (const v of crowd) {
        const x = random();
        if (x < 0.3) await castAs(v, id, 'fucks');
        else if (x < 0.45) await castAs(v, id, 'does_not_fuck');
      }
    }
  });
  after(() => exact.close());

  for (const sort of ['top', 'best']) {
    for (const tag of [null, EXACT_TAG]) {
      const name = `sort=${sort}${tag ? `, tag=${tag}` : ''}`;
      test(`${name}: each visible upload exactly once, in the order of its keys when the traversal began`, async () => {
        const random = lcgRandom(sort.length * 31 + (tag ? 7 : 0));
        // The keys as page 1 is read (no vote in between): the order every page must keep.
        const start = await everything(tag);
        const expected = new Set(start.map((u) => u.id));
        assert.equal(expected.size, tag ? 15 : 20);
        const position = new Map(
          start.map((u) => [u.id, { key: keyOf(sort, u), at: Date.parse(u.created_at), id: u.id }] as const),
        );
        const precedes = (a: { key: number; at: number; id: string }, b: { key: number; at: number; id: string }) =>
          a.key > b.key || (a.key === b.key && (a.at > b.at || (a.at === b.at && a.id > b.id)));
        const seen: string[] = [];
        let movedSeen = 0;
        let movedUnseen = 0;
        let cursor: string | null = null;
        let pages = 0;
        do {
          const r: { status: number; body: unknown } = await exact.api.get(
            `/api/uploads?sort=${sort}&limit=3${tag ? `&tag=${tag}` : ''}${cursor ? `&cursor=${cursor}` : ''}`,
          );
          assert.equal(r.status, 200, JSON.stringify(r.body));
          const page = r.body as Walk;
          pages++;
          assert.equal(page.page, pages);
          for (const u of page.uploads) {
            const prev = seen.at(-1);
            assert.ok(position.has(u.id), `${u.id} was listed when the traversal began`);
            if (prev) {
              assert.ok(
                precedes(position.get(prev)!, position.get(u.id)!),
                `page ${pages}: ${u.id} ${JSON.stringify(position.get(u.id))} after ` +
                  JSON.stringify(position.get(prev)),
              );
            }
            seen.push(u.id);
          }
          cursor = page.next_cursor;
          if (!cursor) break;
          // Across the boundary: the last one shown goes down and another shown goes up; of those not shown yet,
          // one goes up (past the ones shown) and one goes down.
          const notSeen = [...expected].filter((id) => !seen.includes(id));
          const pick = (ids: string[]) => ids[Math.floor(random() * ids.length)];
          const moves: Array<[string | undefined, boolean]> = [
            [seen.at(-1), false],
            [pick(seen.slice(0, -1)), true],
            [pick(notSeen), true],
            [pick(notSeen), false],
          ];
          for (const [id, up] of moves) {
            if (!id) continue;
            await move(random, id, up);
            if (seen.includes(id)) movedSeen++;
            else movedUnseen++;
          }
        } while (pages < 40);
        assert.equal(cursor, null, 'the traversal ends');
        assert.ok(movedSeen > 5 && movedUnseen > 5, `${movedSeen} shown and ${movedUnseen} not yet shown moved`);
        assert.equal(new Set(seen).size, seen.length, `no upload twice: ${seen.join(' ')}`);
        assert.deepEqual([...seen].sort(), [...expected].sort(), 'every visible upload once');
        for (const id of privates) assert.ok(!seen.includes(id));
      });
    }
  }

  test('a cursor older than the journal window pages on: each at most once, the unmoved exactly once', async () => {
    const random = lcgRandom(77);
    const expected = new Set((await everything(null)).map((u) => u.id));
    const first = (await exact.api.get('/api/uploads?sort=top&limit=3')).body as Walk;
    const seen = first.uploads.map((u) => u.id);
    // The traversal began longer ago than the journal serves: moved uploads are skipped from here on.
    skew += RANK_MOVES_WINDOW_MS + 60_000;
    const moved = new Set<string>();
    let cursor = first.next_cursor;
    while (cursor) {
      const notSeen = [...expected].filter((id) => !seen.includes(id));
      for (const [id, up] of [
        [seen.at(-1), false],
        [notSeen[Math.floor(random() * notSeen.length)], true],
      ] as const) {
        if (!id) continue;
        await move(random, id, up);
        moved.add(id);
      }
      const r = await exact.api.get(`/api/uploads?sort=top&limit=3&cursor=${cursor}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      seen.push(...(r.body as Walk).uploads.map((u) => u.id));
      cursor = (r.body as Walk).next_cursor;
    }
    assert.equal(new Set(seen).size, seen.length, `no upload twice: ${seen.join(' ')}`);
    for (const id of expected) if (!moved.has(id)) assert.ok(seen.includes(id), `${id} (unmoved) is listed`);
  });

  test('housekeeping prunes the journal rows older than the window, and only those', async () => {
    const db = exact.composed.db.db();
    const count = async () =>
      Number(
        (
          await db
            .selectFrom('rank_moves')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const old = await count();
    assert.ok(old > 100, `every vote journaled its move (${old} rows)`);
    skew += RANK_MOVES_KEEP_MS + 60_000;
    const [id] = tagged.keys();
    await castAs(await registerUser(exact.api), id!, 'fucks');
    assert.equal(await count(), old + 1, "a vote's move is one row");
    assert.equal(await exact.composed.pruneRankMoves(), old);
    const left = await db.selectFrom('rank_moves').select(['upload_id']).execute();
    assert.deepEqual(
      left.map((r) => r.upload_id),
      [id],
    );
    assert.equal(await exact.composed.pruneRankMoves(), 0);
  });
});
