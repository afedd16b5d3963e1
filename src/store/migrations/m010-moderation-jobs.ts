import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * Durable moderation jobs (API.md Bans: "the removal is a durable job"): a ban with `remove_uploads` queues a
 * `ban_removal` job in the ban's transaction, and every blocklist addition a `blocklist_hold` job whose progress
 * counts its entries (blocklist_pending.job_id). Any process claims a job with a lease that expires, so a process
 * killed mid-job leaves it to another (or to itself once restarted); `done` and `total` are its progress.
 * blocklist_version counts blocklist additions (insert-guard.ts).
 */
export class M010ModerationJobs extends Migration {
  override name = 'm010-moderation-jobs';

  override up(): void {
    const pg = isPostgres(this.config);
    const uuid = pg ? 'uuid' : 'text';
    const ts = pg ? 'timestamptz(3)' : 'datetime';
    this.addSql(`create table moderation_jobs (
      id ${uuid} not null primary key,
      kind varchar(16) not null,
      status varchar(8) not null default 'queued',
      target_type varchar(16) not null,
      target_id ${uuid} null,
      reason text not null default '',
      moderator_id ${uuid} null,
      moderator_name varchar(32) null,
      done integer not null default 0,
      total integer not null default 0,
      attempts integer not null default 0,
      error text null,
      lease_owner varchar(64) null,
      lease_until ${ts} null,
      created_at ${ts} not null,
      updated_at ${ts} not null)`);
    // The runners' claim: unfinished jobs, oldest first.
    this.addSql(
      'create index moderation_jobs_open_index on moderation_jobs (created_at, id) ' +
        "where status in ('queued', 'running')",
    );
    this.addSql('create index moderation_jobs_listing_index on moderation_jobs (created_at desc, id desc)');
    this.addSql(`alter table blocklist_pending add column job_id ${uuid} null`);
    // Bumped by every blocklist addition: an upload's insert re-checks the blocklist only when it moved since the
    // upload's early checks (one primary-key read instead of the two lookups, inside the insert's transaction).
    this.addSql('create table blocklist_version (id integer not null primary key, version bigint not null default 0)');
    this.addSql('insert into blocklist_version (id, version) values (1, 0)');
  }
}
