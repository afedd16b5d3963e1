/**
 * Feed queries. Every order is served by a partial index over public uploads (see the migration):
 * the page is read in index order with LIMIT/OFFSET, never sorted or filtered in JavaScript.
 */
import type { FeedQuery, FeedStore, ProfileStats } from '../../domain/feeds/feed.service.ts';
import type { UploadRecord } from '../../domain/uploads/upload.types.ts';
import type { Database } from '../database.ts';
import type { UploadsTable } from '../database-types.ts';
import type { UploadRepository } from './upload.repository.ts';
import { visibleTo } from '../upload-rows.ts';

const ORDER: Readonly<Record<FeedQuery['sort'], Array<[`u.${keyof UploadsTable}`, 'desc']>>> = {
  new: [
    ['u.created_at', 'desc'],
    ['u.id', 'desc'],
  ],
  top: [
    ['u.score', 'desc'],
    ['u.created_at', 'desc'],
  ],
  hot: [
    ['u.hot_rank', 'desc'],
    ['u.created_at', 'desc'],
  ],
  best: [
    ['u.best_rank', 'desc'],
    ['u.created_at', 'desc'],
  ],
};

export class FeedRepository implements FeedStore {
  readonly #db: Database;
  readonly #uploads: UploadRepository;

  constructor(db: Database, uploads: UploadRepository) {
    this.#db = db;
    this.#uploads = uploads;
  }

  async publicPage(q: FeedQuery, offset: number, fetch: number): Promise<UploadRecord[]> {
    const db = this.#db.db();
    let query = this.#uploads.select(db).where(visibleTo(this.#db.dialect, null));
    if (q.type) query = query.where('u.upload_type', '=', q.type);
    if (q.user) query = query.where('us.username_key', '=', q.user.toLowerCase());
    if (q.tag) {
      query = query.where(
        'u.id',
        'in',
        db
          .selectFrom('upload_tags as ut')
          .innerJoin('tags as t', 't.id', 'ut.tag_id')
          .select('ut.upload_id')
          .where('t.slug', '=', q.tag),
      );
    }
    for (const [col, dir] of ORDER[q.sort]) query = query.orderBy(col, dir);
    const rows = await query.limit(fetch).offset(offset).execute();
    return this.#uploads.hydrate(rows, db);
  }

  async ownUploads(userId: string, limit: number): Promise<UploadRecord[]> {
    const db = this.#db.db();
    const rows = await this.#uploads
      .select(db)
      .where('u.user_id', '=', userId)
      // A removed upload is a tombstone its owner cannot open: not in their profile either.
      .where('u.moderation', '<>', 'removed')
      .orderBy('u.created_at', 'desc')
      .orderBy('u.id', 'desc')
      .limit(limit)
      .execute();
    return this.#uploads.hydrate(rows, db);
  }

  async stats(userId: string): Promise<ProfileStats> {
    const db = this.#db.db();
    const [own, cast] = await Promise.all([
      db
        .selectFrom('uploads')
        .select((eb) => [
          eb.fn.countAll().as('n'),
          eb.fn.sum('upvotes').as('up'),
          eb.fn.sum('downvote_count').as('down'),
        ])
        .where('user_id', '=', userId)
        .executeTakeFirstOrThrow(),
      db
        .selectFrom('votes')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('user_id', '=', userId)
        .executeTakeFirstOrThrow(),
    ]);
    return {
      uploads: Number(own.n),
      upvotes_received: Number(own.up ?? 0),
      downvotes_received: Number(own.down ?? 0),
      votes_cast: Number(cast.n),
    };
  }
}
