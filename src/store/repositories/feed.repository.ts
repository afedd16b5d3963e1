/**
 * Feed queries, by keyset: every order is served by an index that ends in the upload id (m013-keyset-listings), and
 * a page is read from there, from an offset (at most 10 000 rows in) or right after a cursor's position, never
 * sorted or filtered in JavaScript. Two steps per page: the ids with their keys (from the index, with the
 * visibility of each upload), then the records of just those.
 *
 * - No tag: the public partial indexes of `uploads`; `type=link` has partial indexes of its own.
 * - A tag: the tag's link rows, which carry their upload's keys (`upload_tags_<sort>_index`).
 * - A ranked sort after a cursor skips uploads whose ranks moved since the traversal began (`ranked_at`).
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { ListAfter } from '../../domain/feeds/cursor.ts';
import type { FeedQuery, FeedStore, PageStart, Positioned, ProfileStats } from '../../domain/feeds/feed.service.ts';
import type { Database } from '../database.ts';
import type { DB } from '../database-types.ts';
import type { Dialect } from '../dialect.ts';
import type { UploadRepository } from './upload.repository.ts';
import { visibleTo } from '../upload-rows.ts';

/** The rank column of each order (null: by time alone). */
const RANK: Readonly<Record<FeedQuery['sort'], 'score' | 'hot_rank' | 'best_rank' | null>> = {
  new: null,
  top: 'score',
  hot: 'hot_rank',
  best: 'best_rank',
};

export interface KeyRow {
  id: string;
  created_at: unknown;
  rank: unknown;
}

/** `(rank, created, id) < (after)` in the order's columns, as a row value (both databases seek an index with it). */
function afterPosition(
  d: Dialect,
  cols: RawBuilder<unknown>[],
  after: ListAfter,
  ranked: boolean,
): RawBuilder<boolean> {
  const { key, createdAt, id } = after.pos;
  const values = ranked ? [key ?? 0, d.date(createdAt), id] : [d.date(createdAt), id];
  return sql<boolean>`(${sql.join(cols)}) < (${sql.join(values)})`;
}

export class FeedRepository implements FeedStore {
  readonly #db: Database;
  readonly #uploads: UploadRepository;

  constructor(db: Database, uploads: UploadRepository) {
    this.#db = db;
    this.#uploads = uploads;
  }

  async publicPage(q: FeedQuery, start: PageStart, fetch: number): Promise<Positioned[]> {
    const db = this.#db.read();
    let tagId: string | null = null;
    if (q.tag) {
      const tag = await db.selectFrom('tags').select('id').where('slug', '=', q.tag).executeTakeFirst();
      if (!tag) return [];
      tagId = tag.id;
    }
    const keys = await feedKeysQuery(this.#db.dialect, q, start, fetch, tagId).execute(db);
    return this.#records(db, keys.rows, RANK[q.sort] !== null);
  }

  /** The records of the keyed rows, in their order, each with its position. */
  async #records(db: Kysely<DB>, keys: KeyRow[], ranked: boolean): Promise<Positioned[]> {
    if (!keys.length) return [];
    const rows = await this.#uploads
      .select(db)
      .where(
        'u.id',
        'in',
        keys.map((k) => k.id),
      )
      .execute();
    const byId = new Map((await this.#uploads.hydrate(rows, db)).map((r) => [r.id, r]));
    const d = this.#db.dialect;
    return keys.flatMap((k) => {
      const upload = byId.get(k.id);
      if (!upload) return []; // deleted between the two reads
      return [{ upload, pos: { key: ranked ? Number(k.rank) : null, createdAt: d.readDate(k.created_at), id: k.id } }];
    });
  }

  async ownUploads(userId: string, after: ListAfter | null, fetch: number): Promise<Positioned[]> {
    const db = this.#db.read();
    const d = this.#db.dialect;
    let query = db
      .selectFrom('uploads as u')
      .select(['u.id as id', 'u.created_at as created_at', sql<null>`null`.as('rank')])
      .where('u.user_id', '=', userId)
      // A removed upload is a tombstone its owner cannot open: not in their profile either.
      .where('u.moderation', '<>', 'removed');
    if (after) query = query.where(afterPosition(d, [sql.ref('u.created_at'), sql.ref('u.id')], after, false));
    const keys = await query.orderBy('u.created_at', 'desc').orderBy('u.id', 'desc').limit(fetch).execute();
    return this.#records(db, keys, false);
  }

  async stats(userId: string): Promise<ProfileStats> {
    const db = this.#db.read();
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

  async counts(ids: readonly string[]): Promise<Map<string, { upvotes: number; downvote_count: number }>> {
    const counts = new Map<string, { upvotes: number; downvote_count: number }>();
    if (!ids.length) return counts;
    const rows = await this.#db
      .read()
      .selectFrom('uploads')
      .select(['id', 'upvotes', 'downvote_count'])
      .where('id', 'in', [...ids])
      .execute();
    for (const r of rows) counts.set(r.id, { upvotes: Number(r.upvotes), downvote_count: Number(r.downvote_count) });
    return counts;
  }
}

/** Not moved by votes after `since`: its key now is the key it had when the traversal began. */
function movedBefore(d: Dialect, rankedAt: RawBuilder<unknown>, since: Date): RawBuilder<boolean> {
  return sql<boolean>`(${rankedAt} is null or ${rankedAt} <= ${d.date(since)})`;
}

/**
 * The ids and keys of one feed page, read in the order's index order. Without a tag: the upload rows themselves.
 * With one (`tagId`): the tag's link rows, which carry their upload's keys, read in the tag's own index order (the
 * upload row only for its visibility and the other filters).
 */
export function feedKeysQuery(
  d: Dialect,
  q: FeedQuery,
  start: PageStart,
  fetch: number,
  tagId: string | null,
): RawBuilder<KeyRow> {
  const rank = RANK[q.sort];
  const source = tagId
    ? {
        from: sql`upload_tags ut join uploads u on u.id = ut.upload_id`,
        keys: 'ut',
        created: 'upload_created_at',
        id: 'upload_id',
      }
    : { from: sql`uploads u`, keys: 'u', created: 'created_at', id: 'id' };
  const where: RawBuilder<unknown>[] = [visibleTo(d, null)];
  if (tagId) where.push(sql`ut.tag_id = ${tagId}`);
  const col = (c: string) => sql.ref(`${source.keys}.${c}`);
  const cols = [...(rank ? [col(rank)] : []), col(source.created), col(source.id)];
  // `type` as a literal, so that SQLite matches the link-only partial indexes.
  if (q.type) where.push(sql`u.upload_type = ${sql.lit(q.type)}`);
  if (q.user) where.push(sql`u.user_id = (select id from users where username_key = ${q.user.toLowerCase()})`);
  if ('after' in start) {
    where.push(afterPosition(d, cols, start.after, rank !== null));
    if (rank) where.push(movedBefore(d, col('ranked_at'), start.after.since));
  }
  const offset = 'offset' in start ? start.offset : 0;
  return sql<KeyRow>`select ${col(source.id)} as id, ${col(source.created)} as created_at,
      ${rank ? col(rank) : sql`null`} as rank
    from ${source.from} where ${sql.join(where, sql` and `)}
    order by ${sql.join(cols.map((c) => sql`${c} desc`))} limit ${fetch} offset ${offset}`;
}
