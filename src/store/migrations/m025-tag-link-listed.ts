import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * A tag's link carries whether listings show its upload (`listed`, issue 46), kept with the tag counts in the one
 * place a change of listing goes through (tag-links.ts, changingListing and linkTags). A tag's page by number was
 * read from the tag's index but checked each skipped link against its upload row: at 1M uploads a popular tag's
 * page 70 looked up 11 396 upload rows to return 20 (3.65× against 10k on PostgreSQL). Now the tag's indexes lead
 * with (tag_id, listed): a page of listed links is read, and skipped, in the index alone; the upload rows are read
 * only for the page, or where a filter (type, user) needs them.
 */
export class M025TagLinkListed extends Migration {
  override name = 'm025-tag-link-listed';

  override up(): void {
    const pg = isPostgres(this.config);
    const [f, t] = pg ? ['false', 'true'] : ['0', '1'];
    this.addSql(`alter table upload_tags add column listed ${pg ? 'boolean' : 'integer'} not null default ${f}`);
    this.addSql(
      `update upload_tags set listed = ${t} where exists (select 1 from uploads u where u.id = upload_tags.upload_id ` +
        `and u.is_private = ${f} and u.moderation = 'visible')`,
    );
    const orders: Array<[string, string]> = [
      ['new', 'upload_created_at desc, upload_id desc'],
      ['top', 'score desc, upload_created_at desc, upload_id desc'],
      ['hot', 'hot_rank desc, upload_created_at desc, upload_id desc'],
      ['best', 'best_rank desc, upload_created_at desc, upload_id desc'],
    ];
    for (const [name, cols] of orders) {
      // The tag's links by tag alone (its deletion, its counts) still use the (tag_id) prefix.
      this.addSql(`drop index upload_tags_${name}_index`);
      this.addSql(`create index upload_tags_${name}_index on upload_tags (tag_id, listed, ${cols})`);
    }
  }
}
