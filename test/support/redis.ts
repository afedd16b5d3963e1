/**
 * Redis keys of the test runs. Every key a test writes is under a prefix from `testRedisPrefix()`, which names the
 * run (`PIXVOTE_TEST_RUN`, set by scripts/test.ts), so the run can list afterwards what it left behind; the
 * tests delete their keys with `dropRedisKeys()` (the app keeps some keys with no expiry, e.g. the feed
 * generation), and scripts/test.ts fails the run when a key of it without expiry is still there.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { TEST_REDIS_URL } from './env.ts';

/** This run's part of every test key; a file run alone (node --test FILE) gets one of its own. */
export const TEST_RUN = process.env.PIXVOTE_TEST_RUN ?? `solo-${process.pid}`;

/** A REDIS_PREFIX no other test (nor any other run on this Redis) shares. */
export function testRedisPrefix(): string {
  return `pvtest:${TEST_RUN}:${randomBytes(4).toString('hex')}:`;
}

async function withRedis<T>(url: string, fn: (r: Redis) => Promise<T>): Promise<T> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  r.on('error', () => {});
  try {
    await r.connect();
    return await fn(r);
  } finally {
    r.disconnect();
  }
}

async function scanAll(r: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await r.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

/** Deletes every key under `prefix` (a test's REDIS_PREFIX); quietly does nothing when Redis is not there. */
export async function dropRedisKeys(prefix: string, url = TEST_REDIS_URL): Promise<void> {
  if (!prefix.startsWith('pvtest:')) throw new Error(`not a test prefix: ${prefix}`);
  await withRedis(url, async (r) => {
    const keys = await scanAll(r, `${prefix}*`);
    for (let i = 0; i < keys.length; i += 500) await r.del(...keys.slice(i, i + 500));
  }).catch(() => {});
}

/** The keys of test run `run` with no expiry (TTL -1): what the run left behind for good. */
export async function keysWithoutExpiry(run: string, url = TEST_REDIS_URL): Promise<string[]> {
  return withRedis(url, async (r) => {
    const out: string[] = [];
    for (const key of await scanAll(r, `pvtest:${run}:*`)) if ((await r.ttl(key)) === -1) out.push(key);
    return out.sort();
  });
}
