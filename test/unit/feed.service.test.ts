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
  test('{uploads, page, limit, has_more}; the store is asked for limit + 1 rows at (page − 1) × limit', async () => {
    const { service, store, seed } = setup();
    const [a, b, c, d, e] = seed(5);
    const first = await service.list(query());
    assert.deepEqual(Object.keys(json(first)), ['uploads', 'page', 'limit', 'has_more']);
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
  });
});
