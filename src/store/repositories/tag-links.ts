/** Tags and upload–tag links, used inside the transactions of the upload and tag repositories. */
import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { slugOf, type TagView } from '../../domain/tags.ts';
import type { Dialect } from '../dialect.ts';

/** Finds or creates the tags (by slug) and links them to the upload; returns how many links are new. */
export async function linkTags(db: Kysely<any>, d: Dialect, uploadId: string, names: string[], at: Date): Promise<number> {
  if (!names.length) return 0;
  await db
    .insertInto('tags')
    .values(names.map((name) => ({ id: randomUUID(), name, slug: slugOf(name), upload_count: 0, created_at: d.date(at) })))
    .onConflict((oc) => oc.doNothing())
    .execute();
  const tags = await db.selectFrom('tags').select(['id']).where('slug', 'in', names.map(slugOf)).execute();
  const linked = await db
    .insertInto('upload_tags')
    .values(tags.map((t) => ({ upload_id: uploadId, tag_id: t.id, created_at: d.date(at) })))
    .onConflict((oc) => oc.doNothing())
    .returning('tag_id')
    .execute();
  if (linked.length) {
    await db
      .updateTable('tags')
      .set({ upload_count: sql`upload_count + 1` })
      .where('id', 'in', linked.map((l) => l.tag_id))
      .execute();
  }
  return linked.length;
}

/** Tags of each upload, in the order they were added. */
export async function tagsOf(db: Kysely<any>, uploadIds: string[]): Promise<Map<string, TagView[]>> {
  const out = new Map<string, TagView[]>();
  if (!uploadIds.length) return out;
  const rows = await db
    .selectFrom('upload_tags as ut')
    .innerJoin('tags as t', 't.id', 'ut.tag_id')
    .select(['ut.upload_id', 't.id', 't.name', 't.slug'])
    .where('ut.upload_id', 'in', uploadIds)
    .orderBy('ut.created_at')
    .orderBy('t.name')
    .execute();
  for (const r of rows) {
    const list = out.get(r.upload_id) ?? [];
    list.push({ id: r.id, name: r.name, slug: r.slug });
    out.set(r.upload_id, list);
  }
  return out;
}
