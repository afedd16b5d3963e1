import { sql } from 'kysely';
import type { TagStore, TagSuggestion } from '../../domain/tag.service.ts';
import { slugOf, type TagView } from '../../domain/tags.ts';
import type { Database } from '../database.ts';
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
   * Tags whose name starts with `prefix`, most used first, counting only the uploads listings show (see tag-links.ts).
   */
  async suggest(prefix: string, limit: number): Promise<TagSuggestion[]> {
    let q = this.#db
      .read()
      .selectFrom('tags')
      .select(['id', 'name', 'slug', 'upload_count'])
      .where('upload_count', '>', 0);
    if (prefix) q = q.where(sql<boolean>`name like ${prefix.replace(/[\\%_]/g, (c) => `\\${c}`) + '%'} escape '\\'`);
    const rows = await q.orderBy('upload_count', 'desc').orderBy('name').limit(limit).execute();
    return rows.map((r) => ({ id: r.id, name: r.name, slug: r.slug, uploads: Number(r.upload_count) }));
  }
}
