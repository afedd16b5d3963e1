import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * The person detector's boxes (issue 32, the gray zone a person decides): for an upload that person detection
 * queued for review (a person flag, or held), its best few boxes as fractions (0–1) of the image's width and height,
 * `[{"x", "y", "width", "height", "score"}]`, drawn for the moderators over the preview. Null for every other upload
 * and for uploads stored before this migration. JSON as `variants` is (json on SQLite, jsonb on PostgreSQL).
 */
export class M018HumanBoxes extends Migration {
  override name = 'm018-human-boxes';

  override up(): void {
    const json = isPostgres(this.config) ? 'jsonb' : 'json';
    this.addSql(`alter table uploads add column human_boxes ${json} null`);
  }
}
