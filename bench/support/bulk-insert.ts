/**
 * Bulk loading for benchmarks: multi-row inserts in large transactions, secondary indexes rebuilt once
 * after a big load, planner statistics refreshed.
 */
import { CompiledQuery } from 'kysely';
import { postgresOptions, type Database } from '../../src/store/database.ts';

/**
 * Multi-row INSERTs of `rows` (objects with the same keys) inside transactions of 50k rows. SQLite: VALUES
 * lists under its parameter limit. PostgreSQL: one array per column through `unnest`, which it parses an
 * order of magnitude faster than a VALUES list of thousands of parameters.
 */
export async function insertRows(
  db: Database,
  table: string,
  rows: ReadonlyArray<Record<string, unknown>>,
  valueSql?: Record<string, string>,
): Promise<void> {
  if (!rows.length) return;
  const pg = db.dialect.name === 'postgres';
  const columns = Object.keys(rows[0]!);
  const types = pg ? await columnTypes(db, table) : null;
  const perBatch = pg ? 10_000 : Math.max(1, Math.floor(30_000 / columns.length));
  const perTransaction = 50_000;
  for (let t = 0; t < rows.length; t += perTransaction) {
    await db.transaction(async (_em, k) => {
      for (let b = t; b < Math.min(rows.length, t + perTransaction); b += perBatch) {
        const batch = rows.slice(b, Math.min(b + perBatch, t + perTransaction, rows.length));
        if (types) {
          const arrays = columns.map((c) => batch.map((row) => row[c]));
          const casts = columns.map((c, i) => `$${i + 1}::${types.get(c) ?? 'text'}[]`);
          await k.executeQuery(
            CompiledQuery.raw(
              `insert into ${table} (${columns.join(',')}) select * from unnest(${casts.join(',')})`,
              arrays,
            ),
          );
          continue;
        }
        const params: unknown[] = [];
        const tuples = batch.map((row) => {
          const cells = columns.map((c) => {
            params.push(row[c]);
            return valueSql?.[c] ?? '?';
          });
          return `(${cells.join(',')})`;
        });
        await k.executeQuery(
          CompiledQuery.raw(`insert into ${table} (${columns.join(',')}) values ${tuples.join(',')}`, params),
        );
      }
    });
  }
}

async function columnTypes(db: Database, table: string): Promise<Map<string, string>> {
  const { rows } = await db
    .db()
    .executeQuery<{ column_name: string; udt_name: string }>(
      CompiledQuery.raw(
        'select column_name, udt_name from information_schema.columns ' +
          'where table_schema = current_schema() and table_name = $1',
        [table],
      ),
    );
  return new Map(rows.map((r) => [r.column_name, r.udt_name]));
}

/** Planner statistics, as a database that has been running a while has them (PostgreSQL's autovacuum). */
/**
 * Statistics, and on PostgreSQL the visibility map index-only scans rely on: what autovacuum keeps on a live database.
 */
export async function analyze(db: Database): Promise<void> {
  await longStatements(db, [db.dialect.name === 'postgres' ? 'vacuum analyze' : 'analyze']);
}

/**
 * Runs a bulk load with the secondary indexes of `tables` dropped, then recreates them from their own
 * definitions: building an index once by sorting is several times faster than growing it row by row (on
 * PostgreSQL with 1 GB of maintenance memory per build, so that 10M rows sort in memory).
 */
export async function withIndexesDeferred<T>(
  db: Database,
  tables: readonly string[],
  load: () => Promise<T>,
): Promise<T> {
  const k = db.db();
  const pg = db.dialect.name === 'postgres';
  const rows: Array<{ name: string; sql: string }> = [];
  for (const table of tables) {
    const found = await k.executeQuery<{ name: string; sql: string }>(
      pg
        ? CompiledQuery.raw(
            `select i.indexname as name, i.indexdef as sql from pg_indexes i
            where i.tablename = $1 and i.schemaname = current_schema()
            and not exists (select 1 from pg_constraint c where c.conname = i.indexname)`,
            [table],
          )
        : CompiledQuery.raw(
            `select name, sql from sqlite_master where type = 'index' and tbl_name = ? and sql is not null`,
            [table],
          ),
    );
    rows.push(...found.rows);
  }
  for (const r of rows) await k.executeQuery(CompiledQuery.raw(`drop index ${r.name}`));
  try {
    return await load();
  } finally {
    await longStatements(
      db,
      rows.map((r) => r.sql),
    );
  }
}

/**
 * Statements that may run for minutes (index builds, VACUUM over 10M rows), one after the other. On PostgreSQL on a
 * connection of their own with 1 GB of maintenance memory: the app's pool gives up on a query after 10 s
 * (`query_timeout`), and a statement given up on is left idle in its transaction.
 */
async function longStatements(db: Database, statements: readonly string[]): Promise<void> {
  if (db.dialect.name !== 'postgres') {
    for (const text of statements) await db.db().executeQuery(CompiledQuery.raw(text));
    return;
  }
  const { default: pg } = await import('pg');
  const client = new pg.Client({ ...postgresOptions(db.orm, {}), query_timeout: 0, statement_timeout: 0 });
  await client.connect();
  try {
    await client.query(`set maintenance_work_mem = '1GB'`);
    for (const text of statements) await client.query(text);
  } finally {
    await client.end();
  }
}
