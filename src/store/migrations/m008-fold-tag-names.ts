import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * The tag rule of this migration's day (domain/tags.ts): NFKC, lowercase, trimmed, spaces collapsed;
 * 1–32 letters, digits, space, `-`, `_`.
 */
const fold = (name: string) => name.normalize('NFKC').toLowerCase().trim().replace(/\s+/g, ' ');
const valid = (name: string) =>
  /^[\p{L}\p{N} _-]+$/u.test(name) && !/\p{Default_Ignorable_Code_Point}/u.test(name) && [...name].length <= 32;

/**
 * Tag names are NFKC-folded now ("ＣＡＴＳ" is "cats"), so that lookalike tags cannot be made. Tags made
 * before are folded once: renamed when their folded name is free, else merged into the tag that has it
 * (its uploads gain that tag, the lookalike goes). A name that would not be valid folded is left alone.
 * Counts are then recounted as m007 does (listed uploads only).
 */
export class M008FoldTagNames extends Migration {
  override name = 'm008-fold-tag-names';

  override async up(): Promise<void> {
    const tags = (await this.execute('select id, name, slug from tags')) as Array<{
      id: string;
      name: string;
      slug: string;
    }>;
    const bySlug = new Map(tags.map((t) => [t.slug, t]));
    for (const t of tags) {
      const name = fold(t.name);
      if (name === t.name || !name || !valid(name)) continue;
      const slug = name.replace(/ /g, '-');
      const twin = bySlug.get(slug);
      if (!twin) {
        await this.execute('update tags set name = ?, slug = ? where id = ?', [name, slug, t.id]);
        bySlug.delete(t.slug);
        bySlug.set(slug, { id: t.id, name, slug });
        continue;
      }
      await this.execute(
        `insert into upload_tags (upload_id, tag_id, created_at)
         select ut.upload_id, ?, ut.created_at from upload_tags ut
         where ut.tag_id = ?
           and not exists (select 1 from upload_tags x where x.upload_id = ut.upload_id and x.tag_id = ?)`,
        [twin.id, t.id, twin.id],
      );
      await this.execute('delete from upload_tags where tag_id = ?', [t.id]);
      await this.execute('delete from tags where id = ?', [t.id]);
      bySlug.delete(t.slug);
    }
    const falseLit = isPostgres(this.config) ? 'false' : '0';
    await this.execute(`update tags set upload_count = (
      select count(*) from upload_tags ut join uploads u on u.id = ut.upload_id
      where ut.tag_id = tags.id and u.is_private = ${falseLit})`);
  }
}
