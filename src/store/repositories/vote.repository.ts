import { sql } from 'kysely';
import type { Database } from '../database.ts';
import { lockUpload } from '../upload-rows.ts';
import { isUuid } from '../../domain/ids.ts';
import { hotRank, wilsonLowerBound } from '../../domain/ranking.ts';
import type { VoteGuard, VoteStore } from '../../domain/votes/vote.service.ts';
import type { VoteValue } from '../../domain/uploads/upload.types.ts';

export const voteName = (value: number): VoteValue => (value > 0 ? 'fucks' : 'does_not_fuck');

export class VoteRepository implements VoteStore {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /**
   * One transaction: lock the upload row (votes on one upload take turns; a concurrent delete either
   * happens before — 404 — or after, taking the votes with it), move the vote row, then move the
   * counters with `counter = counter ± 1` and recompute the ranks from the counters the update returned.
   */
  cast(userId: string, uploadId: string, value: 1 | -1 | 0, at: Date, guard?: VoteGuard) {
    const d = this.#db.dialect;
    return this.#db.transaction(async (_em, db) => {
      const upload = await lockUpload(db, d, uploadId, ['upvotes', 'downvote_count', 'user_id', 'moderation']);
      if (!upload) return null;
      guard?.({ id: uploadId, userId: upload.user_id, moderation: upload.moderation });
      const old = await db
        .selectFrom('votes')
        .select('value')
        .where('user_id', '=', userId)
        .where('upload_id', '=', uploadId)
        .executeTakeFirst();
      const before = (old ? Number(old.value) : 0) as 1 | -1 | 0;
      if (before === value) {
        return { value, upvotes: Number(upload.upvotes), downvotes: Number(upload.downvote_count), changed: false };
      }
      if (value === 0) {
        await db.deleteFrom('votes').where('user_id', '=', userId).where('upload_id', '=', uploadId).execute();
      } else if (before === 0) {
        await db
          .insertInto('votes')
          .values({ user_id: userId, upload_id: uploadId, value, created_at: d.date(at), updated_at: d.date(at) })
          .execute();
      } else {
        await db
          .updateTable('votes')
          .set({ value, updated_at: d.date(at) })
          .where('user_id', '=', userId)
          .where('upload_id', '=', uploadId)
          .execute();
      }
      const du = (value === 1 ? 1 : 0) - (before === 1 ? 1 : 0);
      const dd = (value === -1 ? 1 : 0) - (before === -1 ? 1 : 0);
      const moved = await db
        .updateTable('uploads')
        .set({
          upvotes: sql`upvotes + ${sql.lit(du)}`,
          downvote_count: sql`downvote_count + ${sql.lit(dd)}`,
          score: sql`score + ${sql.lit(du - dd)}`,
        })
        .where('id', '=', uploadId)
        .returning(['upvotes', 'downvote_count', 'created_at'])
        .executeTakeFirstOrThrow();
      const up = Number(moved.upvotes);
      const down = Number(moved.downvote_count);
      await db
        .updateTable('uploads')
        .set({ hot_rank: hotRank(up - down, d.readDate(moved.created_at)), best_rank: wilsonLowerBound(up, down) })
        .where('id', '=', uploadId)
        .execute();
      return { value, upvotes: up, downvotes: down, changed: true };
    });
  }

  async myVote(uploadId: string, userId: string): Promise<VoteValue | null> {
    if (!isUuid(uploadId)) return null;
    const row = await this.#db
      .db()
      .selectFrom('votes')
      .select('value')
      .where('upload_id', '=', uploadId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return row ? voteName(Number(row.value)) : null;
  }
}
