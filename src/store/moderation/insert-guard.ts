/**
 * What an upload's insert re-checks inside its own transaction, so that neither a blocklist addition nor a ban
 * can slip between the upload's early checks and its commit (issue 27, bugs 1 and 2):
 *
 *   - PostgreSQL: the insert holds the blocklist's advisory lock shared and its owner's row FOR SHARE; a blocklist
 *     addition takes that advisory lock exclusively (`lockBlocklistForAdd`) and a ban updates the row, so each
 *     waits for the inserts in flight (which the hold job or the ban's removal job, starting after the commit, then
 *     finds) and every insert that comes later waits for it and sees its entries or its ban.
 *   - SQLite: one writer at a time. The insert re-checks after its first write, holding the write lock, so an
 *     addition or a ban has committed before it (and is seen) or commits after it (and its job finds the row).
 *
 * The blocklist's lookups run again only when its version moved since the upload read it (with its SHA-256 lookup,
 * before its early checks): an addition bumps it in its own transaction, so an unchanged version means the early
 * checks saw every entry there is. Most inserts pay one statement that reads the owner's row and the version by
 * their primary keys (insertGuardReads), not the lookups, while they hold the write lock.
 */
import { sql, type Kysely } from 'kysely';
import type { DB } from '../database-types.ts';
import type { Dialect } from '../dialect.ts';
import type { PreparedStatements } from '../database.ts';
import { nearRows } from '../similarity/similarity-index.ts';
import { PDQ_MIN_QUALITY } from '../../domain/moderation/moderation.types.ts';
import { pdqBlocklisted } from './pdq-lookup.ts';

/** Arbitrary, fixed: the blocklist's advisory lock among pixvote's others (the migration lock is 7_202_611). */
const BLOCKLIST_LOCK_KEY = 7_202_612;

/** Taken by every insert of an upload (shared: inserts never wait for each other). */
export async function lockBlocklistForInsert(db: Kysely<DB>, d: Dialect): Promise<void> {
  if (d.name === 'postgres') await sql`select pg_advisory_xact_lock_shared(${BLOCKLIST_LOCK_KEY})`.execute(db);
}

/** Taken by every addition to the blocklist (exclusive: waits for the inserts in flight, and they for it). */
export async function lockBlocklistForAdd(db: Kysely<DB>, d: Dialect): Promise<void> {
  if (d.name === 'postgres') await sql`select pg_advisory_xact_lock(${BLOCKLIST_LOCK_KEY})`.execute(db);
}

/** The blocklist's version (one row, by its primary key). */
export const versionQuery = (db: Kysely<DB>) =>
  db.selectFrom('blocklist_version').select('version').where('id', '=', 1);

/** The blocklist's version: bumped by every addition (in its transaction, under the exclusive lock). */
export async function blocklistVersion(db: Kysely<DB>): Promise<number> {
  const row = await versionQuery(db).executeTakeFirst();
  return Number(row?.version ?? 0);
}

/** Called by every addition that added entries and every removal, inside its transaction. */
export async function bumpBlocklistVersion(db: Kysely<DB>): Promise<void> {
  await db
    .updateTable('blocklist_version')
    .set((eb) => ({ version: sql<number>`${eb.ref('version')} + 1` }))
    .where('id', '=', 1)
    .execute();
}

/** The owner's row (FOR SHARE on PostgreSQL) and the blocklist's version row, each by its primary key. */
export function insertGuardQuery(db: Kysely<DB>, d: Dialect, userId: string) {
  const q = db
    .selectFrom('users as u')
    .innerJoin('blocklist_version as v', (j) => j.on('v.id', '=', 1))
    .select(['u.banned_until', 'v.version'])
    .where('u.id', '=', userId);
  return d.name === 'postgres' ? q.forShare('u') : q;
}

/**
 * What the insert reads under its locks, in one statement (issue 48: one round trip, not two): the owner's ban end
 * when the owner is banned at `at` (else null; the row read FOR SHARE on PostgreSQL), and the blocklist's version.
 */
export async function insertGuardReads(
  db: Kysely<DB>,
  d: Dialect,
  userId: string,
  at: Date,
): Promise<{ bannedUntil: Date | null; version: number }> {
  const row = await insertGuardQuery(db, d, userId).executeTakeFirst();
  // No such user (the insert's foreign key refuses the row anyway): not banned, the version read alone.
  if (!row) return { bannedUntil: null, version: await blocklistVersion(db) };
  const until = row.banned_until === null ? null : d.readDate(row.banned_until);
  return { bannedUntil: until && until.getTime() > at.getTime() ? until : null, version: Number(row.version) };
}

/**
 * Whether these bytes are blocklisted: their SHA-256 exactly, or near (nearBlocklisted). The same indexed lookups
 * as the upload's early checks make in SQL.
 */
export async function blocklisted(
  db: Kysely<DB>,
  d: Dialect,
  sha256: string,
  phash: string | null,
  maxDistance: number,
  pdq?: { hash: string | null; quality: number | null; distance: number | undefined },
): Promise<boolean> {
  const exact = await db.selectFrom('blocklist').select('id').where('sha256', '=', sha256).limit(1).executeTakeFirst();
  if (exact) return true;
  return nearBlocklisted(db, d, phash, maxDistance, pdq);
}

/**
 * Whether a blocklisted perceptual hash lies within `maxDistance` of `phash` (negative: not checked; multi-index
 * hashing over the entries' chunk columns, `prepared` on PostgreSQL when given), or a blocklisted PDQ within
 * `pdq.distance` of a PDQ of quality ≥ PDQ_MIN_QUALITY.
 */
export async function nearBlocklisted(
  db: Kysely<DB>,
  d: Dialect,
  phash: string | null,
  maxDistance: number,
  pdq?: { hash: string | null; quality: number | null; distance: number | undefined },
  prepared: PreparedStatements | null = null,
): Promise<boolean> {
  if (phash && maxDistance >= 0) {
    const query = nearRows(d, 'blocklist', phash, maxDistance, {
      limit: 1,
      unordered: true,
      parameterized: prepared !== null,
    });
    const rows = prepared ? await prepared.query(query.compile(db)) : (await query.execute(db)).rows;
    if (rows.length > 0) return true;
  }
  if (!pdq?.hash || pdq.distance === undefined || (pdq.quality ?? 0) < PDQ_MIN_QUALITY) return false;
  return pdqBlocklisted(db, pdq.hash, pdq.distance);
}
