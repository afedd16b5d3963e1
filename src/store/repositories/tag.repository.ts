import { sql, type Kysely } from 'kysely';
import type { TagStore, TagSuggestion } from '../../domain/tag.service.ts';
import { slugOf, type TagView } from '../../domain/tags.ts';
import type { Database } from '../database.ts';
import type { DB } from '../database-types.ts';
import { lockUpload } from '../upload-rows.ts';
import { linkTags, tagsOf, unlinkTag } from './tag-links.ts';

export class TagRepository implements TagStore {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  async ownerOf(uploadId: string) {
    const row = await this.#db
      .db()
      .selectFrom('uploads')
      .select(['user_id', 'moderation'])
      .where('id', '=', uploadId)
      .executeTakeFirst();
    return row ? { userId: row.user_id, moderation: row.moderation } : null;
  }

  async tagsOf(uploadId: string): Promise<TagView[]> {
    return (await tagsOf(this.#db.db(), [uploadId])).get(uploadId) ?? [];
  }

  /** The upload row is locked first, so two concurrent adds cannot both pass the limit. */
  add(uploadId: string, names: string[], max: number, at: Date) {
    const d = this.#db.dialect;
    return this.#db.transaction(async (_em, db) => {
      if (!(await lockUpload(db, d, uploadId, ['id']))) return null;
      const current = (await tagsOf(db, [uploadId])).get(uploadId) ?? [];
      const have = new Set(current.map((t) => t.slug));
      const fresh = names.filter((n) => !have.has(slugOf(n)));
      if (current.length + fresh.length > max) return { ok: false as const, wouldHave: current.length + fresh.length };
      await linkTags(db, d, uploadId, fresh, at);
      return { ok: true as const, tags: (await tagsOf(db, [uploadId])).get(uploadId) ?? [] };
    });
  }

  /** The upload row first, as every write to an upload's links locks it (a delete racing this cannot deadlock it). */
  remove(uploadId: string, slug: string): Promise<boolean> {
    const d = this.#db.dialect;
    return this.#db.transaction(async (_em, db) => {
      if (!(await lockUpload(db, d, uploadId, ['id']))) return false;
      return unlinkTag(db, d, uploadId, slug);
    });
  }

  /**
   * A page of the tags whose name starts with `prefix`, most used first, counting only the uploads listings show
   * (see tag-links.ts).
   */
  async suggest(
    prefix: string,
    after: { uploads: number; id: string } | null,
    fetch: number,
  ): Promise<TagSuggestion[]> {
    const rows = [];
    for (const query of tagSearchQueries(this.#db.read(), prefix, after, fetch)) {
      rows.push(...(await query.limit(fetch - rows.length).execute()));
      if (rows.length >= fetch) break;
    }
    return rows.map((r) => ({ id: r.id, name: r.name, slug: r.slug, uploads: Number(r.upload_count) }));
  }
}

/**
 * Tag search's queries: tags a listing shows named `prefix`…, most used first then by name (tags_search_index's
 * order). After a cursor, two seeks in that index, run in turn until a page is full: the rest of the last tag's
 * count (by name; names never change), then the lower counts. One condition over both would be a filter on a scan
 * from the index's start (the two keys run in opposite directions), reading every tag before the cursor.
 */
export function tagSearchQueries(
  db: Kysely<DB>,
  prefix: string,
  after: { uploads: number; id: string } | null,
  fetch: number,
) {
  let q = db.selectFrom('tags').select(['id', 'name', 'slug', 'upload_count']).where('upload_count', '>', 0);
  if (prefix) q = q.where(sql<boolean>`name like ${prefix.replace(/[\\%_]/g, (c) => `\\${c}`) + '%'} escape '\\'`);
  if (!after) return [q.orderBy('upload_count', 'desc').orderBy('name').limit(fetch)];
  return [
    q
      .where('upload_count', '=', after.uploads)
      .where('name', '>', (eb) => eb.selectFrom('tags as t').select('t.name').where('t.id', '=', after.id))
      .orderBy('upload_count', 'desc')
      .orderBy('name')
      .limit(fetch),
    q.where('upload_count', '<', after.uploads).orderBy('upload_count', 'desc').orderBy('name').limit(fetch),
  ];
}
