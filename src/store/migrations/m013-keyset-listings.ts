import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

const LISTED = (falseLit: string) => `where is_private = ${falseLit} and moderation = 'visible'`;

/**
 * Keyset listings (issue 29): every listing reads a bounded number of index entries per page, whatever the size.
 *
 * - The feed orders end in `id`, so a (key, created_at, id) position is unique and a page starts right after it.
 * - `ranked_at`: when votes last moved the upload's ranks (null: never). A cursor of a ranked sort skips uploads
 *   that moved after its first page, so nothing is shown twice however votes move ranks.
 * - A tag filter is served by the tag's own link rows: `upload_tags` carries its upload's creation time and ranks
 *   (moved with them by the vote's one statement), indexed per tag in every order. Visibility is checked on the
 *   upload row (a private, held or removed upload is a few percent of a tag's links).
 * - Link uploads are few: `type=link` gets partial indexes of its own in every order; `type=image` reads the
 *   public index and skips the links.
 * - A user's uploads are read newest first from `(user_id, created_at, id)`.
 */
export class M013KeysetListings extends Migration {
  override name = 'm013-keyset-listings';

  override up(): void {
    const pg = isPostgres(this.config);
    const ts = pg ? 'timestamptz(3)' : 'datetime';
    const dbl = pg ? 'double precision' : 'double';
    const listed = LISTED(pg ? 'false' : '0');

    this.addSql(`alter table uploads add column ranked_at ${ts} null`);
    const ranked: Array<[string, string]> = [
      ['top', 'score'],
      ['hot', 'hot_rank'],
      ['best', 'best_rank'],
    ];
    for (const [name, key] of ranked) {
      this.addSql(`drop index uploads_public_${name}_index`);
      this.addSql(
        `create index uploads_public_${name}_index on uploads (${key} desc, created_at desc, id desc) ${listed}`,
      );
      this.addSql(
        `create index uploads_link_${name}_index on uploads (${key} desc, created_at desc, id desc) ` +
          `${listed} and upload_type = 'link'`,
      );
    }
    this.addSql('drop index uploads_public_type_index');
    this.addSql(
      `create index uploads_link_new_index on uploads (created_at desc, id desc) ${listed} and upload_type = 'link'`,
    );
    this.addSql('drop index uploads_user_created_index');
    this.addSql('create index uploads_user_created_index on uploads (user_id, created_at desc, id desc)');

    this.addSql(`alter table upload_tags add column upload_created_at ${ts} null`);
    this.addSql('alter table upload_tags add column score integer not null default 0');
    this.addSql(`alter table upload_tags add column hot_rank ${dbl} not null default 0`);
    this.addSql(`alter table upload_tags add column best_rank ${dbl} not null default 0`);
    this.addSql(`alter table upload_tags add column ranked_at ${ts} null`);
    const from = (c: string) => `(select u.${c} from uploads u where u.id = upload_tags.upload_id)`;
    this.addSql(
      `update upload_tags set upload_created_at = ${from('created_at')}, score = ${from('score')}, ` +
        `hot_rank = ${from('hot_rank')}, best_rank = ${from('best_rank')}`,
    );
    // Replaces (tag_id, upload_id): the tag's links by tag alone (a tag's deletion, its counts) use its prefix.
    this.addSql('drop index upload_tags_tag_index');
    this.addSql('create index upload_tags_new_index on upload_tags (tag_id, upload_created_at desc, upload_id desc)');
    for (const [name, key] of ranked) {
      this.addSql(
        `create index upload_tags_${name}_index on upload_tags ` +
          `(tag_id, ${key} desc, upload_created_at desc, upload_id desc)`,
      );
    }
  }
}
