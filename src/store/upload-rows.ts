/**
 * Rules every upload query shares: which uploads a viewer may see, how a transaction takes the upload
 * row's lock before touching what hangs off it (votes, tags), and the lock of a set of stored files that
 * uploads of the same bytes share.
 */
import { createHash } from 'node:crypto';
import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import { hotRank, wilsonLowerBound } from '../domain/ranking.ts';
import type { Viewer } from '../domain/uploads/upload.types.ts';
import type { DB, UploadsTable } from './database-types.ts';
import type { Dialect } from './dialect.ts';

/**
 * SQL over `uploads as u`: what listings show (public and visible: not held or removed), plus the viewer's own
 * that are not removed, plus everything for an admin. Constants are written as literals so that SQLite can
 * match the partial indexes' `where is_private = 0 and moderation = 'visible'`.
 */
export function visibleTo(dialect: Dialect, viewer: Viewer | null): RawBuilder<boolean> {
  if (viewer?.isAdmin) return sql<boolean>`1 = 1`;
  const listed = sql<boolean>`u.is_private = ${sql.raw(dialect.falseLit)} and u.moderation = 'visible'`;
  return viewer
    ? sql<boolean>`((${listed}) or (u.user_id = ${viewer.userId} and u.moderation <> 'removed'))`
    : sql<boolean>`(${listed})`;
}

/**
 * Reads (and on PostgreSQL locks, `for update`) the upload row inside a transaction; undefined when it
 * does not exist. Lock order everywhere: a stored-files lock (`lockMedia`) when one is needed, then the
 * upload row, then what hangs off it. SQLite runs one writer at a time and needs no row lock.
 */
export async function lockUpload<C extends keyof UploadsTable>(
  db: Kysely<DB>,
  dialect: Dialect,
  id: string,
  columns: readonly C[],
): Promise<Pick<Selectable<UploadsTable>, C> | undefined> {
  let q = db.selectFrom('uploads').select(columns).where('id', '=', id);
  if (dialect.name === 'postgres') q = q.forUpdate();
  return (await q.executeTakeFirst()) as Pick<Selectable<UploadsTable>, C> | undefined;
}

/**
 * Takes the lock of a set of stored files (its media key) until the transaction ends. Every change to
 * which rows reference those files happens under it: an insert that shares them, a delete that may release
 * them, and the removal of the files themselves. So a transaction holding it sees, in any statement after
 * this one, every row that references the files — none is committed behind its back — and files whose last
 * row went can never be referenced again (an insert shares only files a row still references under this lock).
 *
 * PostgreSQL: a transaction-level advisory lock on a 64-bit digest of the key (a digest collision only
 * makes two unrelated keys wait for each other). SQLite runs one writing transaction at a time: the
 * caller's first write takes the database's write lock, and a transaction whose reads went stale before
 * it could write is retried whole (SQLITE_BUSY_SNAPSHOT), so nothing needs taking here.
 */
export async function lockMedia(db: Kysely<DB>, dialect: Dialect, mediaKey: string): Promise<void> {
  if (dialect.name !== 'postgres') return;
  const digest = createHash('sha256').update(`pixvote:media:${mediaKey}`).digest();
  await sql`select pg_advisory_xact_lock(${BigInt.asIntN(64, digest.readBigUInt64BE(0)).toString()}::bigint)`.execute(
    db,
  );
}

/** Whether any upload row references these stored files (read in a statement of its own, after `lockMedia`). */
export async function mediaReferenced(db: Kysely<DB>, mediaKey: string): Promise<boolean> {
  const row = await db.selectFrom('uploads').select('id').where('media_key', '=', mediaKey).limit(1).executeTakeFirst();
  return Boolean(row);
}

/**
 * Sets a (locked) upload's vote counters and the ranks they make, in one UPDATE of its row and one of its tag links
 * (which carry the ranks for the tag listings' indexes), and stamps `ranked_at`. First, in the same transaction, the
 * journal of rank moves (m019) gets the keys the row has before the move, copied in one INSERT … SELECT: a ranked
 * listing's cursor lists what moved after its traversal began at the keys of its first move after that.
 */
export async function setVoteCounts(
  db: Kysely<DB>,
  dialect: Dialect,
  upload: { id: string; createdAt: Date },
  counts: { up: number; down: number },
  at: Date,
): Promise<void> {
  const { up, down } = counts;
  const ranks = {
    score: up - down,
    hot_rank: hotRank(up - down, upload.createdAt),
    best_rank: wilsonLowerBound(up, down),
    ranked_at: dialect.date(at),
  };
  // One row per upload and millisecond: a second move in the same one keeps the first's keys (those before both).
  await db
    .insertInto('rank_moves')
    .columns(['upload_id', 'moved_at', 'prev_at', 'score', 'hot_rank', 'best_rank'])
    .expression((eb) =>
      eb
        .selectFrom('uploads as u')
        .select([
          'u.id',
          // PostgreSQL types a bare parameter in a select list as text.
          (dialect.name === 'postgres' ? sql`cast(${at} as timestamptz)` : sql`${dialect.date(at)}`).as('moved_at'),
          'u.ranked_at',
          'u.score',
          'u.hot_rank',
          'u.best_rank',
        ])
        .where('u.id', '=', upload.id),
    )
    .onConflict((oc) => oc.doNothing())
    .execute();
  await db
    .updateTable('uploads')
    .set({ upvotes: up, downvote_count: down, ...ranks })
    .where('id', '=', upload.id)
    .execute();
  await db.updateTable('upload_tags').set(ranks).where('upload_id', '=', upload.id).execute();
}
