/** The modlog's one write: lines appended inside the transaction of the change they record. */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { ModAction, ModlogEntry, NewModlogEntry } from '../../domain/moderation/moderation.types.ts';
import type { DB } from '../database-types.ts';
import type { Dialect } from '../dialect.ts';

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

/** A page of the modlog, newest first. */
export async function readModlog(db: Kysely<DB>, d: Dialect, offset: number, limit: number): Promise<ModlogEntry[]> {
  const rows = await db
    .selectFrom('modlog')
    .selectAll()
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .offset(offset)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    at: d.readDate(r.at),
    action: r.action as ModAction,
    target: { type: r.target_type as ModlogEntry['target']['type'], id: r.target_id },
    reason: r.reason,
    moderator: r.moderator_id ? { id: r.moderator_id, username: r.moderator_name ?? '' } : null,
  }));
}
