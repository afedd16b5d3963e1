/**
 * Tags and upload–tag links, used inside the transactions of the upload and tag repositories.
 *
 * A tag's count (`tags.upload_count`, what suggestions show and sort by) counts only the uploads a listing
 * shows — `visibleTo(dialect, null)`, the very condition the feeds filter by — so a tag carried only by
 * private uploads is neither suggested nor counted. The count moves in the transaction of every change to
 * what it counts, with the upload row locked (`lockUpload`): a link made or removed (`linkTags`,
 * `unlinkTag`), an upload deleted (`leaveTagCounts`), and a change of whether listings show an upload
 * (`changingListing`: privacy today; any later state that hides an upload goes through it too).
 * The same places keep each link's `listed` (m025), so that a tag's listing is read from the tag's index alone.
 */
import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { slugOf, type TagView } from '../../domain/tags.ts';
import type { DB } from '../database-types.ts';
import type { Dialect } from '../dialect.ts';
import { visibleTo } from '../upload-rows.ts';

/** Whether listings show the upload (read inside the caller's transaction). */
async function isListed(db: Kysely<DB>, d: Dialect, uploadId: string): Promise<boolean> {
  const row = await db
    .selectFrom('uploads as u')
    .select('u.id')
    .where('u.id', '=', uploadId)
    .where(visibleTo(d, null))
    .executeTakeFirst();
  return Boolean(row);
}

/** Moves the counts of these tags by one. */
async function moveCounts(db: Kysely<DB>, tagIds: string[], delta: 1 | -1): Promise<void> {
  if (!tagIds.length) return;
  await db
    .updateTable('tags')
    .set({ upload_count: sql`upload_count + ${sql.lit(delta)}` })
    .where('id', 'in', tagIds)
    .execute();
}

const tagIdsOf = async (db: Kysely<DB>, uploadId: string): Promise<string[]> =>
  (await db.selectFrom('upload_tags').select('tag_id').where('upload_id', '=', uploadId).execute()).map(
    (r) => r.tag_id,
  );

/**
 * Runs `change`, an update of the (locked) upload row that may show it in listings or hide it from them,
 * and moves the counts of its tags to match.
 */
export async function changingListing<T>(
  db: Kysely<DB>,
  d: Dialect,
  uploadId: string,
  change: () => Promise<T>,
): Promise<T> {
  const before = await isListed(db, d, uploadId);
  const result = await change();
  const after = await isListed(db, d, uploadId);
  if (before !== after) {
    await moveCounts(db, await tagIdsOf(db, uploadId), after ? 1 : -1);
    await db
      .updateTable('upload_tags')
      .set({ listed: d.bool(after) })
      .where('upload_id', '=', uploadId)
      .execute();
  }
  return result;
}

/** Takes a (locked) upload about to be deleted out of its tags' counts; its links go with the row. */
export async function leaveTagCounts(db: Kysely<DB>, d: Dialect, uploadId: string): Promise<void> {
  if (await isListed(db, d, uploadId)) await moveCounts(db, await tagIdsOf(db, uploadId), -1);
}

/** Finds or creates the tags (by slug) and links them to the (locked or new) upload; returns how many links are new. */
export async function linkTags(
  db: Kysely<DB>,
  d: Dialect,
  uploadId: string,
  names: string[],
  at: Date,
): Promise<number> {
  if (!names.length) return 0;
  await db
    .insertInto('tags')
    .values(
      names.map((name) => ({ id: randomUUID(), name, slug: slugOf(name), upload_count: 0, created_at: d.date(at) })),
    )
    .onConflict((oc) => oc.doNothing())
    .execute();
  // Each link carries its upload's listing keys (creation time, ranks), copied from the row in the same statement.
  const linked = await db
    .insertInto('upload_tags')
    .columns([
      'upload_id',
      'tag_id',
      'created_at',
      'upload_created_at',
      'score',
      'hot_rank',
      'best_rank',
      'ranked_at',
      'listed',
    ])
    .expression((eb) =>
      eb
        .selectFrom('uploads as u')
        .innerJoin('tags as t', (j) => j.on('t.slug', 'in', names.map(slugOf)))
        .select([
          'u.id',
          't.id',
          // PostgreSQL types a bare parameter in a select list as text.
          (d.name === 'postgres' ? sql`cast(${at} as timestamptz)` : sql`${d.date(at)}`).as('created_at'),
          'u.created_at',
          'u.score',
          'u.hot_rank',
          'u.best_rank',
          'u.ranked_at',
          // Whether listings show it: moved with the counts by changingListing from now on.
          sql<boolean>`case when ${visibleTo(d, null)} then ${sql.raw(d.trueLit)} else ${sql.raw(d.falseLit)} end`.as(
            'listed',
          ),
        ])
        .where('u.id', '=', uploadId),
    )
    .onConflict((oc) => oc.doNothing())
    .returning('tag_id')
    .execute();
  if (linked.length && (await isListed(db, d, uploadId)))
    await moveCounts(
      db,
      linked.map((l) => l.tag_id),
      1,
    );
  return linked.length;
}

/** Unlinks the tag (by slug) from the (locked) upload; false when the upload does not carry it. */
export async function unlinkTag(db: Kysely<DB>, d: Dialect, uploadId: string, slug: string): Promise<boolean> {
  const tag = await db.selectFrom('tags').select('id').where('slug', '=', slug).executeTakeFirst();
  if (!tag) return false;
  const r = await db
    .deleteFrom('upload_tags')
    .where('upload_id', '=', uploadId)
    .where('tag_id', '=', tag.id)
    .executeTakeFirst();
  if (!Number(r.numDeletedRows)) return false;
  if (await isListed(db, d, uploadId)) await moveCounts(db, [tag.id], -1);
  return true;
}

/**
 * The links of these uploads with their tags: every page's tags (listing-plans.test.ts checks that the links and
 * tags are read by primary key, the planner expecting a few links per upload at any size: m030).
 */
export const tagsOfQuery = (db: Kysely<DB>, uploadIds: string[]) =>
  db
    .selectFrom('upload_tags as ut')
    .innerJoin('tags as t', 't.id', 'ut.tag_id')
    .select(['ut.upload_id', 't.id', 't.name', 't.slug'])
    .where('ut.upload_id', 'in', uploadIds)
    .orderBy('ut.created_at')
    .orderBy('t.name');

/** Tags of each upload, in the order they were added. */
export async function tagsOf(db: Kysely<DB>, uploadIds: string[]): Promise<Map<string, TagView[]>> {
  const out = new Map<string, TagView[]>();
  if (!uploadIds.length) return out;
  const rows = await tagsOfQuery(db, uploadIds).execute();
  for (const r of rows) {
    const list = out.get(r.upload_id) ?? [];
    list.push({ id: r.id, name: r.name, slug: r.slug });
    out.set(r.upload_id, list);
  }
  return out;
}
