import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * Vote rings (issue 27, API.md Moderation "Vote rings"): the moderation queue's `vote_ring` items, as the periodic
 * detector queues them (src/domain/moderation/vote-rings.service.ts). `ring_key` (SHA-256 of the target, the
 * direction and the sorted accounts) is unique among open items, so processes running the job at once queue a
 * group once; `target_key` (type:id:direction) finds the open item of a ring that grew or shrank between runs.
 * Accounts and evidence are JSON text. The index on votes (updated_at) serves the detector's read of the recent
 * votes.
 */
export class M011VoteRings extends Migration {
  override name = 'm011-vote-rings';

  override up(): void {
    const pg = isPostgres(this.config);
    const uuid = pg ? 'uuid' : 'text';
    const ts = pg ? 'timestamptz(3)' : 'datetime';

    this.addSql(`create table vote_rings (
      id ${uuid} not null primary key,
      ring_key varchar(64) not null,
      target_key varchar(128) not null,
      status varchar(8) not null default 'open',
      accounts text not null,
      evidence text not null,
      created_at ${ts} not null,
      closed_at ${ts} null,
      closed_by ${uuid} null,
      action varchar(8) null,
      reason text null,
      voided_votes integer null)`);
    this.addSql(`create unique index vote_rings_open_key_unique on vote_rings (ring_key) where status = 'open'`);
    this.addSql('create index vote_rings_key_index on vote_rings (ring_key)');
    this.addSql(`create index vote_rings_open_target_index on vote_rings (target_key) where status = 'open'`);
    this.addSql('create index vote_rings_status_index on vote_rings (status, created_at, id)');
    this.addSql('create index votes_updated_index on votes (updated_at)');
  }
}
