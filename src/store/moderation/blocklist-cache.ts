/**
 * The blocklist's perceptual hashes and PDQ hashes in memory, one copy per process, for the upload's check (issue 48):
 * a PhashSet and a PdqSet in their probe layouts (each entry filed under its own chunks; a query reads the buckets
 * within its distance), built from one pass over the entries and labelled with the blocklist's version read before
 * that pass. In SQL the pHash check probed 548 chunk values at BLOCKLIST_DISTANCE = 8 and the PDQ check 272 keys
 * with ~420 candidate rows at 100k entries; here each is microseconds (bench/README.md, Blocklist).
 *
 * Correct across processes: every addition and every removal bumps the version in its own transaction, and a set
 * labelled V was read after V committed, so it holds every entry present at V that is still there (and perhaps
 * some added later). An upload reads the version before its checks (with its SHA-256 lookup, one statement); a set
 * labelled at least that version answers for it, and entries added after that version are the insert's re-check's
 * (insert-guard.ts). A set older than the version asked answers nothing: the caller looks the hashes up in SQL
 * (the same exact lookups the insert's re-check makes), and a rebuild starts in the background — one at a time,
 * and never more than a third of the time (an import bumps the version every step: a process rebuilding after
 * each would spend its event loop on it; meanwhile the SQL lookups answer). close() ends that background work: no
 * rebuild starts after it, the one in flight stops at its next page, and close() waits for it (the database's close
 * runs it first: a rebuild's connection checked out while the pools end held a test's close() for 14 minutes).
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { NearDistances, NearHashes } from '../../domain/moderation/moderation.types.ts';
import type { DB } from '../database-types.ts';
import { PdqSet } from '../similarity/pdq-hamming.ts';
import { PhashSet } from './phash-set.ts';

/** Entries read per page while the sets are built (the loop gets a turn between pages). */
const LOAD_PAGE = 20_000;

/** After a rebuild that took T, the next starts no sooner than 2T after it ended. */
const IDLE_PER_BUSY = 2;

interface Built {
  version: number;
  phash: PhashSet;
  pdq: PdqSet;
}

export class BlocklistCache {
  readonly #db: () => Kysely<DB>;
  /** The blocklist's version (insert-guard.ts's blocklistVersion, passed in: read before the entries). */
  readonly #version: () => Promise<number>;
  #built: Built | null = null;
  #loading: Promise<void> | null = null;
  /** performance.now() before which no rebuild starts (IDLE_PER_BUSY). */
  #restAfter = 0;
  #closed = false;

  /** Entries read per page of a rebuild (LOAD_PAGE; a test makes it small). */
  readonly #page: number;

  constructor(db: () => Kysely<DB>, version: () => Promise<number>, opts: { page?: number } = {}) {
    this.#db = db;
    this.#version = version;
    this.#page = opts.page ?? LOAD_PAGE;
  }

  /**
   * Whether a blocklisted hash lies within the distance of one of `hashes`, answered from memory when the sets
   * were built at `version` or later; null when they were not (a rebuild is started: look the hashes up in SQL).
   */
  blocks(hashes: NearHashes, distances: NearDistances, version: number): boolean | null {
    const built = this.#built;
    if (!built || built.version < version) {
      if (!this.#loading && !this.#closed && performance.now() >= this.#restAfter) void this.load().catch(() => {});
      return null;
    }
    return (
      (hashes.phash !== null && built.phash.matches(hashes.phash, distances.phash)) ||
      (hashes.pdq !== null && built.pdq.matches(hashes.pdq, distances.pdq))
    );
  }

  /** Builds the sets now (or waits for the build in flight); a failed build leaves the last one in place. */
  load(): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('the blocklist copy is closed'));
    this.#loading ??= this.#load().finally(() => {
      this.#loading = null;
    });
    return this.#loading;
  }

  async #load(): Promise<void> {
    const started = performance.now();
    try {
      const version = await this.#version();
      const phashes: string[] = [];
      const pdqs: string[] = [];
      let after = '00000000-0000-0000-0000-000000000000';
      for (;;) {
        const rows = await this.#db()
          .selectFrom('blocklist')
          .select(['id', 'phash', 'pdq'])
          .where((eb) => eb.or([eb('phash', 'is not', null), eb('pdq', 'is not', null)]))
          .where('id', '>', after)
          .orderBy('id')
          .limit(this.#page)
          .execute();
        for (const r of rows) {
          if (r.phash !== null) phashes.push(r.phash);
          if (r.pdq !== null) pdqs.push(r.pdq);
        }
        if (rows.length < this.#page) break;
        after = rows.at(-1)!.id;
        await yieldToEventLoop();
        if (this.#closed) return;
      }
      // The distances are the queries': probe layouts answer any (the constructor's is their default only). The
      // loop gets a turn between the two (each ~50 ms at 50k entries on an idle core, ten times that under load).
      const phash = new PhashSet(phashes, 0, 'probe');
      await yieldToEventLoop();
      if (this.#closed) return;
      const built = { version, phash, pdq: new PdqSet(pdqs, 0, 'probe') };
      if (!this.#built || this.#built.version <= version) this.#built = built;
    } finally {
      const ended = performance.now();
      this.#restAfter = ended + (ended - started) * IDLE_PER_BUSY;
    }
  }

  /** No rebuild after this; waits for the one in flight (which stops at its next page). */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#loading?.catch(() => {});
  }
}
