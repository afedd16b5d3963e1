import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

const CHUNKS = ['ph0', 'ph1', 'ph2', 'ph3'];

/**
 * Moderation (API.md, Moderation): an upload's state (`visible`, `held`, `removed`), its person flag, reports,
 * the blocklist of hashes with its chunk columns (the near-duplicate machinery's multi-index hashing), the
 * durable queue of blocklist entries whose matches among stored uploads are still to be held, bans, and the
 * append-only modlog (triggers refuse an update or a delete on both databases).
 *
 * A listing shows an upload only when it is public AND visible: the feed indexes are partial over exactly that
 * condition (so held and removed uploads cost the feeds nothing), and the chunk indexes carry the state so that
 * near-duplicate lookups stay index-only.
 */
export class M009Moderation extends Migration {
  override name = 'm009-moderation';

  override up(): void {
    const pg = isPostgres(this.config);
    const uuid = pg ? 'uuid' : 'text';
    const ts = pg ? 'timestamptz(3)' : 'datetime';
    const bool = pg ? 'boolean' : 'integer';
    const falseLit = pg ? 'false' : '0';
    const trueLit = pg ? 'true' : '1';

    this.addSql(`alter table uploads add column moderation varchar(8) not null default 'visible'`);
    this.addSql(`alter table uploads add column person_flag ${bool} not null default ${falseLit}`);
    this.addSql(`alter table uploads add column moderated_at ${ts} null`);

    const listed = `where is_private = ${falseLit} and moderation = 'visible'`;
    const feeds: Array<[string, string]> = [
      ['new', 'created_at desc, id desc'],
      ['top', 'score desc, created_at desc'],
      ['hot', 'hot_rank desc, created_at desc'],
      ['best', 'best_rank desc, created_at desc'],
      ['type', 'upload_type, created_at desc'],
    ];
    for (const [name, cols] of feeds) {
      this.addSql(`drop index uploads_public_${name}_index`);
      this.addSql(`create index uploads_public_${name}_index on uploads (${cols}) ${listed}`);
    }
    for (const c of CHUNKS) {
      this.addSql(`drop index uploads_${c}_covering_index`);
      this.addSql(
        pg
          ? `create index uploads_${c}_covering_index on uploads (${c}) ` +
              'include (phash, is_private, moderation, user_id, created_at, id)'
          : `create index uploads_${c}_covering_index on uploads (${c}, phash, is_private, moderation, user_id, ` +
              'created_at, id)',
      );
    }
    // The queue's sources other than reports, each small.
    this.addSql(`create index uploads_held_index on uploads (created_at) where moderation = 'held'`);
    this.addSql(`create index uploads_person_flag_index on uploads (created_at) where person_flag = ${trueLit}`);
    this.addSql('create index uploads_moderated_index on uploads (moderated_at) where moderated_at is not null');

    this.addSql(`alter table users add column banned_until ${ts} null`);
    this.addSql('alter table users add column ban_reason text null');

    this.addSql(`create table reports (
      id ${uuid} not null primary key,
      upload_id ${uuid} not null references uploads (id) on delete cascade,
      user_id ${uuid} not null references users (id) on delete cascade,
      reason varchar(16) not null,
      note text null,
      status varchar(8) not null default 'open',
      created_at ${ts} not null,
      closed_at ${ts} null)`);
    // One report per user and upload, ever: a second one answers the first.
    this.addSql('create unique index reports_upload_user_unique on reports (upload_id, user_id)');
    this.addSql('create index reports_status_upload_index on reports (status, upload_id)');
    this.addSql('create index reports_user_index on reports (user_id)');

    this.addSql(`create table blocklist (
      id ${uuid} not null primary key,
      sha256 varchar(64) null,
      phash varchar(16) null,
      ph0 integer null,
      ph1 integer null,
      ph2 integer null,
      ph3 integer null,
      entry_key varchar(81) not null,
      reason text not null default '',
      source varchar(16) not null,
      created_at ${ts} not null)`);
    this.addSql('create unique index blocklist_entry_key_unique on blocklist (entry_key)');
    this.addSql('create index blocklist_sha256_index on blocklist (sha256) where sha256 is not null');
    this.addSql('create index blocklist_created_index on blocklist (created_at desc, id desc)');
    // Covering what nearRows reads (id, created_at, phash), so that a lookup is index-only: without id and
    // created_at, PostgreSQL read the heap and planned a parallel append costing ~25 ms (bench/README.md, Blocklist).
    for (const c of CHUNKS) {
      this.addSql(
        pg
          ? `create index blocklist_${c}_covering_index on blocklist (${c}) include (phash, created_at, id) ` +
              `where ${c} is not null`
          : `create index blocklist_${c}_covering_index on blocklist (${c}, phash, created_at, id) ` +
              `where ${c} is not null`,
      );
    }

    // Blocklist entries whose matching stored uploads are still to be held: the job's durable to-do list.
    this.addSql(`create table blocklist_pending (
      entry_id ${uuid} not null primary key,
      created_at ${ts} not null)`);

    this.addSql(`create table modlog (
      id ${uuid} not null primary key,
      at ${ts} not null,
      action varchar(16) not null,
      target_type varchar(16) not null,
      target_id ${uuid} not null,
      reason text not null default '',
      moderator_id ${uuid} null,
      moderator_name varchar(32) null)`);
    this.addSql('create index modlog_at_index on modlog (at desc, id desc)');
    if (pg) {
      this.addSql(`create function modlog_append_only() returns trigger language plpgsql as $$
        begin raise exception 'modlog is append-only'; end $$`);
      this.addSql(
        'create trigger modlog_no_change before update or delete on modlog ' +
          'for each statement execute function modlog_append_only()',
      );
    } else {
      for (const op of ['update', 'delete'])
        this.addSql(
          `create trigger modlog_no_${op} before ${op} on modlog ` +
            "begin select raise(abort, 'modlog is append-only'); end",
        );
    }
  }
}
