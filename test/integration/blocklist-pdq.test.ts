/**
 * PDQ entries of the blocklist in the store, on both databases: the lookup an upload makes (multi-index hashing over
 * blocklist_pdq_chunks) against a brute-force scan, the re-check an insert makes, duplicates and removal, and the
 * hold job over the stored uploads' PDQ (quality ≥ 50, within 31 bits; pages of the scan).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Database } from '../../src/store/database.ts';
import { BlocklistRepository } from '../../src/store/moderation/blocklist.repository.ts';
import { blocklisted } from '../../src/store/moderation/insert-guard.ts';
import { pdqBlocklisted } from '../../src/store/moderation/pdq-lookup.ts';
import { pdqDistance } from '../../src/store/similarity/pdq-hamming.ts';
import type { ModerationState } from '../../src/domain/uploads/upload.types.ts';
import { insertImageUpload, withStoreDatabase } from '../support/store-db.ts';
import { flipPdqBits as flipRandom, lcgRandom, randomPdq } from '../support/hashes.ts';

const AT = new Date(Date.UTC(2026, 1, 1));
const moderator = null;

const withDatabase = (fn: (db: Database, userId: string) => Promise<void>) =>
  withStoreDatabase('blocklist-pdq', AT, fn);

const insertUpload = (
  db: Database,
  userId: string,
  u: { pdq: string | null; quality: number | null; moderation?: ModerationState },
) =>
  insertImageUpload(db, userId, AT, {
    sha256: randomUUID().replace(/-/g, '').repeat(2),
    pdq: u.pdq,
    pdq_quality: u.quality,
    moderation: u.moderation ?? 'visible',
  });

test('the PDQ lookup finds exactly the entries within the distance, as a brute-force scan does', async () => {
  await withDatabase(async (db) => {
    const r = lcgRandom(7);
    const entries = Array.from({ length: 400 }, () => randomPdq(r));
    const blocklist = new BlocklistRepository(db);
    const added = await blocklist.add(
      entries.map((pdq) => ({ sha256: null, phash: null, pdq, reason: 'shared list' })),
      { source: 'import', moderator, at: AT },
    );
    assert.deepEqual({ ...added, job: undefined }, { added: 400, skipped: 0, job: undefined });
    assert.ok(added.job, 'one hold job for the import');
    const chunks = await db
      .db()
      .selectFrom('blocklist_pdq_chunks')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    assert.equal(Number(chunks.n), 400 * 16, 'sixteen chunk rows per entry');

    // The upload's check answers from this process's copy once built (before, and while it is older than the version
    // asked, in SQL: both are checked here).
    await blocklist.warm();
    let matched = 0;
    for (let i = 0; i < 120; i++) {
      const q = i < 80 ? flipRandom(entries[i]!, 24 + (i % 14), r) : randomPdq(r);
      const expected = entries.some((e) => pdqDistance(e, q) <= 31);
      assert.equal(await blocklist.blocksPdq(q, 31), expected, `query ${i} (in memory)`);
      assert.equal(await pdqBlocklisted(db.db(), q, 31), expected, `query ${i} (SQL)`);
      if (expected) matched++;
    }
    assert.ok(matched > 20 && matched < 80, `both answers exercised (${matched})`);
    assert.equal(await blocklist.blocksPdq(entries[0]!, 0), true, 'distance 0: the same hash');
    assert.equal(await blocklist.blocksPdq(flipRandom(entries[0]!, 1, r), 0), false);

    // The insert's re-check: the same lookup, only for a PDQ of quality ≥ 50.
    const d = db.dialect;
    const near = flipRandom(entries[1]!, 20, r);
    const check = (quality: number) =>
      blocklisted(db.db(), d, 'f'.repeat(64), null, 8, { hash: near, quality, distance: 31 });
    assert.equal(await check(80), true);
    assert.equal(await check(49), false, 'quality under 50 is not matched');

    // The same PDQ again is skipped; a removed entry no longer matches and leaves no chunk rows.
    assert.deepEqual(
      await blocklist.add([{ sha256: null, phash: null, pdq: entries[2]!, reason: 'again' }], {
        source: 'import',
        moderator,
        at: AT,
      }),
      { added: 0, skipped: 1, job: null },
    );
    const listed = (await blocklist.list(0, 1000)).find((e) => e.pdq === entries[2]);
    assert.ok(listed, 'listed with its pdq');
    // Another process's in-memory entries follow additions and removals (the blocklist's version).
    const elsewhere = new BlocklistRepository(db);
    const fresh = randomPdq(r);
    assert.equal(await elsewhere.blocksPdq(fresh, 31), false);
    await blocklist.add([{ sha256: null, phash: null, pdq: fresh, reason: 'new' }], {
      source: 'import',
      moderator,
      at: AT,
    });
    assert.equal(await elsewhere.blocksPdq(flipRandom(fresh, 9, r), 31), true, 'an addition is seen at once');
    assert.equal(await elsewhere.blocksPdq(entries[2]!, 0), true);
    assert.equal(await blocklist.remove(listed.id, { moderator, at: AT }), true);
    assert.equal(await blocklist.blocksPdq(entries[2]!, 0), false);
    assert.equal(await elsewhere.blocksPdq(entries[2]!, 0), false, 'a removal is seen at once');
    assert.equal(await pdqBlocklisted(db.db(), entries[2]!, 0), false);
    const left = await db
      .db()
      .selectFrom('blocklist_pdq_chunks')
      .select('entry_id')
      .where('entry_id', '=', listed.id)
      .execute();
    assert.deepEqual(left, []);
  });
});

for (const scanPage of [undefined, 3]) {
  test(`the hold job holds the visible uploads whose PDQ (quality ≥ 50) is within 31 bits of a new entry${
    scanPage ? ` (scan pages of ${scanPage})` : ''
  }`, async () => {
    await withDatabase(async (db, userId) => {
      const r = lcgRandom(11 + (scanPage ?? 0));
      const entry = randomPdq(r);
      const up = (pdq: string | null, quality: number | null, moderation?: ModerationState) =>
        insertUpload(db, userId, { pdq, quality, ...(moderation ? { moderation } : {}) });
      const match = {
        same: await up(entry, 100),
        at20: await up(flipRandom(entry, 20, r), 90),
        at31: await up(flipRandom(entry, 31, r), 50),
      };
      const spared = {
        at32: await up(flipRandom(entry, 32, r), 100),
        lowQuality: await up(flipRandom(entry, 5, r), 49),
        noPdq: await up(null, null),
        removed: await up(flipRandom(entry, 3, r), 100, 'removed'),
      };
      for (let i = 0; i < 10; i++) await up(randomPdq(r), 100);

      const blocklist = new BlocklistRepository(db, scanPage ? { scanPage } : {});
      const dry = await blocklist.dryRun([{ sha256: null, phash: null, pdq: entry, reason: '' }], 8, 31);
      assert.deepEqual(dry, { added: 1, skipped: 0, matches: 3 });
      await blocklist.add([{ sha256: null, phash: null, pdq: entry, reason: 'shared list' }], {
        source: 'import',
        moderator,
        at: AT,
      });
      assert.deepEqual(await blocklist.holdMatches(100, 8, AT, 31), { entries: 1, held: 3 });
      const states = new Map(
        (await db.db().selectFrom('uploads').select(['id', 'moderation']).execute()).map((x) => [x.id, x.moderation]),
      );
      for (const [name, id] of Object.entries(match)) assert.equal(states.get(id), 'held', `${name} is held`);
      assert.equal(states.get(spared.at32), 'visible');
      assert.equal(states.get(spared.lowQuality), 'visible', 'quality under 50 is not matched');
      assert.equal(states.get(spared.noPdq), 'visible');
      assert.equal(states.get(spared.removed), 'removed');
      const holds = await db.db().selectFrom('modlog').select('target_id').where('action', '=', 'auto_hold').execute();
      assert.deepEqual(holds.map((h) => h.target_id).sort(), Object.values(match).sort(), 'one auto_hold each');
    });
  });
}
