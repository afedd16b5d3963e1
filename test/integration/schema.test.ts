import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ReferenceKind } from '@mikro-orm/core';
import { sql } from 'kysely';
import { openDatabase } from '../../src/store/database.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres } from '../support/env.ts';

test('the hand-written migrations create exactly the columns the MikroORM entities map, and re-running them is a no-op', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'pixvote-schema-'));
  const pg = onPostgres ? await createTestDatabase() : null;
  const open = () => openDatabase({ databaseUrl: pg?.url ?? null, sqlitePath: join(dir, 'app.db') });
  const db = await open();
  try {
    let checked = 0;
    for (const meta of db.orm.getMetadata().getAll().values()) {
      if (!meta.tableName || meta.embeddable) continue;
      const mapped = new Set(Object.values(meta.properties).flatMap((p) => (p.persist === false || p.kind === ReferenceKind.ONE_TO_MANY || p.kind === ReferenceKind.MANY_TO_MANY ? [] : (p.fieldNames ?? []))));
      const { rows } =
        db.dialect.name === 'postgres'
          ? await sql<{ name: string }>`select column_name as name from information_schema.columns where table_name = ${meta.tableName} and table_schema = current_schema()`.execute(db.db())
          : await sql<{ name: string }>`select name from pragma_table_info(${meta.tableName})`.execute(db.db());
      const actual = new Set(rows.map((r) => r.name));
      assert.deepEqual([...mapped].sort(), [...actual].sort(), `table ${meta.tableName}`);
      checked++;
    }
    assert.equal(checked, 7, 'every entity was compared');
    await db.close();
    // Opening again finds nothing pending.
    const again = await open();
    const applied = await again.db().selectFrom('schema_migrations').select('name').execute();
    assert.deepEqual(applied.map((r) => r.name), ['m001-initial', 'm002-media-garbage', 'm003-covering-phash-indexes', 'm006-idempotency-leases', 'm007-listed-tag-counts', 'm008-fold-tag-names']);
    await again.close();
  } finally {
    await pg?.drop();
    await rm(dir, { recursive: true, force: true });
  }
});
