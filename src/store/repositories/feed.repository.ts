/**
 * Feed queries, by keyset: every order is served by an index that ends in the upload id (m013-keyset-listings), and
 * a page is read from there, from an offset (at most 10 000 rows in) or right after a cursor's position, never
 * sorted or filtered in JavaScript. Two steps per page: the ids with their keys (from the index, with the
 * visibility of each upload), then the records of just those.
 *
 * - No tag: the public partial indexes of `uploads`; `type=link` has partial indexes of its own.
 * - A tag: the tag's link rows, which carry their upload's keys (`upload_tags_<sort>_index`).
 * - `ai=only`: the partial indexes of the listed, labelled uploads (m029); `ai=exclude` skips those in the public ones.
 * - A ranked sort after a cursor reads the index only for uploads whose ranks did not move since the traversal
 *   began (`ranked_at`), and lists those that moved at the keys they had then, from the journal of rank moves
 *   (`movedKeysQuery`, m019): the two are merged in the order's key. A cursor older than the journal's window skips
 *   the moved ones instead.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { ListAfter } from '../../domain/feeds/cursor.ts';
import type { AiFilter } from '../../domain/uploads/ai-label.ts';
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
    const d = this.#db.dialect;
    const rank = RANK[q.sort];
    if (!rank || !('after' in start) || !start.frozen) {
      const keys = await feedKeysQuery(d, q, start, fetch, tagId).execute(db);
      return this.#records(db, keys.rows, rank !== null);
    }
    // Both reads in one statement: one snapshot, so a move committing meanwhile is in exactly one of them.
    const keys = await sql<KeyRow>`select * from (${feedKeysQuery(d, q, start, fetch, tagId)}) unmoved
      union all select * from (${movedKeysQuery(d, q, start.after, fetch, tagId)}) moved`.execute(db);
    return this.#records(db, mergeKeys(d, keys.rows, fetch), true);
  }

  async pruneRankMoves(before: Date, batch: number): Promise<number> {
    const db = this.#db.db();
    const due = db.selectFrom('rank_moves').select('upload_id').where('moved_at', '<', this.#db.dialect.date(before));
    // Read first: a prune with nothing due writes nothing (on SQLite a DELETE takes the write lock even then).
    if (!(await due.limit(1).executeTakeFirst())) return 0;
    // By the journal's index on moved_at, a batch at a time (each its own short write), by primary key.
    const r = await db
      .deleteFrom('rank_moves')
      .where((eb) =>
        eb(
          eb.refTuple('upload_id', 'moved_at'),
          'in',
          eb
            .selectFrom('rank_moves')
            .select(['upload_id', 'moved_at'])
            .where('moved_at', '<', this.#db.dialect.date(before))
            .limit(batch)
            .$asTuple('upload_id', 'moved_at'),
        ),
      )
      .executeTakeFirst();
    return Number(r.numDeletedRows);
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

  /** The profile's counters (m027: kept by triggers with every write to the rows they count), by primary key. */
  async stats(userId: string): Promise<ProfileStats> {
    const row = await profileStatsQuery(this.#db.read(), userId).executeTakeFirst();
    return {
      uploads: Number(row?.uploads ?? 0),
      upvotes_received: Number(row?.upvotes_received ?? 0),
      downvotes_received: Number(row?.downvotes_received ?? 0),
      votes_cast: Number(row?.votes_cast ?? 0),
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

/** A user's profile counters: three rows by primary key (listing-plans.test.ts checks the plan). */
export function profileStatsQuery(db: Kysely<DB>, userId: string) {
  return db
    .selectFrom('users as u')
    .leftJoin('user_upload_stats as s', 's.user_id', 'u.id')
    .leftJoin('user_vote_stats as v', 'v.user_id', 'u.id')
    .select(['s.uploads', 's.upvotes_received', 's.downvotes_received', 'v.votes_cast'])
    .where('u.id', '=', userId);
}

/**
 * `ai=only|exclude` on `uploads as u`: written as the partial indexes of m029 say it (`ai_label is not null`), so
 * that SQLite matches them; `exclude` reads the public index and skips the labelled rows (as `type=image` skips links).
 */
function aiFilter(ai: AiFilter): RawBuilder<boolean> {
  return ai === 'only' ? sql<boolean>`u.ai_label is not null` : sql<boolean>`u.ai_label is null`;
}

/** Not moved by votes after `since`: its key now is the key it had when the traversal began. */
function movedBefore(d: Dialect, rankedAt: RawBuilder<unknown>, since: Date): RawBuilder<boolean> {
  return sql<boolean>`(${rankedAt} is null or ${rankedAt} <= ${d.date(since)})`;
}

/**
 * The two reads of a ranked page after a cursor (each in its order), merged by (key, created_at, id) descending: the
 * first `fetch`. They are disjoint (`ranked_at` ≤ since or not); an id twice would be listed once.
 */
function mergeKeys(d: Dialect, rows: KeyRow[], fetch: number): KeyRow[] {
  const at = (k: KeyRow) => d.readDate(k.created_at).getTime();
  const desc = (a: KeyRow, b: KeyRow) =>
    Number(b.rank) - Number(a.rank) || at(b) - at(a) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
  const out: KeyRow[] = [];
  const ids = new Set<string>();
  for (const k of [...rows].sort(desc)) {
    if (out.length === fetch) break;
    if (ids.has(k.id)) continue;
    ids.add(k.id);
    out.push(k);
  }
  return out;
}

/**
 * The uploads of a ranked listing whose ranks moved after `after.since`, at the keys they had then: those of their
 * first move after it in the journal of rank moves (the row with `moved_at` > since and `prev_at` null or ≤ since,
 * one per upload), kept when that position is after the cursor's, in that order, `fetch` of them. Read from the
 * journal's index on `moved_at` (as many entries as moves since the traversal began, however large the listing),
 * each joined to its upload (and tag link) by primary key; the filters as `feedKeysQuery`'s. The order is sorted:
 * no index can hold keys as of a time each cursor picks.
 */
export function movedKeysQuery(
  d: Dialect,
  q: FeedQuery,
  after: ListAfter,
  fetch: number,
  tagId: string | null,
): RawBuilder<KeyRow> {
  const rank = RANK[q.sort];
  if (!rank) throw new Error(`sort=${q.sort} has no ranks to move`);
  const since = d.date(after.since);
  const moves = sql`m.moved_at > ${since} and (m.prev_at is null or m.prev_at <= ${since})`;
  // The journal is read first, then the rest by key. SQLite's planner takes the tables of a CROSS JOIN in the order
  // written; PostgreSQL's is told by a materialized CTE (on a small or freshly filled journal its estimates would
  // rather read the listing's index and look each upload up in the journal).
  const pg = d.name === 'postgres';
  const head = pg ? sql`with m as materialized (select * from rank_moves m where ${moves}) ` : sql``;
  const journal = pg ? sql`m` : sql`rank_moves m`;
  const from = tagId
    ? sql`${journal} cross join upload_tags ut cross join uploads u`
    : sql`${journal} cross join uploads u`;
  const keys = tagId ? 'ut' : 'u';
  const created = sql.ref(tagId ? 'ut.upload_created_at' : 'u.created_at');
  const id = sql.ref(tagId ? 'ut.upload_id' : 'u.id');
  const key = sql.ref(`m.${rank}`);
  const where: RawBuilder<unknown>[] = [
    ...(pg ? [] : [moves]),
    sql`u.id = m.upload_id`,
    visibleTo(d, null),
    // The complement of feedKeysQuery's rows: what the index read skips as moved.
    sql`${sql.ref(`${keys}.ranked_at`)} > ${since}`,
  ];
  if (tagId) where.push(sql`ut.upload_id = m.upload_id and ut.tag_id = ${tagId}`);
  if (q.type) where.push(sql`u.upload_type = ${sql.lit(q.type)}`);
  if (q.ai) where.push(aiFilter(q.ai));
  if (q.user) where.push(sql`u.user_id = (select id from users where username_key = ${q.user.toLowerCase()})`);
  where.push(afterPosition(d, [key, created, id], after, true));
  return sql<KeyRow>`${head}select ${id} as id, ${created} as created_at, ${key} as rank
    from ${from} where ${sql.join(where, sql` and `)}
    order by ${key} desc, ${created} desc, ${id} desc limit ${fetch}`;
}

/**
 * The ids and keys of one feed page, read in the order's index order. Without a tag: the upload rows themselves.
 * With one (`tagId`): the tag's link rows, which carry their upload's keys and whether listings show it (`listed`),
 * read in the tag's own index order; the upload row only for the other filters (type, user).
 */
export function feedKeysQuery(
  d: Dialect,
  q: FeedQuery,
  start: PageStart,
  fetch: number,
  tagId: string | null,
): RawBuilder<KeyRow> {
  const rank = RANK[q.sort];
  // A tag's links say whether listings show their upload (m025): its rows are read only for a filter of their own.
  const uploadRow = !tagId || Boolean(q.type || q.user || q.ai);
  const source = tagId
    ? {
        from: uploadRow ? sql`upload_tags ut join uploads u on u.id = ut.upload_id` : sql`upload_tags ut`,
        keys: 'ut',
        created: 'upload_created_at',
        id: 'upload_id',
      }
    : { from: sql`uploads u`, keys: 'u', created: 'created_at', id: 'id' };
  const where: RawBuilder<unknown>[] = tagId
    ? [sql`ut.tag_id = ${tagId}`, sql`ut.listed = ${sql.raw(d.trueLit)}`]
    : [visibleTo(d, null)];
  const col = (c: string) => sql.ref(`${source.keys}.${c}`);
  const cols = [...(rank ? [col(rank)] : []), col(source.created), col(source.id)];
  // `type` as a literal, so that SQLite matches the link-only partial indexes.
  if (q.type) where.push(sql`u.upload_type = ${sql.lit(q.type)}`);
  if (q.ai) where.push(aiFilter(q.ai));
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
