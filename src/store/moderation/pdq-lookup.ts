/**
 * The blocklist's PDQ lookup, two ways over the same entries (m016, similarity/pdq-hamming.ts):
 *
 * - `pdqBlocklisted`, in SQL: one indexed query reads the entries filed under any of the 272 chunk keys within one
 *   bit of the hash's sixteen chunks (at distance ≤ 31), then each candidate's distance is checked here. Used by the
 *   insert's re-check, inside its transaction, under the blocklist's lock (insert-guard.ts), and by tests.
 * - `PdqBlocklistCache`, in memory, for the upload's early check (one per process): every PDQ entry in a PdqSet
 *   (probe layout), rebuilt when the blocklist's version moved since it was built. Every addition and every removal
 *   bumps the version in its own transaction, and the cache reads the version before the entries, so what it holds
 *   is never older than the version it is labelled with: a process sees another's additions and removals at its
 *   next lookup. A lookup costs the version read (a primary-key read) and microseconds of matching, where the SQL
 *   lookup parses 272 keys and reads ~420 candidate rows at 100k entries (bench/README.md, "PDQ lookup").
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { DB } from '../database-types.ts';
import { PdqSet, pdqCandidateKeys, pdqDistanceWords, pdqWords } from '../similarity/pdq-hamming.ts';

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

/** Entries read per page while the cache is rebuilt (the loop gets a turn between pages). */
const LOAD_PAGE = 20_000;

export class PdqBlocklistCache {
  readonly #db: () => Kysely<DB>;
  /** The blocklist's version (insert-guard.ts's blocklistVersion, passed in: that module uses this one). */
  readonly #version: () => Promise<number>;
  /** The set built at `version` for `distance`; a rebuild in flight is shared by the lookups waiting for it. */
  #built: { version: number; distance: number; set: Promise<PdqSet> } | null = null;

  constructor(db: () => Kysely<DB>, version: () => Promise<number>) {
    this.#db = db;
    this.#version = version;
  }

  async blocks(pdq: string, maxDistance: number): Promise<boolean> {
    if (maxDistance < 0) return false;
    const version = await this.#version();
    const built = this.#built;
    if (!built || built.version !== version || built.distance !== maxDistance) {
      const set = this.#load(maxDistance);
      this.#built = { version, distance: maxDistance, set };
      // A failed load is not kept: the next lookup tries again.
      set.catch(() => {
        if (this.#built?.set === set) this.#built = null;
      });
      return (await set).matches(pdq);
    }
    return (await built.set).matches(pdq);
  }

  async #load(maxDistance: number): Promise<PdqSet> {
    const hashes: string[] = [];
    let after = '00000000-0000-0000-0000-000000000000';
    for (;;) {
      const rows = await this.#db()
        .selectFrom('blocklist')
        .select(['id', 'pdq'])
        .where('pdq', 'is not', null)
        .where('id', '>', after)
        .orderBy('id')
        .limit(LOAD_PAGE)
        .execute();
      for (const r of rows) hashes.push(r.pdq!);
      if (rows.length < LOAD_PAGE) return new PdqSet(hashes, maxDistance, 'probe');
      after = rows.at(-1)!.id;
      await yieldToEventLoop();
    }
  }
}
