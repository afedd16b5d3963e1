/**
 * The blocklist's PDQ lookup in SQL (m016, similarity/pdq-hamming.ts): one indexed query reads the entries filed
 * under any of the 272 chunk keys within one bit of the hash's sixteen chunks (at distance ≤ 31), then each
 * candidate's distance is checked here. Used by the insert's re-check, inside its transaction, under the blocklist's
 * lock (insert-guard.ts), by the upload's check while its process's in-memory copy is older than the version the
 * upload read (blocklist-cache.ts), and by tests. The upload's check otherwise answers from that copy: the SQL
 * lookup parses 272 keys and reads ~420 candidate rows at 100k entries (bench/README.md, "PDQ lookup").
 */
import type { Kysely } from 'kysely';
import type { DB } from '../database-types.ts';
import { pdqCandidateKeys, pdqDistanceWords, pdqWords } from '../similarity/pdq-hamming.ts';

/** Keys per `in (…)` list: far below both databases' limits of bound parameters. */
const KEYS_PER_QUERY = 1000;

/** The PDQ of every entry filed under one of these chunk keys (blocklist_pdq_chunks' primary key, then the entry's). */
export const pdqCandidatesQuery = (db: Kysely<DB>, keys: number[]) =>
  db
    .selectFrom('blocklist')
    .select('pdq')
    .where('id', 'in', (eb) => eb.selectFrom('blocklist_pdq_chunks').select('entry_id').where('chunk', 'in', keys));

export async function pdqBlocklisted(db: Kysely<DB>, pdq: string, maxDistance: number): Promise<boolean> {
  if (maxDistance < 0) return false;
  const q = pdqWords(pdq);
  const keys = pdqCandidateKeys(pdq, maxDistance);
  for (let i = 0; i < keys.length; i += KEYS_PER_QUERY) {
    const rows = await pdqCandidatesQuery(db, keys.slice(i, i + KEYS_PER_QUERY)).execute();
    if (rows.some((r) => r.pdq !== null && pdqDistanceWords(pdqWords(r.pdq), q) <= maxDistance)) return true;
  }
  return false;
}
