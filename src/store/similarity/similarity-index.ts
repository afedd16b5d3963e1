/**
 * Near-duplicate lookup by Hamming distance of 64-bit perceptual hashes, behind one interface: multi-index
 * hashing over indexed chunks of the hash (both databases, the default), or sqlite-vec `bit[64]` KNN on
 * SQLite (NEAR_DUPLICATE_INDEX=sqlite-vec).
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Viewer } from '../../domain/uploads/upload.types.ts';
import type { DB } from '../database-types.ts';
import type { Dialect } from '../dialect.ts';
import type { PreparedStatements } from '../database.ts';
import { BLOCKLIST_CHUNKS, UPLOAD_CHUNKS, candidateCount, chunkCandidates } from './hamming.ts';
import { visibleTo } from '../upload-rows.ts';

export interface NearMatch {
  id: string;
  distance: number;
}

export type LookupMethod = 'multi-index-hashing' | 'sqlite-vec';

export interface SimilarityIndex {
  readonly kind: LookupMethod;
  /** Called inside the upload's insert transaction. */
  add(db: Kysely<DB>, uploadId: string, phash: string): Promise<void>;
  /** Called inside the upload's delete transaction. */
  remove(db: Kysely<DB>, uploadId: string): Promise<void>;
  /** Closest upload visible to `viewer` within `maxDistance`; oldest first on ties. */
  findNear(db: Kysely<DB>, phash: string, maxDistance: number, viewer: Viewer | null): Promise<NearMatch | null>;
}

/** How many nearest neighbours sqlite-vec returns before the visibility filter; widened when all are hidden. */
const KNN_K = 32;

export function sqliteVecIndex(dialect: Dialect): SimilarityIndex {
  return {
    kind: 'sqlite-vec',
    async add(db, uploadId, phash) {
      await sql`insert into upload_phash_vec (upload_id, hash)
        values (${uploadId}, vec_bit(${Buffer.from(phash, 'hex')}))`.execute(db);
    },
    async remove(db, uploadId) {
      await sql`delete from upload_phash_vec where upload_id = ${uploadId}`.execute(db);
    },
    async findNear(db, phash, maxDistance, viewer) {
      const query = Buffer.from(phash, 'hex');
      for (let k = KNN_K; ; k *= 4) {
        const { rows } = await sql<{ id: string; distance: number; vis: number }>`
          with knn as (select upload_id, distance from upload_phash_vec where hash match vec_bit(${query}) and k = ${k})
          select knn.upload_id as id, knn.distance as distance,
            (case when ${visibleTo(dialect, viewer)} then 1 else 0 end) as vis
          from knn join uploads u on u.id = knn.upload_id
          order by knn.distance, u.created_at`.execute(db);
        const hit = rows.find((r) => r.distance <= maxDistance && r.vis === 1);
        if (hit) return { id: hit.id, distance: Math.round(hit.distance) };
        // Widen only when every one of the k nearest was in range but hidden from this viewer.
        const last = rows.at(-1);
        if (rows.length < k || !last || last.distance > maxDistance) return null;
      }
    },
  };
}

/** Each table's chunk columns and their layout (hamming.ts): the uploads' three (m021), the blocklist's four (m009). */
const CHUNKED = {
  uploads: { columns: ['mih0', 'mih1', 'mih2'], layout: UPLOAD_CHUNKS },
  blocklist: { columns: ['ph0', 'ph1', 'ph2', 'ph3'], layout: BLOCKLIST_CHUNKS },
} as const;

/**
 * Past this many chunk values to look up, a lookup reads every hashed row instead: exact either way, and one scan is
 * cheaper than a statement of a hundred thousand literals. The defaults probe 46 values (d = 4 on uploads) and 188
 * (d = 8 on the blocklist: chunkRadii); uploads scan from d = 15 (NEAR_DUPLICATE_DISTANCE allows 32), the blocklist
 * never (BLOCKLIST_DISTANCE ≤ 16: 4 608 values).
 */
export const MAX_CHUNK_PROBES = 32_768;

/**
 * The rows of `table` (aliased `u`, with columns `id`, `created_at`, `phash` and its chunk columns, CHUNKED) within
 * `maxDistance` of `phash`, closest (then oldest) first: the chunk lookups as a UNION ALL, each an index-only scan
 * of its covering index (migrations m009, m021) with the distance and `filter` inside, so no candidate row is read
 * from the table (figures: bench/README.md, "Near-duplicate lookup"). A row matching on several chunks comes once
 * per chunk. Used for uploads (near duplicates) and the blocklist alike. `unordered`: any rows within the
 * distance, as they come (an existence check stops at the first; sorting every candidate first made PostgreSQL
 * plan a parallel append costing ~15 ms more at distance 8: bench/README.md, Blocklist). `parameterized`
 * (PostgreSQL): the hash and each chunk's values as parameters (`= any($n::int[])`), so that the statement's text is
 * the same for every hash, as a prepared statement needs.
 */
export function nearRows(
  dialect: Dialect,
  table: 'uploads' | 'blocklist',
  phash: string,
  maxDistance: number,
  opts: { filter?: RawBuilder<boolean>; limit?: number; unordered?: boolean; parameterized?: boolean } = {},
): RawBuilder<{ id: string; distance: number }> {
  const { columns, layout } = CHUNKED[table];
  const params = opts.parameterized === true && dialect.name === 'postgres';
  const distance =
    dialect.name === 'postgres'
      ? sql`bit_count(('x' || u.phash)::bit(64) # ${params ? sql.val(`x${phash}`) : sql.lit(`x${phash}`)}::bit(64))`
      : sql`hamming64(u.phash, ${sql.lit(phash)})`;
  const among = (values: number[]) =>
    params ? sql`= any(${sql.val(values)}::int[])` : sql`in (${sql.join(values.map((v) => sql.lit(v)))})`;
  const filter = opts.filter ? sql`and ${opts.filter}` : sql``;
  const select = sql`select u.id as id, u.created_at as created_at, ${distance} as distance from ${sql.table(table)} u`;
  // A chunk chunkRadii does not search has no values: no lookup (and at a negative distance, none at all).
  const parts =
    candidateCount(maxDistance, layout) > MAX_CHUNK_PROBES
      ? [sql`${select} where u.phash is not null ${filter}`]
      : chunkCandidates(phash, maxDistance, layout).flatMap((values, i) =>
          values.length ? [sql`${select} where u.${sql.ref(columns[i]!)} ${among(values)} ${filter}`] : [],
        );
  if (!parts.length) parts.push(sql`${select} where false`);
  return sql<{ id: string; distance: number }>`
    select id, distance from (${sql.join(parts, sql` union all `)}) m
    where distance <= ${maxDistance}
    ${opts.unordered ? sql`` : sql`order by distance, created_at`}
    ${opts.limit ? sql`limit ${sql.lit(opts.limit)}` : sql``}`;
}

/**
 * Multi-index hashing over the uploads' chunk columns (nearRows), for the near-duplicate check. With `prepared`
 * (PostgreSQL), as a prepared statement: planning was 0.4 ms of a ~1 ms lookup (bench/README.md, Growth).
 */
export function multiIndexHashing(dialect: Dialect, prepared: PreparedStatements | null = null): SimilarityIndex {
  return {
    kind: 'multi-index-hashing',
    async add() {
      // The chunks are columns of the upload row itself.
    },
    async remove() {},
    async findNear(db, phash, maxDistance, viewer) {
      const query = nearRows(dialect, 'uploads', phash, maxDistance, {
        filter: visibleTo(dialect, viewer),
        limit: 1,
        parameterized: prepared !== null,
      });
      const rows = prepared ? await prepared.query(query.compile(db)) : (await query.execute(db)).rows;
      return rows[0] ? { id: rows[0].id, distance: Number(rows[0].distance) } : null;
    },
  };
}

/**
 * The index of a database: on SQLite the sqlite-vec table is always kept (so either lookup can be chosen
 * at any time) and `method` answers; PostgreSQL has multi-index hashing only, prepared when `prepared` is given
 * (Database.prepared).
 */
export function similarityIndexFor(
  dialect: Dialect,
  method: LookupMethod,
  prepared: PreparedStatements | null = null,
): SimilarityIndex {
  const mih = multiIndexHashing(dialect, prepared);
  if (dialect.name === 'postgres') return mih;
  const vec = sqliteVecIndex(dialect);
  return { ...vec, kind: method, findNear: (...args) => (method === 'sqlite-vec' ? vec : mih).findNear(...args) };
}
