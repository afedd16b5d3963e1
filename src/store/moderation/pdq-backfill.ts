/**
 * PDQ for the images stored before it was computed (m012; `pixvote media backfill-pdq`): each such upload's PDQ
 * from its stored `full` variant, written where the row still has none, and checked against the blocklist's PDQ
 * entries as an upload's is: a match of quality ≥ 50 holds a visible upload (modlog `auto_hold`), as the hold job
 * would have had the upload had its PDQ when the entry came. Resumable: rows are taken in id order after the last
 * one done, and a row hashed meanwhile (or twice) is left as it is.
 */
import type { VariantRead } from '../../domain/uploads/ports.ts';
import type { VariantName } from '../../domain/uploads/processed-image.ts';
import type { Database } from '../database.ts';
import { pdqBlocklisted } from './pdq-lookup.ts';
import { holdUpload } from './upload-states.ts';

/** Quality under which a PDQ is not matched (API.md Blocklist). */
const MIN_QUALITY = 50;

export interface PdqBackfillCounts {
  hashed: number;
  held: number;
  /** No stored `full` variant could be read, or it did not decode. */
  missing: number;
}

export async function backfillPdq(
  db: Database,
  deps: {
    read(mediaKey: string, variant: VariantName): Promise<VariantRead | null>;
    hash(bytes: Uint8Array): Promise<{ hash: string; quality: number } | null>;
  },
  opts: { batch: number; maxDistance: number; at: () => Date; progress?: (c: PdqBackfillCounts) => void },
): Promise<PdqBackfillCounts> {
  const counts: PdqBackfillCounts = { hashed: 0, held: 0, missing: 0 };
  const d = db.dialect;
  let after: string | null = null;
  for (;;) {
    let q = db
      .db()
      .selectFrom('uploads')
      .select(['id', 'media_key'])
      .where('pdq', 'is', null)
      .where('media_key', 'is not', null)
      .where('moderation', '<>', 'removed');
    if (after) q = q.where('id', '>', after);
    const rows = await q.orderBy('id').limit(opts.batch).execute();
    if (!rows.length) return counts;
    for (const row of rows) {
      after = row.id;
      const found = await deps.read(row.media_key!, 'full');
      const bytes = found && 'body' in found ? await readAll(found.body) : null;
      const pdq = bytes ? await deps.hash(bytes).catch(() => null) : null;
      if (!pdq) {
        counts.missing++;
        continue;
      }
      const held = await db.transaction(async (_em, tx) => {
        const set = await tx
          .updateTable('uploads')
          .set({ pdq: pdq.hash, pdq_quality: pdq.quality })
          .where('id', '=', row.id)
          .where('pdq', 'is', null)
          .executeTakeFirst();
        if (!Number(set.numUpdatedRows) || pdq.quality < MIN_QUALITY) return false;
        if (!(await pdqBlocklisted(tx, pdq.hash, opts.maxDistance))) return false;
        return holdUpload(tx, d, row.id, {
          at: opts.at(),
          line: { action: 'auto_hold', reason: 'matches the blocklist', moderator: null },
        });
      });
      counts.hashed++;
      if (held) counts.held++;
    }
    opts.progress?.(counts);
  }
}

async function readAll(body: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const c of body) chunks.push(c);
  return Buffer.concat(chunks);
}
