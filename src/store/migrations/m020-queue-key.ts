import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * The open moderation queue as an index (issue 29: no listing reads its whole backlog). Each upload carries its
 * count of open reports (`open_reports`) and its place in the open queue (`queue_key`): null when it is not in the
 * queue (removed, or visible with neither an open report nor a person flag), otherwise held first, then most open
 * reports: `(held ? 0 : 1_000_000_000) - open_reports`. A queue page is then one seek in `uploads_queue_index`
 * (`queue_key, created_at, id`), partial over the queue's members; before, every page grouped all open reports and
 * the union of held and flagged uploads to sort them.
 *
 * Both columns are written with the changes that move them, in their transactions (upload-states.ts:
 * `refreshQueueKey`); here they are filled from the reports and states already stored.
 */
export class M020QueueKey extends Migration {
  override name = 'm020-queue-key';

  override up(): void {
    const trueLit = isPostgres(this.config) ? 'true' : '1';
    this.addSql('alter table uploads add column open_reports integer not null default 0');
    this.addSql('alter table uploads add column queue_key integer null');
    this.addSql(`update uploads set open_reports =
      (select count(*) from reports r where r.upload_id = uploads.id and r.status = 'open')
      where id in (select upload_id from reports where status = 'open')`);
    this.addSql(`update uploads set queue_key = case
        when moderation = 'removed' then null
        when moderation = 'held' then 0 - open_reports
        when person_flag = ${trueLit} or open_reports > 0 then 1000000000 - open_reports
        else null end
      where moderation = 'held' or person_flag = ${trueLit} or open_reports > 0`);
    this.addSql('create index uploads_queue_index on uploads (queue_key, created_at, id) where queue_key is not null');
  }
}
