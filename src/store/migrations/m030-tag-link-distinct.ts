import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * PostgreSQL: how many distinct uploads `upload_tags` links, given to the planner (issue 46). Every page's tags are
 * read by `upload_id in (…the page's ids…)` joined to `tags`. ANALYZE samples 30 000 rows and estimates the distinct
 * `upload_id`s from them; with random UUIDs in ~15M links at 10M uploads it said 1.4M where there were ~7M, so the
 * planner expected ~11 links per upload, 138 for a page, and joined them to a sequential scan of every tag (a hash
 * join over 5 000 tags: +0.63 ms on every page read, 1.25–1.35× every listing at 10M against 12k). A fraction of
 * the rows scales with the table: an upload carries 1–10 tags (MAX_TAGS_PER_UPLOAD), a few on most, so its
 * distinct uploads are a fifth to all of the links' count; saying half (2 links an upload, 26 for a page where 10
 * tags each would be 130) keeps the plan a nested loop of primary-key probes at any size. SQLite's ANALYZE counts
 * every index entry (sqlite_stat1), so it needs none.
 */
export class M030TagLinkDistinct extends Migration {
  override name = 'm030-tag-link-distinct';

  override up(): void {
    if (!isPostgres(this.config)) return;
    this.addSql('alter table upload_tags alter column upload_id set (n_distinct = -0.5)');
    this.addSql('analyze upload_tags');
  }
}
