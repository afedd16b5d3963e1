/**
 * A thread of the SQLite reader pool (sqlite-readers.ts): one read-only connection to the database file, opened on
 * the first task, and its statements kept prepared (a listing asks the same few shapes again and again). Each task is
 * one statement that returns rows; it runs here, synchronously, so the gateway's event loop only waits for the answer.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { openSqliteReader } from './node-sqlite.ts';

export interface ReadTask {
  path: string;
  sql: string;
  params: readonly unknown[];
}

type Params = Parameters<StatementSync['all']>;

let db: DatabaseSync | undefined;
const statements = new Map<string, StatementSync>();
/** Prepared statements kept per thread; past it the oldest goes (`in (?, ?, …)` lists make many shapes). */
const KEPT_STATEMENTS = 256;

function statement(path: string, sql: string): StatementSync {
  db ??= openSqliteReader(path);
  let stmt = statements.get(sql);
  if (stmt) {
    // Most recently used last: the first key of the map is the one to drop.
    statements.delete(sql);
  } else {
    stmt = db.prepare(sql);
    if (stmt.columns().length === 0) throw new Error(`a reader thread runs statements that return rows only: ${sql}`);
    if (statements.size >= KEPT_STATEMENTS) statements.delete(statements.keys().next().value!);
  }
  statements.set(sql, stmt);
  return stmt;
}

/** The rows of one statement (null-prototype objects: the structured clone back makes them plain). */
export default function read({ path, sql, params }: ReadTask): unknown[] {
  return statement(path, sql).all(...(params as Params));
}
