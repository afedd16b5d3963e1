/**
 * The upload's blocklist check (issue 48), on both databases: the SHA-256 read with the version in one statement,
 * the near check from the process's copy in memory when it is as recent as the version the upload read and in SQL
 * when it is not (another process's additions and removals are seen at once), and the plans of every statement the
 * check and the insert's guard run: each an index probe, never a scan of the blocklist.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql, type KyselyPlugin } from 'kysely';
import type { Database } from '../../src/store/database.ts';
import { BlocklistCache } from '../../src/store/moderation/blocklist-cache.ts';
import { BlocklistRepository, checkBytesQuery } from '../../src/store/moderation/blocklist.repository.ts';
import { insertGuardQuery, versionQuery } from '../../src/store/moderation/insert-guard.ts';
import { pdqCandidatesQuery } from '../../src/store/moderation/pdq-lookup.ts';
import { nearRows } from '../../src/store/similarity/similarity-index.ts';
import { pdqCandidateKeys } from '../../src/store/similarity/pdq-hamming.ts';
import { withStoreDatabase } from '../support/store-db.ts';
import { planOf } from '../support/plans.ts';
import { flipBits, flipPdqBits, lcgRandom, randomPdq } from '../support/hashes.ts';

const AT = new Date(Date.UTC(2026, 1, 1));
const moderator = null;
const distances = { phash: 8, pdq: 31 };
const sha = (c: string) => c.repeat(64);

const withDatabase = (fn: (db: Database, userId: string, another: () => Promise<Database>) => Promise<void>) =>
  withStoreDatabase('blocklist-check', AT, fn);

const add = (blocklist: BlocklistRepository, e: { sha256?: string; phash?: string; pdq?: string }) =>
  blocklist.add([{ sha256: e.sha256 ?? null, phash: e.phash ?? null, pdq: e.pdq ?? null, reason: 'test' }], {
    source: 'moderation',
    moderator,
    at: AT,
  });

test('the SHA-256 and the version in one read; the near check follows other processes at once', async () => {
  await withDatabase(async (db, _userId, another) => {
    const r = lcgRandom(48);
    const here = new BlocklistRepository(db);
    // Another gateway: its own connections and its own copy in memory.
    const there = new BlocklistRepository(await another());
    const phash = '0123456789abcdef';
    const pdq = randomPdq(r);
    await add(there, { sha256: sha('a'), phash, pdq });

    const v1 = await here.checkBytes(sha('a'));
    assert.deepEqual(v1, { version: await here.version(), blocked: true });
    const miss = await here.checkBytes(sha('b'));
    assert.deepEqual(miss, { version: v1.version, blocked: false });

    // No copy yet: answered in SQL; then from memory, at any distance asked.
    const near = { phash: flipBits(phash, 8, r), pdq: null };
    assert.equal(await here.blocksNear(near, distances, v1.version), true);
    assert.equal(await here.blocksNear(near, { ...distances, phash: 7 }, v1.version), false);
    await here.warm();
    assert.equal(await here.blocksNear(near, distances, v1.version), true, 'from memory');
    assert.equal(await here.blocksNear(near, { ...distances, phash: 7 }, v1.version), false);
    const nearPdq = { phash: null, pdq: flipPdqBits(pdq, 31, r) };
    assert.equal(await here.blocksNear(nearPdq, distances, v1.version), true);
    assert.equal(await here.blocksNear(nearPdq, { ...distances, pdq: 30 }, v1.version), false);
    assert.equal(
      await here.blocksNear({ phash: flipBits(phash, 9, r), pdq: randomPdq(r) }, distances, v1.version),
      false,
    );

    // An addition by the other process: the version moved, so this copy does not answer for it (SQL does).
    const later = '7edcba9876543210';
    await add(there, { phash: later });
    const v2 = await here.checkBytes(sha('c'));
    assert.ok(v2.version > v1.version);
    const laterNear = { phash: flipBits(later, 3, r), pdq: null };
    assert.equal(await here.blocksNear(laterNear, distances, v2.version), true, 'an addition is seen at once');
    await here.warm();
    assert.equal(await here.blocksNear(laterNear, distances, v2.version), true, 'and by the rebuilt copy');

    // A removal likewise.
    const entry = (await there.list(0, 10)).find((e) => e.phash === later)!;
    assert.equal(await there.remove(entry.id, { moderator, at: AT }), true);
    const v3 = await here.checkBytes(sha('c'));
    assert.equal(await here.blocksNear(laterNear, distances, v3.version), false, 'a removal is seen at once');

    // A copy as recent as the version asked answers from memory, without SQL: a row deleted behind the blocklist's
    // back (no version bump, which no code path does) is still matched by the copy built before.
    await here.warm();
    await db.db().deleteFrom('blocklist_pdq_chunks').execute();
    await db.db().deleteFrom('blocklist').where('phash', '=', phash).execute();
    assert.equal(await here.blocksNear(near, distances, v3.version), true, 'the copy answered');
    assert.equal(await new BlocklistRepository(db).blocksNear(near, distances, v3.version), false, 'SQL answered');
  });
});

/**
 * No node of the plan reads a whole table or index: SQLite's `SCAN …`, PostgreSQL's `Seq Scan` (priced out) or an
 * index scan without an `Index Cond` (the whole index read through a filter). But for blocklist_version (`v`: one
 * row, by construction) and nearRows' own union (`m`: rows already probed).
 */
function assertProbes(db: Database, label: string, plan: string): void {
  if (process.env.SHOW_PLANS) console.log(`${label}\n${plan}\n`);
  if (db.dialect.name !== 'postgres') {
    assert.doesNotMatch(plan, /^SCAN (?!m\b|v\b)/m, `${label}:\n${plan}`);
    return;
  }
  assert.doesNotMatch(plan, /Seq Scan on (?!blocklist_version\b)/, `${label}:\n${plan}`);
  // Each node: its line and the detail lines under it, up to the next node.
  const nodes = plan.split(/\n(?=\s*->)/);
  for (const node of nodes)
    if (/(?<!Bitmap )Index (Only )?Scan using/.test(node))
      assert.match(node, /Index Cond:/, `${label}: an index read whole:\n${plan}`);
}

test('every statement of the check and of the insert guard probes an index, never scans the blocklist', async () => {
  await withDatabase(async (db, userId) => {
    const blocklist = new BlocklistRepository(db);
    const r = lcgRandom(5);
    // Enough entries of every family that a planner has statistics to choose by, and that reading a whole table
    // costs it more than its probes (a few thousand PDQ entries: 16 chunk rows each).
    const entries = Array.from({ length: 4000 }, (_, i) => ({
      sha256: i % 10 === 0 ? i.toString(16).padStart(64, '0') : null,
      phash: i % 10 === 1 ? flipBits('0123456789abcdef', 20, r) : null,
      pdq: i % 10 > 1 ? randomPdq(r) : null,
      reason: '',
    }));
    await blocklist.add(entries, { source: 'import', moderator, at: AT });
    // And users: a planner reads a table of one row whole, as it should.
    await db
      .db()
      .insertInto('users')
      .values(
        Array.from({ length: 200 }, (_, i) => ({
          id: randomUUID(),
          username: `u${i}`,
          username_key: `u${i}`,
          email: `u${i}@x.test`,
          email_key: `u${i}@x.test`,
          password_hash: 'x',
          role: 'user',
          created_at: db.dialect.date(AT),
        })),
      )
      .execute();
    await sql`analyze`.execute(db.db());
    const k = db.db();
    const statements = {
      'SHA-256 and version': checkBytesQuery(k, sha('e')).compile(),
      version: versionQuery(k).compile(),
      'insert guard': insertGuardQuery(k, db.dialect, userId).compile(),
      'pHash in SQL': nearRows(db.dialect, 'blocklist', '0123456789abcdef', 8, {
        limit: 1,
        unordered: true,
        parameterized: true,
      }).compile(k),
      'PDQ in SQL': pdqCandidatesQuery(k, pdqCandidateKeys(randomPdq(r), 31)).compile(),
    };
    for (const [label, query] of Object.entries(statements))
      assertProbes(db, label, await planOf(db, query, true, true));
  });
});

test('closing the database stops the copy’s rebuild at its next page and waits for it; none starts after', async () => {
  await withDatabase(async (_db, _userId, another) => {
    const db = await another();
    const blocklist = new BlocklistRepository(db);
    const r = lcgRandom(7);
    for (let i = 0; i < 6; i++) await add(blocklist, { phash: flipBits('0123456789abcdef', 20, r) });
    const version = await blocklist.version();
    // A copy that reads one entry per page, counting the statements its reads run.
    let reads = 0;
    const counting: KyselyPlugin = {
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        reads++;
        return args.result;
      },
    };
    const cache = new BlocklistCache(
      () => db.read().withPlugin(counting),
      () => blocklist.version(),
      { page: 1 },
    );
    db.onClose(() => cache.close());
    // Another stop that needs the connections: close() runs the stops before any pool ends.
    let stillOpen: unknown = null;
    db.onClose(async () => {
      stillOpen = await db
        .read()
        .selectNoFrom((eb) => eb.val(1).as('one'))
        .executeTakeFirst();
    });
    const rebuilt = cache.load();
    await db.close();
    await rebuilt;
    assert.equal(reads, 1, 'the rebuild read one page of six, then stopped');
    assert.equal(Number((stillOpen as { one: unknown } | null)?.one), 1, 'the stop ran while the pools were open');
    assert.equal(cache.blocks({ phash: '0123456789abcdef', pdq: null }, distances, version), null);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(reads, 1, 'no rebuild after close');
    await assert.rejects(cache.load(), /closed/);
    await db.close();
  });
});
