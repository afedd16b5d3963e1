/**
 * Changes of an upload's moderation state, inside the caller's transaction and under the upload's lock: the
 * listing counts of its tags move with it (changingListing), and the modlog line is written in the same commit.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { NewModlogEntry } from '../../domain/moderation/moderation.types.ts';
import type { ModerationState } from '../../domain/uploads/upload.types.ts';
import { hotRank } from '../../domain/ranking.ts';
import type { DB } from '../database-types.ts';
import type { Dialect } from '../dialect.ts';
import { changingListing } from '../repositories/tag-links.ts';
import { lockMedia, lockUpload, mediaReferenced } from '../upload-rows.ts';
import type { SimilarityIndex } from '../similarity/similarity-index.ts';
import { uploadChunkColumns } from '../similarity/hamming.ts';
import { appendModlog } from './modlog.ts';
import { emitQueueItem, emitUploadEvent, inQueue } from '../webhooks/outbox.ts';

/**
 * Holds a visible upload (automatic rules: reports, the blocklist); true when it was visible and is now held,
 * false when it was not visible (held, removed) or is gone. Exactly once under concurrency: the state is read
 * under the row's lock.
 */
export async function holdUpload(
  db: Kysely<DB>,
  d: Dialect,
  uploadId: string,
  opts: { at: Date; line: Omit<NewModlogEntry, 'target'> },
): Promise<boolean> {
  const row = await lockUpload(db, d, uploadId, ['moderation']);
  if (row?.moderation !== 'visible') return false;
  // A held upload is a queue item: a new one unless its reports or person flag made it one already.
  const queued = await inQueue(db, d, uploadId);
  await setState(db, d, uploadId, 'held', opts.at);
  await appendModlog(db, d, [{ ...opts.line, target: { type: 'upload', id: uploadId } }], opts.at);
  await emitUploadEvent(db, d, 'upload.held', uploadId, opts.at);
  if (!queued) await emitQueueItem(db, d, uploadId, 'held', opts.at);
  return true;
}

/**
 * Sets the state (and the time a moderator last acted), moving the tag counts when listings gain or lose it, and the
 * upload's place in the open queue.
 */
export async function setState(
  db: Kysely<DB>,
  d: Dialect,
  uploadId: string,
  state: ModerationState,
  at: Date,
  extra: { personFlag?: boolean } = {},
): Promise<void> {
  await changingListing(db, d, uploadId, () =>
    db
      .updateTable('uploads')
      .set({
        moderation: state,
        moderated_at: d.date(at),
        ...(extra.personFlag === undefined ? {} : { person_flag: d.bool(extra.personFlag) }),
      })
      .where('id', '=', uploadId)
      .execute(),
  );
  await refreshQueueKey(db, d, uploadId);
}

/** How far apart held and not-held uploads are in the open queue's key: more than any upload's report count. */
export const QUEUE_HELD_STEP = 1_000_000_000;

/**
 * The upload's place in the open moderation queue (`queue_key`, m020) from its state, person flag and `open`, its
 * count of open reports as of the statement that sets it: null when it is not in the queue (removed, or visible
 * with neither), otherwise held first, then most open reports.
 */
function queueKeyOf(d: Dialect, open: RawBuilder<number>) {
  return sql<number | null>`case
    when moderation = 'removed' then null
    when moderation = 'held' then 0 - (${open})
    when person_flag = ${sql.raw(d.trueLit)} or (${open}) > 0 then ${QUEUE_HELD_STEP} - (${open})
    else null end`;
}

/** Sets the upload's place in the open queue; called in the transaction of every change of its state or flag. */
export async function refreshQueueKey(db: Kysely<DB>, d: Dialect, uploadId: string): Promise<void> {
  await db
    .updateTable('uploads')
    .set({ queue_key: queueKeyOf(d, sql<number>`open_reports`) })
    .where('id', '=', uploadId)
    .execute();
}

/**
 * Counts a new open report in the upload's `open_reports` and moves its place in the queue, in one UPDATE (whose
 * right-hand sides read the row as it was, hence `open_reports + 1` in both). Returns the new count.
 */
export async function countOpenReport(db: Kysely<DB>, d: Dialect, uploadId: string): Promise<number> {
  const counted = sql<number>`open_reports + 1`;
  const row = await db
    .updateTable('uploads')
    .set({ open_reports: counted, queue_key: queueKeyOf(d, counted) })
    .where('id', '=', uploadId)
    .returning('open_reports')
    .executeTakeFirst();
  return Number(row?.open_reports ?? 0);
}

/**
 * Turns a (locked, already unlisted) upload into a tombstone: votes and tag links go, the counters return to
 * zero, and the hashes and stored-files key are cleared, so that nothing matches it or shares its files any
 * more. Returns the key of files no other row references (journalled as garbage in this transaction; the caller
 * removes them after the commit, and the media sweep retries a failure), or null.
 */
export async function buryUpload(
  db: Kysely<DB>,
  d: Dialect,
  similarity: SimilarityIndex,
  uploadId: string,
  mediaKey: string | null,
  createdAt: Date,
): Promise<string | null> {
  await db.deleteFrom('votes').where('upload_id', '=', uploadId).execute();
  await db.deleteFrom('upload_tags').where('upload_id', '=', uploadId).execute();
  await similarity.remove(db, uploadId);
  await db
    .updateTable('uploads')
    .set({
      upvotes: 0,
      downvote_count: 0,
      score: 0,
      best_rank: 0,
      hot_rank: hotRank(0, createdAt),
      sha256: null,
      phash: null,
      ...uploadChunkColumns(null),
      pdq: null,
      pdq_quality: null,
      media_key: null,
      person_flag: d.bool(false),
    })
    .where('id', '=', uploadId)
    .execute();
  if (!mediaKey || (await mediaReferenced(db, mediaKey))) return null;
  await db
    .insertInto('media_garbage')
    .values({ media_key: mediaKey, created_at: d.date(createdAt) })
    .onConflict((oc) => oc.doNothing())
    .execute();
  return mediaKey;
}

/** Takes the stored files' lock (when the upload has files), then the upload row's: the order every writer uses. */
export async function lockForRemoval(db: Kysely<DB>, d: Dialect, uploadId: string) {
  const own = await db.selectFrom('uploads').select('media_key').where('id', '=', uploadId).executeTakeFirst();
  if (!own) return undefined;
  if (own.media_key) await lockMedia(db, d, own.media_key);
  return lockUpload(db, d, uploadId, [
    'id',
    'moderation',
    'media_key',
    'sha256',
    'phash',
    'pdq',
    'pdq_quality',
    'upload_type',
    'created_at',
    'person_flag',
  ]);
}

/** Closes the upload's open reports (a moderator's approve or remove decides them). */
export async function closeOpenReports(db: Kysely<DB>, d: Dialect, uploadId: string, at: Date): Promise<void> {
  await db
    .updateTable('reports')
    .set({ status: 'closed', closed_at: d.date(at) })
    .where('upload_id', '=', uploadId)
    .where('status', '=', 'open')
    .execute();
  await db
    .updateTable('uploads')
    .set({ open_reports: 0, queue_key: queueKeyOf(d, sql<number>`0`) })
    .where('id', '=', uploadId)
    .execute();
}

/**
 * Removes an upload locked by `lockForRemoval`: its open reports closed, the state `removed`, its votes, tag links
 * and hashes gone (`buryUpload`, unless it was removed already), and its modlog line. Returns the stored files it
 * released, to be removed after the commit.
 */
export async function removeUpload(
  db: Kysely<DB>,
  d: Dialect,
  similarity: SimilarityIndex,
  row: NonNullable<Awaited<ReturnType<typeof lockForRemoval>>>,
  opts: { at: Date; line: Omit<NewModlogEntry, 'target' | 'action'> },
): Promise<string | null> {
  await closeOpenReports(db, d, row.id, opts.at);
  await setState(db, d, row.id, 'removed', opts.at);
  const released =
    row.moderation === 'removed'
      ? null
      : await buryUpload(db, d, similarity, row.id, row.media_key, d.readDate(row.created_at));
  await appendModlog(db, d, [{ ...opts.line, action: 'remove', target: { type: 'upload', id: row.id } }], opts.at);
  if (row.moderation !== 'removed') await emitUploadEvent(db, d, 'upload.removed', row.id, opts.at);
  return released;
}
