/**
 * Every feed page is read in an index's order (issue 29): for each sort, with and without a tag, with type=link,
 * by offset and after a cursor, the database's own plan has no sort step. So a page reads its own rows (plus the
 * few it skips), not every row before it or every upload of a tag. On PostgreSQL the planner is told to avoid sorts
 * and sequential scans: a plan that still sorts has no index to read the order from.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompiledQuery, sql } from 'kysely';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { feedKeysQuery } from '../../src/store/repositories/feed.repository.ts';
import { tagSearchQueries } from '../../src/store/repositories/tag.repository.ts';
import type { FeedQuery, PageStart } from '../../src/domain/feeds/feed.service.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres } from '../support/env.ts';

/** The database's plan for `query`; on PostgreSQL with sorts and sequential scans priced out. */
function planOf(db: Database, query: CompiledQuery): Promise<string> {
  return db.transaction(async (_em, tx) => {
    const explain = <R>(prefix: string) =>
      tx.executeQuery<R>(CompiledQuery.raw(`${prefix} ${query.sql}`, [...query.parameters]));
    if (db.dialect.name === 'postgres') {
      await sql`set local enable_sort = off`.execute(tx);
      await sql`set local enable_seqscan = off`.execute(tx);
      const r = await explain<{ 'QUERY PLAN': string }>('explain');
      return r.rows.map((x) => x['QUERY PLAN']).join('\n');
    }
    const r = await explain<{ detail: string }>('explain query plan');
    return r.rows.map((x) => x.detail).join('\n');
  });
}

function assertNoSort(dialect: string, label: string, plan: string): void {
  if (dialect === 'postgres') assert.doesNotMatch(plan, /\bSort\b/, `${label}:\n${plan}`);
  else assert.doesNotMatch(plan, /TEMP B-TREE/, `${label}:\n${plan}`);
}

test('every feed order, filter and page start is read from an index, never sorted', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'pixvote-plans-'));
  const pg = onPostgres ? await createTestDatabase() : null;
  const db = await openDatabase({ databaseUrl: pg?.url ?? null, sqlitePath: join(dir, 'app.db') });
  try {
    const d = db.dialect;
    const after: PageStart = {
      after: { since: new Date(), pos: { key: 3, createdAt: new Date(), id: randomUUID() } },
    };
    const plans: string[] = [];
    for (const sort of ['new', 'top', 'hot', 'best'] as const) {
      for (const filter of [{}, { type: 'link' as const }, { type: 'image' as const }]) {
        for (const tagId of [null, randomUUID()]) {
          if (tagId && filter.type) continue;
          for (const start of [{ offset: 120 }, after]) {
            const q: FeedQuery = { page: 1, limit: 12, sort, ...filter };
            const tagged = tagId ? 'tag' : '';
            const label = `${sort} ${JSON.stringify(filter)} ${tagged} ${'after' in start ? 'cursor' : 'offset'}`;
            const query = feedKeysQuery(d, q, start, 13, tagId);
            const plan = await planOf(db, query.compile(db.db()));
            plans.push(`${label}\n${plan}`);
            if (process.env.SHOW_PLANS) console.log(`${label}\n${plan}`);
            assertNoSort(d.name, label, plan);
          }
        }
      }
    }
    assert.equal(plans.length, 4 * (3 * 2 + 2));
  } finally {
    await db.close();
    await pg?.drop();
    await rm(dir, { recursive: true, force: true });
  }
});

test('tag search (with and without a prefix, first or later page) is read from its index, never sorted', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'pixvote-plans-'));
  const pg = onPostgres ? await createTestDatabase() : null;
  const db = await openDatabase({ databaseUrl: pg?.url ?? null, sqlitePath: join(dir, 'app.db') });
  try {
    for (const prefix of ['', 'ca']) {
      for (const after of [null, { uploads: 3, id: randomUUID() }]) {
        const label = `tags q=${prefix} ${after ? 'cursor' : 'first'}`;
        for (const [i, query] of tagSearchQueries(db.db(), prefix, after, 11).entries()) {
          const plan = await planOf(db, query.compile());
          if (process.env.SHOW_PLANS) console.log(`${label} ${i}\n${plan}`);
          assertNoSort(db.dialect.name, label, plan);
          assert.match(plan, /tags_search_index/, `${label}:\n${plan}`);
          // Seeks, not a scan from the index's start filtered: the count is an index condition.
          if (after && db.dialect.name === 'postgres') assert.match(plan, /Index Cond: .*upload_count/, plan);
        }
      }
    }
  } finally {
    await db.close();
    await pg?.drop();
    await rm(dir, { recursive: true, force: true });
  }
});
