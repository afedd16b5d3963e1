import type { Database } from '../database.ts';
import { lockUpload, setVoteCounts } from '../upload-rows.ts';
import { reachMilestones } from '../webhooks/outbox.ts';
import { isUuid } from '../../domain/ids.ts';
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
   * happens before — 404 — or after, taking the votes with it), move the vote row, then write the counters and
   * the ranks they make from the locked row's counters in one UPDATE of the upload (and one of its tag links).
   */
  cast(userId: string, uploadId: string, value: 1 | -1 | 0, at: Date, guard?: VoteGuard) {
    const d = this.#db.dialect;
    return this.#db.transaction(async (_em, db) => {
      const upload = await lockUpload(db, d, uploadId, [
        'upvotes',
        'downvote_count',
        'created_at',
        'user_id',
        'moderation',
      ]);
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
      const up = Number(upload.upvotes) + (value === 1 ? 1 : 0) - (before === 1 ? 1 : 0);
      const down = Number(upload.downvote_count) + (value === -1 ? 1 : 0) - (before === -1 ? 1 : 0);
      await setVoteCounts(db, d, { id: uploadId, createdAt: d.readDate(upload.created_at) }, { up, down }, at);
      if (up > Number(upload.upvotes)) await reachMilestones(db, d, uploadId, Number(upload.upvotes), up, at);
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
