import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { redisFeedCache } from '../../src/store/cache/feed-cache.ts';
import { onPostgres, TEST_REDIS_URL } from '../support/env.ts';

const page = (text: string) => ({ etag: `W/"${text}"`, body: Buffer.from(JSON.stringify({ text })) });

test('Redis feed cache: two processes, one generation; a page kept in memory is never served past a write', { skip: !onPostgres && 'needs Redis (PostgreSQL + Redis pass)' }, async () => {
  const prefix = `pvtest:${randomBytes(4).toString('hex')}:`;
  const [ra, rb] = [new Redis(TEST_REDIS_URL), new Redis(TEST_REDIS_URL)];
  try {
    // (A cache counts a connection becoming ready as a possible missed write: connect first.)
    await Promise.all([ra, rb].map((r) => (r.status === 'ready' ? null : once(r, 'ready'))));
    const a = redisFeedCache(ra, prefix);
    const b = redisFeedCache(rb, prefix);
    const first = await a.read('k');
    assert.equal(first.hit, null);
    await a.write('k', first.generation, page('one'), 60);
    // B has nothing in memory: it takes the page from Redis, then keeps it.
    const viaRedis = await b.read('k');
    assert.equal(viaRedis.hit?.body.toString(), '{"text":"one"}');
    assert.equal(viaRedis.hit?.etag, 'W/"one"');
    await rb.del(`${prefix}feed:${viaRedis.generation}:k`);
    assert.equal((await b.read('k')).hit?.etag, 'W/"one"', 'served from memory while the generation holds');
    // A write through A: B's next read misses, and a page built before the write is not kept.
    await a.invalidate();
    const after = await b.read('k');
    assert.equal(after.hit, null);
    assert.notEqual(after.generation, first.generation);
    await a.write('k', first.generation, page('stale'), 60);
    assert.equal((await b.read('k')).hit, null, 'a page of the old generation is never served');
    await b.write('k', after.generation, page('two'), 60);
    assert.equal((await a.read('k')).hit?.etag, 'W/"two"');
    // The copy kept in memory does not outlive the page in Redis.
    await a.write('short', after.generation, page('short'), 1);
    assert.equal((await b.read('short')).hit?.etag, 'W/"short"');
    await new Promise((r) => setTimeout(r, 1100));
    assert.equal((await b.read('short')).hit, null);
  } finally {
    const keys = await ra.keys(`${prefix}*`);
    if (keys.length) await ra.del(...keys);
    ra.disconnect();
    rb.disconnect();
  }
});
