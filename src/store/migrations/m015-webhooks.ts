import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * Signed webhooks (issue 31 part 3, API.md "Clients at volume"):
 * - `webhook_endpoints`: a user's endpoints, the events each takes (space-separated), its `whsec_` secret and, for
 *   24 h after a rotation, the previous one (both sign); `next_seq` numbers its deliveries: an event takes the
 *   next number under the endpoint row's lock, in the transaction of the change it reports, so the numbers are in
 *   commit order;
 * - `webhook_deliveries`: the outbox, one row per event and endpoint, written in the same transaction as the change
 *   (upload insert, hold, removal, restore, vote milestone, report, queue item). Any process claims the due head of
 *   an endpoint's queue (the lowest `seq` still pending) with a lease that expires, so a process killed mid-delivery
 *   leaves it to be sent again, and the next event waits until the one before is delivered or given up;
 * - `upload_milestones`: the vote milestones an upload has reached, so that each is announced once.
 */
export class M015Webhooks extends Migration {
  override name = 'm015-webhooks';

  override up(): void {
    const pg = isPostgres(this.config);
    const uuid = pg ? 'uuid' : 'text';
    const ts = pg ? 'timestamptz(3)' : 'datetime';
    const bool = pg ? 'boolean' : 'integer';
    const trueLit = pg ? 'true' : '1';
    this.addSql(`create table webhook_endpoints (
      id ${uuid} not null primary key,
      user_id ${uuid} not null references users (id) on delete cascade,
      url text not null,
      description varchar(500) not null default '',
      events varchar(255) not null,
      secret varchar(64) not null,
      previous_secret varchar(64) null,
      previous_secret_until ${ts} null,
      enabled ${bool} not null default ${trueLit},
      disabled_reason text null,
      next_seq integer not null default 0,
      created_at ${ts} not null,
      updated_at ${ts} not null)`);
    this.addSql('create index webhook_endpoints_user_index on webhook_endpoints (user_id, created_at)');
    this.addSql(`create table webhook_deliveries (
      id ${uuid} not null primary key,
      endpoint_id ${uuid} not null references webhook_endpoints (id) on delete cascade,
      seq integer not null,
      event_type varchar(32) not null,
      payload text not null,
      status varchar(10) not null default 'pending',
      attempts integer not null default 0,
      next_attempt_at ${ts} not null,
      lease_owner varchar(64) null,
      lease_until ${ts} null,
      last_status integer null,
      last_error text null,
      last_attempt_at ${ts} null,
      delivered_at ${ts} null,
      created_at ${ts} not null)`);
    // The log of an endpoint, newest first; and its order (unique: one number per delivery).
    this.addSql('create unique index webhook_deliveries_order_index on webhook_deliveries (endpoint_id, seq)');
    // The claim: pending deliveries, by endpoint and number (the head of each queue).
    this.addSql(
      'create index webhook_deliveries_pending_index on webhook_deliveries (endpoint_id, seq) ' +
        "where status = 'pending'",
    );
    this.addSql(`create table upload_milestones (
      upload_id ${uuid} not null references uploads (id) on delete cascade,
      milestone integer not null,
      reached_at ${ts} not null,
      primary key (upload_id, milestone))`);
  }
}
