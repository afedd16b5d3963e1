/** The feed service over in-memory ports: the page envelope, paging, the cache and its invalidation, profiles. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  FEED_TTL_SECONDS,
  FeedService,
  PROFILE_UPLOADS,
  RECENT_TTL_SECONDS,
  type CachedJson,
  type FeedQuery,
} from '../../src/domain/feeds/feed.service.ts';
import { MemoryFeedCache, MemoryFeeds, MemoryUploads, testPrincipal } from '../support/memory-ports.ts';

const alice = testPrincipal('alice');
const bob = testPrincipal('bob');

function setup() {
  const uploads = new MemoryUploads();
  uploads.usernames.set(alice.userId, 'alice');
  uploads.usernames.set(bob.userId, 'bob');
  const store = new MemoryFeeds(uploads);
  const cache = new MemoryFeedCache();
  const service = new FeedService({
    store,
    cache,
    me: async (p) => ({ id: p.userId, username: p.username, role: 'user', created_at: '2026-01-01T00:00:00.000Z' }),
  });
  /** `n` public uploads by alice, one a day: ids oldest first. */
  const seed = (n: number) =>
    Array.from(
      { length: n },
      (_, i) => uploads.add({ userId: alice.userId, createdAt: new Date(Date.UTC(2026, 10, 1 + i)) }).id,
    );
  return { uploads, store, cache, service, seed };
}

const json = (page: CachedJson) => JSON.parse(page.body.toString()) as Record<string, unknown>;
const ids = (page: CachedJson) => (json(page).uploads as Array<{ id: string }>).map((u) => u.id);
const query = (q: Partial<FeedQuery> = {}): FeedQuery => ({ page: 1, limit: 2, sort: 'new', ...q });

describe('FeedService.list', () => {
  test('{uploads, page, limit, has_more, next_cursor}; limit + 1 rows are asked for at the offset', async () => {
    const { service, store, seed } = setup();
    const [a, b, c, d, e] = seed(5);
    const first = await service.list(query());
    assert.deepEqual(Object.keys(json(first)), ['uploads', 'page', 'limit', 'has_more', 'next_cursor']);
    assert.deepEqual(ids(first), [e, d]);
    assert.equal(json(first).has_more, true);
    const third = await service.list(query({ page: 3 }));
    assert.deepEqual(ids(third), [a]);
    assert.deepEqual([json(third).page, json(third).limit, json(third).has_more], [3, 2, false]);
    assert.deepEqual(
      store.pages.map((p) => [p.offset, p.fetch]),
      [
        [0, 3],
        [4, 3],
      ],
    );
    const exact = await service.list(query({ page: 2 }));
    assert.deepEqual(ids(exact), [c, b]);
    assert.equal(json(exact).has_more, true, 'one more row exists after the page');
    assert.equal(json(await service.list(query({ limit: 5 }))).has_more, false, 'exactly limit rows: no more');
  });

  test('uploads are API.md Upload records in the sort the query asks for', async () => {
    const { service, uploads, seed } = setup();
    const [older, newer] = seed(2);
    uploads.rows.get(older!)!.upvotes = 5;
    const page = await service.list(query({ sort: 'top' }));
    assert.deepEqual(ids(page), [older, newer]);
    const first = (json(page).uploads as Array<Record<string, unknown>>)[0]!;
    assert.equal(first.user_id, alice.userId);
    assert.equal(first.upvotes, 5);
    assert.equal(first.created_at, '2026-11-01T00:00:00.000Z');
  });

  test('a page is served from the cache until a write invalidates it; its ETag is the hash of its bytes', async () => {
    const { service, store, cache, seed } = setup();
    seed(1);
    const first = await service.list(query());
    assert.equal(first.etag, `W/"${createHash('sha1').update(first.body).digest('base64url')}"`);
    assert.deepEqual(cache.writes, [{ key: 'feed:new:1:2:::', generation: '0', ttlSeconds: FEED_TTL_SECONDS }]);
    const again = await service.list(query());
    assert.equal(store.pages.length, 1, 'the second read is a cache hit');
    assert.equal(again.etag, first.etag);
    assert.ok(again.body.equals(first.body));

    seed(1);
    assert.equal(ids(await service.list(query())).length, 1, 'stale until invalidated');
    await service.invalidate();
    const fresh = await service.list(query());
    assert.equal(store.pages.length, 2);
    assert.equal(ids(fresh).length, 2);
    assert.notEqual(fresh.etag, first.etag);
  });

  test('every query field makes a page of its own; the user name is matched without case', async () => {
    const { service, store, cache, seed } = setup();
    seed(1);
    const variants: Array<Partial<FeedQuery>> = [
      {},
      { sort: 'top' },
      { page: 2 },
      { limit: 3 },
      { type: 'link' },
      { user: 'alice' },
      { tag: 'cats' },
    ];
    for (const v of variants) await service.list(query(v));
    assert.equal(store.pages.length, variants.length);
    assert.equal(new Set(cache.writes.map((w) => w.key)).size, variants.length);
    await service.list(query({ user: 'ALICE' }));
    assert.equal(store.pages.length, variants.length, 'ALICE is alice');
  });

  test('a page built from rows read before an invalidation is never served after it', async () => {
    const { service, store, cache, seed } = setup();
    seed(1);
    const read = store.publicPage.bind(store);
    // A write lands (and invalidates) while the page is being built from what was read before it.
    store.publicPage = async (...args) => {
      const rows = await read(...args);
      await cache.invalidate();
      return rows;
    };
    await service.list(query());
    store.publicPage = read;
    await service.list(query());
    assert.equal(store.pages.length, 2, 'the page written under the old generation was not a hit');
  });
});

describe('FeedService.recent and profile', () => {
  test('recent: {items}, the newest public uploads, exactly limit rows, cached for longer', async () => {
    const { service, store, cache, uploads, seed } = setup();
    const [, b, c] = seed(3);
    uploads.add({ userId: alice.userId, isPrivate: true, createdAt: new Date(Date.UTC(2026, 11, 1)) });
    const recent = await service.recent(2);
    assert.deepEqual(
      (json(recent).items as Array<{ id: string }>).map((u) => u.id),
      [c, b],
    );
    assert.deepEqual(Object.keys(json(recent)), ['items']);
    assert.deepEqual(store.pages[0], { q: { page: 1, limit: 2, sort: 'new' }, offset: 0, fetch: 2 });
    assert.deepEqual(cache.writes.at(-1), { key: 'recent:2', generation: '0', ttlSeconds: RECENT_TTL_SECONDS });
    await service.recent(2);
    assert.equal(store.pages.length, 1, 'a cache hit');
  });

  test('profile: the caller, their stats and their own newest uploads (private ones too), not cached', async () => {
    const { service, store, cache, uploads, seed } = setup();
    const own = seed(PROFILE_UPLOADS + 2);
    const secret = uploads.add({ userId: alice.userId, isPrivate: true, createdAt: new Date(Date.UTC(2027, 0, 1)) });
    uploads.add({ userId: bob.userId });
    const stats = { uploads: 15, upvotes_received: 3, downvotes_received: 1, votes_cast: 7 };
    store.profileStats.set(alice.userId, stats);
    const profile = await service.profile(alice);
    assert.equal(profile.user.username, 'alice');
    assert.deepEqual(profile.stats, stats);
    assert.equal(profile.uploads.length, PROFILE_UPLOADS);
    assert.deepEqual(
      profile.uploads.map((u) => u.id),
      [secret.id, ...own.reverse().slice(0, PROFILE_UPLOADS - 1)],
    );
    assert.ok(profile.uploads.every((u) => u.user_id === alice.userId));
    assert.equal(cache.writes.length, 0);
    // The rest by cursor: the three older ones, then nothing more.
    assert.ok(profile.next_cursor);
    const rest = await service.ownUploads(alice, PROFILE_UPLOADS, profile.next_cursor);
    assert.deepEqual(
      rest.uploads.map((u) => u.id),
      own.slice(PROFILE_UPLOADS - 1),
    );
    assert.equal(rest.next_cursor, null);
    assert.equal(rest.has_more, false);
    // Another user's profile cursor, or another limit, is not this listing's.
    await assert.rejects(service.ownUploads(bob, PROFILE_UPLOADS, profile.next_cursor), { code: 'invalid_cursor' });
    await assert.rejects(service.ownUploads(alice, 5, profile.next_cursor), { code: 'invalid_cursor' });
  });
});

describe('FeedService.list by cursor', () => {
  test('next_cursor leads through every upload once, counting pages on, in every sort and with a tag', async () => {
    const { service, uploads, seed } = setup();
    const all = seed(7);
    for (const [i, id] of all.entries()) {
      const row = uploads.rows.get(id)!;
      row.upvotes = (i * 3) % 5;
      row.downvoteCount = i % 2;
      row.tags = i % 2 ? [{ id: 't', name: 'odd', slug: 'odd' }] : [];
    }
    for (const sort of ['new', 'top', 'hot', 'best'] as const) {
      for (const tag of [undefined, 'odd']) {
        const seen: string[] = [];
        const pages: number[] = [];
        let cursor: string | undefined;
        for (let n = 0; n < 10; n++) {
          const page = json(await service.list(query({ sort, tag, limit: 3, cursor })));
          seen.push(...(page.uploads as Array<{ id: string }>).map((u) => u.id));
          pages.push(page.page as number);
          if (!page.next_cursor) break;
          cursor = page.next_cursor as string;
        }
        const expected = json(await service.list(query({ sort, tag, limit: 50 })));
        assert.deepEqual(
          seen,
          (expected.uploads as Array<{ id: string }>).map((u) => u.id),
          `${sort} ${tag ?? ''}: the cursor pages are the one long page, in order`,
        );
        assert.deepEqual(
          pages,
          pages.map((_, i) => i + 1),
        );
      }
    }
  });

  test('a malformed cursor, or one of another sort, filter or limit, is 400 invalid_cursor', async () => {
    const { service, seed } = setup();
    seed(5);
    const cursor = json(await service.list(query())).next_cursor as string;
    assert.ok(cursor);
    for (const other of [
      { sort: 'top' as const },
      { limit: 3 },
      { tag: 'cats' },
      { user: 'bob' },
      { type: 'link' as const },
    ]) {
      await assert.rejects(
        service.list(query({ ...other, cursor })),
        { code: 'invalid_cursor' },
        JSON.stringify(other),
      );
    }
    const forged = Buffer.from(JSON.stringify([1, 'x', 2, 0, null, 0, 'not-a-uuid'])).toString('base64url');
    for (const bad of ['x', '!!!', cursor.slice(0, -4), forged, Buffer.from('[]').toString('base64url')]) {
      await assert.rejects(service.list(query({ cursor: bad })), { code: 'invalid_cursor' }, bad);
    }
  });

  test('number pages end at 10 000 rows in: deeper is 400 page_too_deep, naming cursor', async () => {
    const { service } = setup();
    await service.list(query({ page: 10_001, limit: 1 }));
    await service.list(query({ page: 201, limit: 50 }));
    await assert.rejects(service.list(query({ page: 202, limit: 50 })), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'page_too_deep');
      assert.match(e.message, /cursor/);
      return true;
    });
  });
});
