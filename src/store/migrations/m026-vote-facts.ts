import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * Vote rings, issue 45 (docs/vote-rings.md): the evidence the service records and the void that can be undone.
 *
 * - `users.signup_net` / `signup_ua` and `votes.net` / `ua`: the keyed hash (HMAC-SHA256, 32 hex digits) of the
 *   client's network (IPv4 /24, IPv6 /48) and its user-agent family, at sign-up and at each vote. No raw address is
 *   stored anywhere. The facts purge (VOTE_FACTS_RETENTION) nulls them once older than the retention; the partial
 *   indexes hold only the rows that still carry a fact, so the purge reads nothing else.
 * - `voided_votes`: the votes a `void` took out of the votes table, flagged with the ring item that voided them
 *   (`voided_by`) and when (`voided_at`), so that `restore` puts them back exactly within VOTE_RING_RESTORE_DAYS
 *   (after which the purge deletes them). Being out of the votes table, they are out of every count, listing and
 *   score by construction, and the upload counters keep equal to the votes table.
 * - `vote_rings`: who restored an item, when, and how many votes came back or were skipped.
 */
export class M026VoteFacts extends Migration {
  override name = 'm026-vote-facts';

  override up(): void {
    const pg = isPostgres(this.config);
    const uuid = pg ? 'uuid' : 'text';
    const ts = pg ? 'timestamptz(3)' : 'datetime';

    this.addSql('alter table users add column signup_net varchar(32) null');
    this.addSql('alter table users add column signup_ua varchar(16) null');
    this.addSql(
      'create index users_signup_facts_index on users (created_at) ' +
        'where signup_net is not null or signup_ua is not null',
    );
    this.addSql('alter table votes add column net varchar(32) null');
    this.addSql('alter table votes add column ua varchar(16) null');
    this.addSql('create index votes_facts_index on votes (updated_at) where net is not null or ua is not null');

    this.addSql(`create table voided_votes (
      voided_by ${uuid} not null references vote_rings (id) on delete cascade,
      user_id ${uuid} not null references users (id) on delete cascade,
      upload_id ${uuid} not null references uploads (id) on delete cascade,
      value smallint not null,
      created_at ${ts} not null,
      updated_at ${ts} not null,
      net varchar(32) null,
      ua varchar(16) null,
      voided_at ${ts} not null,
      primary key (voided_by, user_id, upload_id))`);
    this.addSql('create index voided_votes_voided_at_index on voided_votes (voided_at)');
    this.addSql('create index voided_votes_upload_index on voided_votes (upload_id)');
    this.addSql('create index voided_votes_user_index on voided_votes (user_id)');

    this.addSql(`alter table vote_rings add column restored_at ${ts} null`);
    this.addSql(`alter table vote_rings add column restored_by ${uuid} null`);
    this.addSql('alter table vote_rings add column restored_votes integer null');
    this.addSql('alter table vote_rings add column skipped_votes integer null');
  }
}
