import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * Tag search by prefix reads a range of names (issue 46): `LIKE 'zzz%'` scanned all 50 001 tags at 1M uploads on
 * both databases (PostgreSQL cannot use a B-tree of a non-C collation for it, C.UTF-8 included; SQLite's LIKE folds
 * case, so no BINARY index serves it). The index holds the listed tags' names in code point order (PostgreSQL:
 * collation "C", whatever the database's own), covering what a suggestion shows (tag.repository.ts,
 * prefixRangeQuery).
 */
export class M023TagPrefixIndex extends Migration {
  override name = 'm023-tag-prefix-index';

  override up(): void {
    this.addSql(
      isPostgres(this.config)
        ? 'create index tags_prefix_index on tags (name collate "C") include (upload_count, slug, id) ' +
            'where upload_count > 0'
        : 'create index tags_prefix_index on tags (name, upload_count, slug, id) where upload_count > 0',
    );
  }
}
