/**
 * The Kysely dialect over node:sqlite (node-sqlite.ts opens and sets up each connection). Apart from node-sqlite.ts so
 * that the SQLite reader threads, which speak to node:sqlite directly, do not load Kysely (~0.2 s of CPU a thread).
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { SqliteDialect, type SqliteDatabase, type SqliteStatement } from 'kysely';
import { KEPT_STATEMENTS, keptStatements, openSqlite } from './node-sqlite.ts';

/** The Kysely dialect for the database file at `path`; each connection is opened by `openSqlite`. */
export function nodeSqliteDialect(path: string): SqliteDialect {
  return new SqliteDialect({ database: async () => asKyselyDatabase(await openSqlite(path)) });
}

/** node:sqlite's DatabaseSync in the shape Kysely's SQLite driver speaks (better-sqlite3's). */
function asKyselyDatabase(db: DatabaseSync): SqliteDatabase {
  const statement = keptStatements((sql) => asKyselyStatement(db, sql), KEPT_STATEMENTS);
  return {
    prepare: statement,
    close: () => db.close(),
  };
}

function asKyselyStatement(db: DatabaseSync, sql: string): SqliteStatement {
  type Params = Parameters<StatementSync['all']>;
  const stmt = db.prepare(sql);
  return {
    // A statement that returns rows (a select, a pragma, an insert … returning), as better-sqlite3 decides it.
    reader: stmt.columns().length > 0,
    all: (params) => stmt.all(...(params as Params)).map(plainRow),
    run: (params) => stmt.run(...(params as Params)),
    // A statement of its own: a kept one stepped by a stream would be reset by the next query of the same text.
    iterate: function* (params) {
      for (const row of db.prepare(sql).iterate(...(params as Params))) yield plainRow(row);
    },
  };
}

/** Rows come with a null prototype; callers (and deepEqual in tests) expect plain objects. */
const plainRow = (row: unknown): unknown => ({ ...(row as object) });
