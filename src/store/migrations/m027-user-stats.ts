import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * Profile counters kept by triggers (issue 46; entities/user-stats.entity.ts): `GET /api/profile` summed a heavy
 * user's uploads (10 000 rows over 9 993 heap blocks at 1M uploads) and counted their votes on every view. The
 * triggers fire for every write to the counted rows, cascades included (an upload's deletion takes its votes out
 * of their voters' counts), so no code path can forget one. Filled once from the rows.
 */
export class M027UserStats extends Migration {
  override name = 'm027-user-stats';

  override up(): void {
    const pg = isPostgres(this.config);
    const uuid = pg ? 'uuid' : 'text';
    this.addSql(`create table user_upload_stats (
      user_id ${uuid} not null primary key references users (id) on delete cascade,
      uploads integer not null default 0,
      upvotes_received integer not null default 0,
      downvotes_received integer not null default 0)${pg ? '' : ' without rowid'}`);
    this.addSql(`create table user_vote_stats (
      user_id ${uuid} not null primary key references users (id) on delete cascade,
      votes_cast integer not null default 0)${pg ? '' : ' without rowid'}`);
    this.addSql(`insert into user_upload_stats (user_id, uploads, upvotes_received, downvotes_received)
      select u.id, count(x.id), coalesce(sum(x.upvotes), 0), coalesce(sum(x.downvote_count), 0)
      from users u left join uploads x on x.user_id = u.id group by u.id`);
    this.addSql(`insert into user_vote_stats (user_id, votes_cast)
      select u.id, count(v.user_id) from users u left join votes v on v.user_id = u.id group by u.id`);

    if (pg) this.postgresTriggers();
    else this.sqliteTriggers();
  }

  /**
   * PostgreSQL: statement-level triggers over the statement's transition tables, one update per user a statement
   * touched. Row-level ones would update one user's row once per inserted row, and PostgreSQL follows the row's
   * chain of versions for each: a seed of 50 000 uploads of one user in one statement went quadratic.
   */
  private postgresTriggers(): void {
    const fn = (name: string, body: string) =>
      this.addSql(`create function ${name}() returns trigger language plpgsql as $$
        begin ${body}; return null; end $$`);
    const trigger = (name: string, event: string, on: string, tables: string) =>
      this.addSql(
        `create trigger ${name} after ${event} on ${on} referencing ${tables} for each statement ` +
          `execute function ${name}()`,
      );
    const uploads = (sign: '+' | '-', rows: string) =>
      `update user_upload_stats s set uploads = s.uploads ${sign} c.n, ` +
      `upvotes_received = s.upvotes_received ${sign} c.up, ` +
      `downvotes_received = s.downvotes_received ${sign} c.down ` +
      `from (select user_id, count(*) as n, sum(upvotes) as up, sum(downvote_count) as down from ${rows} ` +
      `group by user_id) c where s.user_id = c.user_id`;
    const votes = (sign: '+' | '-', rows: string) =>
      `update user_vote_stats s set votes_cast = s.votes_cast ${sign} c.n ` +
      `from (select user_id, count(*) as n from ${rows} group by user_id) c where s.user_id = c.user_id`;
    fn(
      'user_stats_user_insert',
      'insert into user_upload_stats (user_id) select id from new_rows; ' +
        'insert into user_vote_stats (user_id) select id from new_rows',
    );
    trigger('user_stats_user_insert', 'insert', 'users', 'new table as new_rows');
    fn('user_stats_upload_insert', uploads('+', 'new_rows'));
    trigger('user_stats_upload_insert', 'insert', 'uploads', 'new table as new_rows');
    fn('user_stats_upload_delete', uploads('-', 'old_rows'));
    trigger('user_stats_upload_delete', 'delete', 'uploads', 'old table as old_rows');
    // Any update of uploads (a transition table cannot go with a column list): only rows whose counts moved count,
    // so a change of ranks or state touches no counter row.
    fn(
      'user_stats_upload_counts',
      'update user_upload_stats s set upvotes_received = s.upvotes_received + c.up, ' +
        'downvotes_received = s.downvotes_received + c.down ' +
        'from (select n.user_id, sum(n.upvotes - o.upvotes) as up, ' +
        'sum(n.downvote_count - o.downvote_count) as down from new_rows n join old_rows o on o.id = n.id ' +
        'where n.upvotes <> o.upvotes or n.downvote_count <> o.downvote_count group by n.user_id) c ' +
        'where s.user_id = c.user_id',
    );
    trigger('user_stats_upload_counts', 'update', 'uploads', 'old table as old_rows new table as new_rows');
    fn('user_stats_vote_insert', votes('+', 'new_rows'));
    trigger('user_stats_vote_insert', 'insert', 'votes', 'new table as new_rows');
    fn('user_stats_vote_delete', votes('-', 'old_rows'));
    trigger('user_stats_vote_delete', 'delete', 'votes', 'old table as old_rows');
  }

  /** SQLite: row-level triggers (all it has); it updates a row in place, however often. */
  private sqliteTriggers(): void {
    const uploads = (sign: '+' | '-', row: 'new' | 'old') =>
      `update user_upload_stats set uploads = uploads ${sign} 1, ` +
      `upvotes_received = upvotes_received ${sign} ${row}.upvotes, ` +
      `downvotes_received = downvotes_received ${sign} ${row}.downvote_count where user_id = ${row}.user_id`;
    const triggers: Array<[name: string, event: string, when: string | null, body: string[]]> = [
      [
        'user_stats_user_insert',
        'insert on users',
        null,
        [
          'insert into user_upload_stats (user_id) values (new.id)',
          'insert into user_vote_stats (user_id) values (new.id)',
        ],
      ],
      ['user_stats_upload_insert', 'insert on uploads', null, [uploads('+', 'new')]],
      ['user_stats_upload_delete', 'delete on uploads', null, [uploads('-', 'old')]],
      [
        'user_stats_upload_counts',
        'update of upvotes, downvote_count on uploads',
        'old.upvotes <> new.upvotes or old.downvote_count <> new.downvote_count',
        [
          'update user_upload_stats set upvotes_received = upvotes_received + new.upvotes - old.upvotes, ' +
            'downvotes_received = downvotes_received + new.downvote_count - old.downvote_count ' +
            'where user_id = new.user_id',
        ],
      ],
      [
        'user_stats_vote_insert',
        'insert on votes',
        null,
        ['update user_vote_stats set votes_cast = votes_cast + 1 where user_id = new.user_id'],
      ],
      [
        'user_stats_vote_delete',
        'delete on votes',
        null,
        ['update user_vote_stats set votes_cast = votes_cast - 1 where user_id = old.user_id'],
      ],
    ];
    for (const [name, event, when, body] of triggers)
      this.addSql(
        `create trigger ${name} after ${event} for each row${when ? ` when (${when})` : ''} begin ` +
          `${body.map((b) => `${b};`).join(' ')} end`,
      );
  }
}
