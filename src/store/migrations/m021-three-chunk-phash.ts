import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/** The uploads' chunk columns (hamming.ts UPLOAD_CHUNKS) and each one's shift and width in bits. */
const CHUNKS = [
  ['mih0', 42, 22],
  ['mih1', 21, 21],
  ['mih2', 0, 21],
] as const;

/**
 * Near-duplicate lookup reading ~32× fewer candidate rows (issue 29: it grew 3× from 12k to 10M): the uploads' hash
 * chunks go from four of 16 bits (ph0..ph3) to three of 22, 21 and 21 bits (mih0..mih2). At the default distance 4
 * the lookup still probes each chunk within one bit (67 values instead of 68), but each value matches N ÷ 2²¹ rows
 * instead of N ÷ 2¹⁶: ~320 candidates at 10M instead of ~8 100, whose distances made the check 3× slower than at
 * 12k (bench/README.md, "Near-duplicate lookup"). The new columns are filled from the stored hashes (SQLite through
 * `phash_chunk`, node-sqlite.ts, having no hex parsing of its own), get covering indexes like the ones they replace
 * (m009: what the lookup reads, so no candidate is fetched from the table), partial over hashed rows, and the old
 * columns and indexes go. The blocklist keeps its four chunks: it is small, and PhashSet buckets by 16 bits.
 */
export class M021ThreeChunkPhash extends Migration {
  override name = 'm021-three-chunk-phash';

  override up(): void {
    const pg = isPostgres(this.config);
    for (const [c] of CHUNKS) this.addSql(`alter table uploads add column ${c} integer null`);
    const bits = `('x' || phash)::bit(64)::bigint`;
    const chunk = (shift: number, width: number) =>
      pg ? `((${bits} >> ${shift}) & ${2 ** width - 1})::integer` : `phash_chunk(phash, ${shift}, ${width})`;
    this.addSql(
      `update uploads set ${CHUNKS.map(([c, shift, width]) => `${c} = ${chunk(shift, width)}`).join(', ')} ` +
        'where phash is not null',
    );
    for (const [c] of CHUNKS) {
      this.addSql(
        pg
          ? `create index uploads_${c}_covering_index on uploads (${c}) ` +
              `include (phash, is_private, moderation, user_id, created_at, id) where ${c} is not null`
          : `create index uploads_${c}_covering_index on uploads (${c}, phash, is_private, moderation, user_id, ` +
              `created_at, id) where ${c} is not null`,
      );
    }
    for (const c of ['ph0', 'ph1', 'ph2', 'ph3']) {
      this.addSql(`drop index uploads_${c}_covering_index`);
      this.addSql(`alter table uploads drop column ${c}`);
    }
  }
}
