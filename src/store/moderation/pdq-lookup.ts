/**
 * Whether a PDQ entry of the blocklist lies within a distance of a hash: multi-index hashing over the entries'
 * chunk rows (m016, similarity/pdq-hamming.ts). One indexed query reads the entries filed under any of the 272
 * keys within one bit of the hash's sixteen chunks (at distance ≤ 31), then each candidate's distance is checked
 * here. Used by the upload's early check and by its insert's re-check (insert-guard.ts), on both databases.
 */
import type { Kysely } from 'kysely';
import type { DB } from '../database-types.ts';
import { pdqCandidateKeys, pdqDistanceWords, pdqWords } from '../similarity/pdq-hamming.ts';

/** Keys per `in (…)` list: far below both databases' limits of bound parameters. */
const KEYS_PER_QUERY = 1000;

export async function pdqBlocklisted(db: Kysely<DB>, pdq: string, maxDistance: number): Promise<boolean> {
  if (maxDistance < 0) return false;
  const q = pdqWords(pdq);
  const keys = pdqCandidateKeys(pdq, maxDistance);
  for (let i = 0; i < keys.length; i += KEYS_PER_QUERY) {
    const rows = await db
      .selectFrom('blocklist')
      .select('pdq')
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('blocklist_pdq_chunks')
          .select('entry_id')
          .where('chunk', 'in', keys.slice(i, i + KEYS_PER_QUERY)),
      )
      .execute();
    if (rows.some((r) => r.pdq !== null && pdqDistanceWords(pdqWords(r.pdq), q) <= maxDistance)) return true;
  }
  return false;
}
