import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * A tag's `upload_count` now counts only the uploads listings show (public ones), so that suggestions
 * neither list nor count tags carried by private uploads (see store/repositories/tag-links.ts). Counts
 * written before counted every link: recount them once.
 */
export class M007ListedTagCounts extends Migration {
  override name = 'm007-listed-tag-counts';

  override up(): void {
    const falseLit = isPostgres(this.config) ? 'false' : '0';
    this.addSql(`update tags set upload_count = (
      select count(*) from upload_tags ut join uploads u on u.id = ut.upload_id
      where ut.tag_id = tags.id and u.is_private = ${falseLit})`);
  }
}
