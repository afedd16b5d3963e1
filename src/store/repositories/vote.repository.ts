import type { Kysely } from 'kysely';
import type { Database } from '../database.ts';
import type { DB } from '../database-types.ts';
import { lockUpload, setVoteCounts } from '../upload-rows.ts';
import { reachMilestones } from '../webhooks/outbox.ts';
import { isUuid } from '../../domain/ids.ts';
import type { VoteGuard, VoteStore } from '../../domain/votes/vote.service.ts';
import type { ClientFacts } from '../../domain/client-facts.ts';
import type { VotedUpload } from '../../domain/feeds/feed.service.ts';
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
  cast(userId: string, uploadId: string, value: 1 | -1 | 0, at: Date, guard?: VoteGuard, client?: ClientFacts) {
    const d = this.#db.dialect;
    return this.#db.transaction(async (_em, db) => {
      const upload = await lockUpload(db, d, uploadId, [
        'upvotes',
        'downvote_count',
        'created_at',
        'user_id',
        'moderation',
        'upload_type',
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
          .values({
            user_id: userId,
            upload_id: uploadId,
            value,
            created_at: d.date(at),
            updated_at: d.date(at),
            net: client?.net ?? null,
            ua: client?.ua ?? null,
          })
          .execute();
      } else {
        await db
          .updateTable('votes')
          .set({ value, updated_at: d.date(at), net: client?.net ?? null, ua: client?.ua ?? null })
          .where('user_id', '=', userId)
          .where('upload_id', '=', uploadId)
          .execute();
      }
      const up = Number(upload.upvotes) + (value === 1 ? 1 : 0) - (before === 1 ? 1 : 0);
      const down = Number(upload.downvote_count) + (value === -1 ? 1 : 0) - (before === -1 ? 1 : 0);
      await setVoteCounts(db, d, { id: uploadId, createdAt: d.readDate(upload.created_at) }, { up, down }, at);
      if (up > Number(upload.upvotes)) await reachMilestones(db, d, uploadId, Number(upload.upvotes), up, at);
      const target = await votedUpload(db, uploadId, upload.user_id, upload.upload_type);
      return { value, upvotes: up, downvotes: down, changed: true, target };
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

/** The voted-on upload as the listings it is in name it: its type, its owner's username key, its tags' slugs. */
async function votedUpload(db: Kysely<DB>, id: string, userId: string, uploadType: string): Promise<VotedUpload> {
  // One after the other: the transaction's one connection.
  const owner = await db.selectFrom('users').select('username_key').where('id', '=', userId).executeTakeFirst();
  const tags = await db
    .selectFrom('upload_tags')
    .innerJoin('tags', 'tags.id', 'upload_tags.tag_id')
    .select('tags.slug')
    .where('upload_tags.upload_id', '=', id)
    .execute();
  return {
    id,
    uploadType: uploadType === 'link' ? 'link' : 'image',
    ownerKey: owner?.username_key ?? '',
    tags: tags.map((t) => t.slug),
  };
}
