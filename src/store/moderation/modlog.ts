/** The modlog's one write: lines appended inside the transaction of the change they record. */
import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { PageStart } from '../../domain/feeds/cursor.ts';
import type { ModAction, ModlogEntry, ModlogLine, NewModlogEntry } from '../../domain/moderation/moderation.types.ts';
import type { ModerationState } from '../../domain/uploads/upload.types.ts';
import type { DB } from '../database-types.ts';
import type { Dialect } from '../dialect.ts';

/** How much of a blocklist entry's hash the modlog shows: enough to tell entries apart, not to match files. */
const HASH_SHOWN = 12;

/** Appends lines (never updates or deletes: the tables' triggers refuse it, and no code path asks). */
export async function appendModlog(db: Kysely<DB>, d: Dialect, entries: NewModlogEntry[], at: Date): Promise<void> {
  for (let i = 0; i < entries.length; i += 500) {
    await db
      .insertInto('modlog')
      .values(
        entries.slice(i, i + 500).map((e) => ({
          id: randomUUID(),
          at: d.date(at),
          action: e.action,
          target_type: e.target.type,
          target_id: e.target.id,
          reason: e.reason,
          moderator_id: e.moderator?.id ?? null,
          moderator_name: e.moderator?.username ?? null,
        })),
      )
      .execute();
  }
}

/**
 * A page of the modlog, newest first, each upload target with its state now (privacy and moderation; a removed
 * upload's tombstone keeps its privacy), so that the public view can leave out what it may not name; each user or
 * blocklist target with its name (the user's, the entry's hash).
 */
export async function readModlog(db: Kysely<DB>, d: Dialect, start: PageStart, limit: number): Promise<ModlogLine[]> {
  let query = db.selectFrom('modlog as m');
  // After a cursor: a seek in (at, id) order, the index's.
  if ('after' in start) {
    const { createdAt, id } = start.after.pos;
    query = query.where(sql<boolean>`(m.at, m.id) < (${d.date(createdAt)}, ${id})`);
  }
  const rows = await query
    .leftJoin('uploads as u', (j) => j.onRef('u.id', '=', 'm.target_id').on('m.target_type', '=', 'upload'))
    .leftJoin('users as t', (j) => j.onRef('t.id', '=', 'm.target_id').on('m.target_type', '=', 'user'))
    .leftJoin('blocklist as b', (j) => j.onRef('b.id', '=', 'm.target_id').on('m.target_type', '=', 'blocklist'))
    .selectAll('m')
    .select(['u.id as upload_id', 'u.is_private', 'u.moderation', 't.username as target_username'])
    .select(['b.sha256 as target_sha256', 'b.phash as target_phash', 'b.pdq as target_pdq'])
    .orderBy('m.at', 'desc')
    .orderBy('m.id', 'desc')
    .limit(limit)
    .offset('offset' in start ? start.offset : 0)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    at: d.readDate(r.at),
    action: r.action as ModAction,
    target: { type: r.target_type as ModlogEntry['target']['type'], id: r.target_id },
    reason: r.reason,
    moderator: r.moderator_id ? { id: r.moderator_id, username: r.moderator_name ?? '' } : null,
    // A vote ring item has no name (its id is the target).
    ...(r.target_type === 'vote_ring'
      ? {}
      : r.target_type === 'upload'
        ? {
            upload: r.upload_id
              ? { isPrivate: d.readBool(r.is_private), moderation: r.moderation as ModerationState }
              : null,
          }
        : {
            targetName:
              r.target_username ?? (r.target_sha256 ?? r.target_phash ?? r.target_pdq)?.slice(0, HASH_SHOWN) ?? null,
          }),
  }));
}
