import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { ReferenceKind, type EntityMetadata } from '@mikro-orm/core';
import { DatabaseSchema, SchemaComparator } from '@mikro-orm/sql';
import { sql } from 'kysely';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { ALL_ENTITIES } from '../../src/store/entities/index.ts';
import { MIGRATIONS } from '../../src/store/migrations/index.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres } from '../support/env.ts';

/** Tables no entity declares: MikroORM's record of the migrations applied (its Migrator creates it). */
const NOT_ENTITIES = ['schema_migrations'];

test(
  'the hand-written migrations create exactly the tables and columns the entities declare (names, types, ' +
    'nullability, defaults), and re-running them is a no-op',
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pixvote-schema-'));
    const pg = onPostgres ? await createTestDatabase({ empty: true }) : null;
    const open = () => openDatabase({ databaseUrl: pg?.url ?? null, sqlitePath: join(dir, 'app.db') });
    const db = await open();
    try {
      const metas = entityTables(db);
      assert.equal(metas.length, ALL_ENTITIES.length, 'every entity has its table');
      assert.deepEqual(
        await tablesOf(db),
        [...metas.map((m) => m.tableName), ...NOT_ENTITIES].sort(),
        "the tables: one entity each, but MikroORM's own",
      );
      for (const meta of metas) {
        assert.deepEqual(await columnsOf(db, meta.tableName), mappedColumns(meta), `table ${meta.tableName}`);
      }
      assert.deepEqual(await columnDifferences(db), [], 'the columns as MikroORM compares them');
      await db.close();
      // Opening again finds nothing pending.
      const again = await open();
      const applied = await again.db().selectFrom('schema_migrations').select('name').execute();
      // Every migration of migrations/index.ts, in its order: a new one needs no line here.
      assert.deepEqual(
        applied.map((r) => r.name),
        MIGRATIONS.map((M) => new M(null as never, null as never).name),
      );
      await again.close();
    } finally {
      await pg?.drop();
      await rm(dir, { recursive: true, force: true });
    }
  },
);

/** The entities' tables, as the ORM's metadata has them. */
function entityTables(db: Database): EntityMetadata[] {
  return [...db.orm.getMetadata().getAll().values()].filter((m) => m.tableName && !m.embeddable);
}

/**
 * Every column on which the migrated database and the entities differ, as MikroORM's own schema comparison sees
 * them (the diff `schema:update` would apply): added, removed, or changed in type, nullability or default. Indexes,
 * foreign keys and triggers are left to the migrations (partial and covering indexes that entities do not declare).
 */
async function columnDifferences(db: Database): Promise<string[]> {
  const em = db.em();
  const platform = em.getPlatform();
  const config = db.orm.config;
  const schemaName = config.get('schema') ?? platform.getDefaultSchemaName();
  const metas = entityTables(db);
  const target = DatabaseSchema.fromMetadata(metas, platform, config, schemaName);
  // Only the entities' tables are read back (not MikroORM's own, nor the sqlite-vec virtual table).
  const tables = metas.map((m) => m.tableName);
  const actual = await DatabaseSchema.create(
    em.getConnection(),
    platform,
    config,
    schemaName,
    target.getNamespaces(),
    tables,
  );
  const diff = new SchemaComparator(platform).compare(actual, target);
  const out = Object.keys(diff.newTables).map((t) => `${t}: missing`);
  for (const t of Object.values(diff.changedTables)) {
    out.push(...Object.keys(t.addedColumns).map((c) => `${t.name}.${c}: missing`));
    out.push(...Object.keys(t.removedColumns).map((c) => `${t.name}.${c}: not in the entity`));
    out.push(...Object.keys(t.renamedColumns).map((c) => `${t.name}.${c}: named otherwise in the entity`));
    const meta = metas.find((m) => m.tableName === t.name);
    for (const [c, d] of Object.entries(t.changedColumns)) {
      // A boolean's default is `0` in the SQLite migrations and `false` in the ORM's metadata: the same value
      // (SQLite reads `false` as 0), but MikroORM's comparison sees the SQLite column as an integer and compares
      // the text. Both are compared as booleans, as MikroORM does on PostgreSQL.
      const prop = Object.values(meta?.properties ?? {}).find((p) => p.fieldNames?.includes(c));
      if (prop?.runtimeType === 'boolean' && isFalse(d.fromColumn.default) === isFalse(d.column.default)) {
        d.changedProperties.delete('default');
      }
      if (!d.changedProperties.size) continue;
      const changed = [...d.changedProperties].map(
        (k) =>
          `${k} ${JSON.stringify(d.fromColumn[k as keyof typeof d.fromColumn])} → ` +
          JSON.stringify(d.column[k as keyof typeof d.column]),
      );
      out.push(`${t.name}.${c}: ${changed.join(', ')}`);
    }
  }
  return out.sort();
}

const isFalse = (v: unknown) => ['0', 'false'].includes(String(v).toLowerCase());

/** The columns an entity maps (its relations to many are other tables' columns), sorted. */
function mappedColumns(meta: EntityMetadata): string[] {
  const stored = Object.values(meta.properties).filter(
    (p) => p.persist !== false && p.kind !== ReferenceKind.ONE_TO_MANY && p.kind !== ReferenceKind.MANY_TO_MANY,
  );
  return stored.flatMap((p) => p.fieldNames ?? []).sort();
}

/** The columns of a table in the real database. */
async function columnsOf(db: Database, table: string): Promise<string[]> {
  const query =
    db.dialect.name === 'postgres'
      ? sql<{ name: string }>`select column_name as name from information_schema.columns
          where table_name = ${table} and table_schema = current_schema()`
      : sql<{ name: string }>`select name from pragma_table_info(${table})`;
  return (await query.execute(db.db())).rows.map((r) => r.name).sort();
}

/** Every table of the real database but the sqlite-vec index's own (SQLite only, reached with raw SQL). */
async function tablesOf(db: Database): Promise<string[]> {
  const query =
    db.dialect.name === 'postgres'
      ? sql<{ name: string }>`select table_name as name from information_schema.tables
          where table_schema = current_schema()`
      : sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`;
  return (await query.execute(db.db())).rows
    .map((r) => r.name)
    .filter((n) => !n.startsWith('upload_phash_vec'))
    .sort();
}

test('timestamps, booleans and JSON come back from each database as the Kysely schema declares them', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'pixvote-schema-'));
  const pg = onPostgres ? await createTestDatabase({ empty: true }) : null;
  const db = await openDatabase({ databaseUrl: pg?.url ?? null, sqlitePath: join(dir, 'app.db') });
  try {
    const d = db.dialect;
    const at = new Date('2024-05-06T07:08:09.123Z');
    const userId = randomUUID();
    const id = randomUUID();
    const variants = { thumb: { width: 320, height: 240, bytes: 1000 } };
    const email = 't@example.test';
    await db
      .db()
      .insertInto('users')
      .values({
        id: userId,
        username: 'typed',
        username_key: 'typed',
        email,
        email_key: email,
        password_hash: 'x',
        created_at: d.date(at),
      })
      .execute();
    await db
      .db()
      .insertInto('uploads')
      .values({
        id,
        user_id: userId,
        upload_type: 'image',
        is_private: d.bool(true),
        animated: d.bool(false),
        created_at: d.date(at),
        variants: JSON.stringify(variants),
      })
      .execute();
    const row = await db
      .db()
      .selectFrom('uploads')
      .select(['created_at', 'is_private', 'animated', 'variants', 'upvotes', 'description'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    if (d.name === 'postgres') {
      assert.equal(typeof row.created_at, 'string', 'a timestamp arrives as text (MikroORM leaves it unparsed)');
      assert.equal(row.is_private, true);
      assert.equal(row.animated, false);
      assert.deepEqual(row.variants, variants, 'jsonb arrives parsed');
    } else {
      assert.equal(row.created_at, at.getTime(), 'a timestamp is epoch milliseconds');
      assert.equal(row.is_private, 1);
      assert.equal(row.animated, 0);
      assert.equal(row.variants, JSON.stringify(variants), 'json arrives as its text');
    }
    assert.equal(d.readDate(row.created_at).toISOString(), at.toISOString());
    assert.equal(d.readBool(row.is_private), true);
    assert.equal(row.upvotes, 0, 'a default the insert left out');
    assert.equal(row.description, '');
  } finally {
    await db.close();
    await pg?.drop();
    await rm(dir, { recursive: true, force: true });
  }
});
