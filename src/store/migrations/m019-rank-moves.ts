import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * The journal of rank moves (issue 29, exact cursors): each vote that moves an upload's ranks writes, in its
 * transaction, the keys the upload had just before the move (`score`, `hot_rank`, `best_rank`), when it moved
 * (`moved_at`, the `ranked_at` it gets) and when it had moved before (`prev_at`, the `ranked_at` it had: null if
 * never). A ranked cursor whose traversal began at S lists an upload that moved after S at the keys of its first
 * move after S (the row with `moved_at > S` and `prev_at` null or ≤ S: one per upload), its keys when the
 * traversal began, so it is shown exactly once. Rows older than the cursors it serves are pruned (in batches, by
 * `rank_moves_moved_index`, which also finds the moves after S); the primary key keeps one row per upload and
 * millisecond (the first: the keys before that millisecond).
 */
export class M019RankMoves extends Migration {
  override name = 'm019-rank-moves';

  override up(): void {
    const pg = isPostgres(this.config);
    const uuid = pg ? 'uuid' : 'text';
    const ts = pg ? 'timestamptz(3)' : 'datetime';
    const dbl = pg ? 'double precision' : 'double';
    this.addSql(`create table rank_moves (
      upload_id ${uuid} not null references uploads (id) on delete cascade,
      moved_at ${ts} not null,
      prev_at ${ts} null,
      score integer not null,
      hot_rank ${dbl} not null,
      best_rank ${dbl} not null,
      primary key (upload_id, moved_at))`);
    this.addSql('create index rank_moves_moved_index on rank_moves (moved_at, prev_at)');
  }
}
