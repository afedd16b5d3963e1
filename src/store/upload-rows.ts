/**
 * Two rules every upload query shares: which uploads a viewer may see, and how a transaction takes the
 * upload row's lock before touching what hangs off it (votes, tags, shared files).
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Viewer } from '../domain/uploads/upload.types.ts';
import type { Dialect } from './dialect.ts';

/**
 * SQL over `uploads as u`: public uploads, plus the viewer's own, plus everything for an admin.
 * `false` is written as a literal so SQLite can match the partial indexes' `where is_private = 0`.
 */
export function visibleTo(dialect: Dialect, viewer: Viewer | null): RawBuilder<boolean> {
  if (viewer?.isAdmin) return sql<boolean>`1 = 1`;
  const isPublic = sql<boolean>`u.is_private = ${sql.raw(dialect.falseLit)}`;
  return viewer ? sql<boolean>`(${isPublic} or u.user_id = ${viewer.userId})` : isPublic;
}

/**
 * Reads (and on PostgreSQL locks, `for update`) the upload row inside a transaction; undefined when it
 * does not exist. Lock order everywhere: the upload row first, then what hangs off it. SQLite runs one
 * writer at a time and needs no row lock.
 */
export async function lockUpload<C extends string>(db: Kysely<any>, dialect: Dialect, id: string, columns: readonly C[]): Promise<Record<C, unknown> | undefined> {
  let q = db.selectFrom('uploads').select(columns as readonly string[]).where('id', '=', id);
  if (dialect.name === 'postgres') q = q.forUpdate();
  return (await q.executeTakeFirst()) as Record<C, unknown> | undefined;
}

/**
 * Locks (PostgreSQL) every upload row sharing a set of stored files, in id order, so that two transactions
 * deleting the last two users of those files run one after the other: each sees whether the other's row is
 * still there, and exactly one of them finds itself the last. Returns the ids still sharing them.
 */
export async function lockSharers(db: Kysely<any>, dialect: Dialect, mediaKey: string): Promise<string[]> {
  let q = db.selectFrom('uploads').select('id').where('media_key', '=', mediaKey).orderBy('id');
  if (dialect.name === 'postgres') q = q.forUpdate();
  return (await q.execute()).map((r) => r.id as string);
}
