import { Migration } from '@mikro-orm/migrations';

/**
 * Tag search pages by keyset (issue 29): its order, most used first then by name, as an index, so a page of
 * `GET /api/tags` (with or without `cursor`) reads its own rows instead of sorting every tag. Only tags a listing
 * shows (`upload_count > 0`) are searched, and only they are indexed.
 */
export class M017TagSearchIndex extends Migration {
  override name = 'm017-tag-search-index';

  override up(): void {
    this.addSql('create index tags_search_index on tags (upload_count desc, name) where upload_count > 0');
  }
}
