/**
 * A thread of the SQLite reader pool (sqlite-readers.ts): one read-only connection to the database file, opened on
 * the first task, and its statements kept prepared (a listing asks the same few shapes again and again). Each task is
 * one statement that returns rows; it runs here, synchronously, so the gateway's event loop only waits for the answer.
 */
import type { StatementSync } from 'node:sqlite';
import { KEPT_STATEMENTS, keptStatements, openSqliteReader } from './node-sqlite.ts';

export interface ReadTask {
  path: string;
  sql: string;
  params: readonly unknown[];
}

type Params = Parameters<StatementSync['all']>;

let kept: ((sql: string) => StatementSync) | undefined;

function statement(path: string, sql: string): StatementSync {
  if (!kept) {
    const conn = openSqliteReader(path);
    kept = keptStatements((text) => {
      const stmt = conn.prepare(text);
      if (stmt.columns().length === 0)
        throw new Error(`a reader thread runs statements that return rows only: ${text}`);
      return stmt;
    }, KEPT_STATEMENTS);
  }
  return kept(sql);
}

/** The rows of one statement (null-prototype objects: the structured clone back makes them plain). */
export default function read({ path, sql, params }: ReadTask): unknown[] {
  return statement(path, sql).all(...(params as Params));
}
