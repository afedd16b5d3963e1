/**
 * A large import on PostgreSQL leaves the blocklist's statistics fresh (blocklist.repository.ts, analyzeBlocklist).
 * Each chunk row's foreign-key check is planned from them once per connection: planned while the blocklist was
 * analyzed empty, it scanned the whole table for every row, and an import of 3 000 PDQ entries took 5.2 s instead
 * of 0.56 s (339 entries/s through the server, issue 44 item 5). The test reads what the planner will read
 * (pg_class.reltuples), not a time: analyzed empty before the import, it must count the import's rows after it.
 * SQLite has no such plan (the step runs on its own connection, without foreign-key checks of a cached plan).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { BlocklistRepository } from '../../src/store/moderation/blocklist.repository.ts';
import { onPostgres } from '../support/env.ts';
import { withStoreDatabase } from '../support/store-db.ts';

const AT = new Date(Date.UTC(2026, 1, 1));

test('an import on PostgreSQL leaves fresh statistics for the foreign-key checks', { skip: !onPostgres }, async () => {
  await withStoreDatabase('blocklist-stats', AT, async (db) => {
    await sql`vacuum analyze blocklist`.execute(db.db());
    await sql`vacuum analyze blocklist_pdq_chunks`.execute(db.db());
    const entries = Array.from({ length: 2000 }, () => ({
      sha256: null,
      phash: null,
      pdq: randomBytes(32).toString('hex'),
      reason: 'import',
    }));
    const r = await new BlocklistRepository(db).add(entries, { source: 'import', moderator: null, at: AT });
    assert.equal(r.added, 2000);
    const stats = await sql<{ relname: string; reltuples: number }>`
      select relname, reltuples from pg_class where relname in ('blocklist', 'blocklist_pdq_chunks')`.execute(db.db());
    const tuples = new Map(stats.rows.map((s) => [s.relname, Number(s.reltuples)]));
    // Analyzed when the import doubled the table: at least half of what it wrote is known to the planner.
    assert.ok(tuples.get('blocklist')! >= 1000, `blocklist reltuples ${tuples.get('blocklist')}`);
    assert.ok(
      tuples.get('blocklist_pdq_chunks')! >= 1000 * 16,
      `chunks reltuples ${tuples.get('blocklist_pdq_chunks')}`,
    );
  });
});
