/**
 * The moderators' blocklist: exact SHA-256 entries (one indexed lookup), perceptual hashes matched within a
 * distance by the near-duplicate machinery (nearRows: multi-index hashing over the entries' chunk columns), and PDQ
 * hashes matched within BLOCKLIST_PDQ_DISTANCE (pdq-lookup.ts: multi-index hashing over blocklist_pdq_chunks).
 * New entries are queued (blocklist_pending) for the job that holds the stored uploads they match; the queue is
 * durable, so the job resumes after a restart and several processes may run it at once (holding is idempotent
 * under the upload's lock).
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import { sql, type CompiledQuery, type Kysely } from 'kysely';
import type { BlocklistStore } from '../../domain/moderation/ports.ts';
import type {
  BlocklistEntry,
  Moderator,
  NearDistances,
  NearHashes,
  NewBlocklistEntry,
  NewModlogEntry,
} from '../../domain/moderation/moderation.types.ts';
import type { Database } from '../database.ts';
import type { DB } from '../database-types.ts';
import type { Dialect } from '../dialect.ts';
import { blocklistChunkColumns } from '../similarity/hamming.ts';
import { nearRows } from '../similarity/similarity-index.ts';
import { appendModlog } from './modlog.ts';
import { holdUpload } from './upload-states.ts';
import { PhashSet } from './phash-set.ts';
import { bumpBlocklistVersion, lockBlocklistForAdd, nearBlocklisted, versionQuery } from './insert-guard.ts';
import { PDQ_MIN_QUALITY } from '../../domain/moderation/moderation.types.ts';
import { PdqSet, pdqChunkKeys } from '../similarity/pdq-hamming.ts';
import { BlocklistCache } from './blocklist-cache.ts';
import { importStepOnThread, type AddOptions, type HoldJobRef } from './blocklist-import.ts';

type Hashes = { sha256: string | null; phash: string | null; pdq?: string | null };

/** `sha256:phash`, and `:pdq` when the entry has a PDQ (so the keys of entries before m016 stay as they were). */
const entryKey = (e: Hashes) => `${e.sha256 ?? ''}:${e.phash ?? ''}${e.pdq ? `:${e.pdq}` : ''}`;

/** BLOCKLIST_PDQ_DISTANCE's default (API.md Blocklist). */
const PDQ_DISTANCE = 31;

/** A blocklist row for an entry: a fresh id, the perceptual hash's chunks, and the key that makes it unique. */
export function blocklistRow(d: Dialect, e: NewBlocklistEntry, source: 'moderation' | 'import', at: Date) {
  return {
    id: randomUUID(),
    sha256: e.sha256,
    phash: e.phash,
    ...blocklistChunkColumns(e.phash),
    pdq: e.pdq ?? null,
    entry_key: entryKey(e),
    reason: e.reason,
    source,
    created_at: d.date(at),
  };
}

/** Rows per multi-row insert: well under both databases' limits of bound parameters. */
const INSERT_CHUNK = 500;

/**
 * Adds the entries not present yet (inside the caller's transaction), each with its modlog `block` line, and
 * queues them for the holding job (a new one, or `opts.job` of an import's earlier steps). Returns the ids added.
 */
export async function addBlocklistEntries(
  db: Kysely<DB>,
  d: Dialect,
  entries: NewBlocklistEntry[],
  opts: AddOptions,
): Promise<string[]> {
  // Exclusive: waits for the uploads being inserted (the hold job then finds them), and later inserts wait for
  // these entries and are refused by them (insert-guard.ts).
  await lockBlocklistForAdd(db, d);
  const added: string[] = [];
  const job = opts.job ?? { id: randomUUID(), added: 0 };
  const seen = new Set<string>();
  const unique = entries.filter((e) => !seen.has(entryKey(e)) && seen.add(entryKey(e)));
  for (let i = 0; i < unique.length; i += INSERT_CHUNK) {
    const part = unique.slice(i, i + INSERT_CHUNK);
    const rows = await db
      .insertInto('blocklist')
      .values(part.map((e) => blocklistRow(d, e, opts.source, opts.at)))
      .onConflict((oc) => oc.column('entry_key').doNothing())
      .returning(['id', 'reason', 'pdq'])
      .execute();
    if (!rows.length) continue;
    added.push(...rows.map((r) => r.id));
    const chunks = rows.flatMap((r) => (r.pdq ? pdqChunkKeys(r.pdq).map((chunk) => ({ chunk, entry_id: r.id })) : []));
    for (let j = 0; j < chunks.length; j += INSERT_CHUNK)
      await db
        .insertInto('blocklist_pdq_chunks')
        .values(chunks.slice(j, j + INSERT_CHUNK))
        .execute();
    await db
      .insertInto('blocklist_pending')
      .values(rows.map((r) => ({ entry_id: r.id, created_at: d.date(opts.at), job_id: job.id })))
      .execute();
    const lines: NewModlogEntry[] = rows.map((r) => ({
      action: 'block',
      target: { type: 'blocklist', id: r.id },
      reason: r.reason,
      moderator: opts.moderator,
    }));
    await appendModlog(db, d, lines, opts.at);
  }
  if (!added.length) return added;
  await bumpBlocklistVersion(db);
  // Visible among the moderation jobs (GET /api/admin/jobs): its progress counts the entries the hold job handled.
  const total = job.added + added.length;
  const reason = total === 1 ? (entries.find((e) => e.reason)?.reason ?? '') : `${total} entries`;
  if (job.added === 0)
    await db
      .insertInto('moderation_jobs')
      .values({
        id: job.id,
        kind: 'blocklist_hold',
        status: 'queued',
        target_type: 'blocklist',
        target_id: null,
        reason,
        moderator_id: opts.moderator?.id ?? null,
        moderator_name: opts.moderator?.username ?? null,
        total,
        created_at: d.date(opts.at),
        updated_at: d.date(opts.at),
      })
      .execute();
  else
    await db
      .updateTable('moderation_jobs')
      .set((eb) => ({
        total: sql`${eb.ref('total')} + ${added.length}`,
        reason,
        // The hold job may have handled every entry of the earlier steps already: these are still to do.
        status: sql`case when ${eb.ref('status')} = 'done' then 'running' else ${eb.ref('status')} end`,
        updated_at: d.date(opts.at),
      }))
      .where('id', '=', job.id)
      .execute();
  return added;
}

/**
 * An import's step: a transaction that takes about `ms` (its size adapts to what the last one took, from `min`
 * entries), then the event loop's turn. A step is what the other writers may wait for: on SQLite the one writer's
 * place (the main connection's writes wait on the event loop, so steps are short; without an import thread the
 * event loop waits for the whole step: 5 000 PDQ entries in one transaction kept /healthz waiting 26.7 s, issue 44);
 * on PostgreSQL the blocklist's lock, which every upload's insert takes shared, while the event loop only awaits:
 * longer steps there, each paying its commit's WAL flush once for more entries.
 */
const IMPORT_STEP = { sqlite: { ms: 25, min: 50 }, postgres: { ms: 200, min: 50 } } as const;
/** At most INSERT_CHUNK: a step is one multi-row insert of entries. */
const IMPORT_STEP_MAX = INSERT_CHUNK;

/**
 * PostgreSQL plans each chunk row's foreign-key check once per connection, from the blocklist's statistics: planned
 * while the blocklist was analyzed small (or empty), it scans the whole table for every row, and an import slows
 * as it grows (3 000 PDQ entries: 5.2 s instead of 0.56 s, the steps shrinking to ~60 entries of 200 ms). ANALYZE
 * after bulk writes, as PostgreSQL's manual advises: new statistics invalidate the cached plans. The sample is
 * bounded (300 × default_statistics_target rows), so it costs ~100 ms even at 300k entries.
 */
const ANALYZE_FROM = 1000;
async function analyzeBlocklist(db: Kysely<DB>): Promise<void> {
  await sql`analyze blocklist, blocklist_pdq_chunks`.execute(db);
}

/**
 * The version and whether an entry has this SHA-256, in one statement: the version's primary key and one probe of
 * blocklist_sha256_index (test/integration/blocklist-check.test.ts checks both plans).
 */
export const checkBytesQuery = (db: Kysely<DB>, sha256: string) =>
  db
    .selectFrom('blocklist_version as v')
    .select('v.version')
    .select((eb) =>
      eb.exists(eb.selectFrom('blocklist as b').select('b.id').where('b.sha256', '=', sha256)).as('blocked'),
    )
    .where('v.id', '=', 1);

export class BlocklistRepository implements BlocklistStore {
  readonly #db: Database;
  /** From this many perceptual hashes on, the job scans the uploads once instead of one lookup per entry. */
  readonly #scanFrom: number;
  /** Stored hashes read per page of that scan. */
  readonly #scanPage: number;
  /** The perceptual hashes and PDQs in memory, rebuilt when the blocklist's version moved (blocklist-cache.ts). */
  readonly #near: BlocklistCache;

  constructor(db: Database, opts: { scanFrom?: number; scanPage?: number } = {}) {
    this.#db = db;
    this.#near = new BlocklistCache(
      () => db.read(),
      () => this.version(),
    );
    db.onClose(() => this.#near.close());
    this.#scanFrom = opts.scanFrom ?? 100;
    this.#scanPage = opts.scanPage ?? SCAN_PAGE;
  }

  /** One short read, run as a prepared statement on PostgreSQL (Database.prepared; SQLite keeps every statement). */
  #query<R>(query: { compile(): CompiledQuery<R>; execute(): Promise<R[]> }): Promise<R[]> {
    const { prepared } = this.#db;
    return prepared ? prepared.query(query.compile()) : query.execute();
  }

  async version(): Promise<number> {
    const rows = await this.#query(versionQuery(this.#db.db()));
    return Number(rows[0]?.version ?? 0);
  }

  /**
   * The blocklist's version and whether an entry blocks these bytes (exact SHA-256), in one statement: the
   * version's primary key and one probe of the SHA-256 index, read in one snapshot.
   */
  async checkBytes(sha256: string): Promise<{ version: number; blocked: boolean }> {
    const rows = await this.#query(checkBytesQuery(this.#db.db(), sha256));
    const row = rows[0];
    return { version: Number(row?.version ?? 0), blocked: row ? this.#db.dialect.readBool(row.blocked) : false };
  }

  /** The digests among these that an entry blocks (one indexed query for a batch pre-check). */
  async blockedSha256Among(sha256s: readonly string[]): Promise<Set<string>> {
    if (!sha256s.length) return new Set();
    const rows = await this.#db
      .db()
      .selectFrom('blocklist')
      .select('sha256')
      .distinct()
      .where('sha256', 'in', [...sha256s])
      .execute();
    return new Set(rows.map((r) => r.sha256).filter((s): s is string => s !== null));
  }

  /**
   * Whether a blocklisted perceptual hash lies within `distances.phash` of `hashes.phash`, or a blocklisted PDQ
   * within `distances.pdq` of `hashes.pdq` (the caller passes a PDQ only when its quality counts), seeing at least
   * every entry present at `version`: from this process's copy in memory when it is that recent, else in SQL (the
   * insert's re-check's lookups) while the copy is rebuilt (blocklist-cache.ts).
   */
  async blocksNear(hashes: NearHashes, distances: NearDistances, version: number): Promise<boolean> {
    const known = this.#near.blocks(hashes, distances, version);
    if (known !== null) return known;
    // The caller judged the PDQ's quality already.
    const pdq =
      hashes.pdq === null ? undefined : { hash: hashes.pdq, quality: PDQ_MIN_QUALITY, distance: distances.pdq };
    return nearBlocklisted(this.#db.db(), this.#db.dialect, hashes.phash, distances.phash, pdq, this.#db.prepared);
  }

  async blocksPdq(pdq: string, maxDistance: number): Promise<boolean> {
    return this.blocksNear({ phash: null, pdq }, { phash: -1, pdq: maxDistance }, await this.version());
  }

  /** Builds this process's copy of the entries' near hashes now (bench and tests: the check's steady state). */
  warm(): Promise<void> {
    return this.#near.load();
  }

  async list(offset: number, limit: number): Promise<BlocklistEntry[]> {
    const d = this.#db.dialect;
    const rows = await this.#db
      .db()
      .selectFrom('blocklist')
      .select(['id', 'sha256', 'phash', 'pdq', 'reason', 'source', 'created_at'])
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .offset(offset)
      .execute();
    return rows.map((r) => ({
      id: r.id,
      sha256: r.sha256,
      phash: r.phash,
      pdq: r.pdq,
      reason: r.reason,
      source: r.source,
      createdAt: d.readDate(r.created_at),
    }));
  }

  /**
   * An import: the entries in transactions of bounded size (IMPORT_STEP), each committed with its modlog lines and
   * its share of one `blocklist_hold` job, the event loop getting a turn between them. A process that dies mid-way
   * keeps the steps committed and their job (the hold job runs them after a restart); sending the entries again
   * skips those, as any entry already present.
   */
  async add(entries: NewBlocklistEntry[], opts: { source: 'moderation' | 'import'; moderator: Moderator; at: Date }) {
    const seen = new Set<string>();
    const unique = entries.filter((e) => !seen.has(entryKey(e)) && seen.add(entryKey(e)));
    const job: HoldJobRef = { id: randomUUID(), added: 0 };
    const budget = IMPORT_STEP[this.#db.dialect.name];
    let size: number = budget.min;
    // PostgreSQL: fresh statistics as the tables grow (the first step, then each time the import doubled them).
    let analyzedAt = 0;
    for (let i = 0; i < unique.length;) {
      const part = unique.slice(i, i + size);
      const started = performance.now();
      const step = { ...opts, job: { ...job } };
      const file = this.#db.sqliteFile;
      const added = file
        ? await importStepOnThread(file, part, step)
        : await this.#db.transaction((_em, db) => addBlocklistEntries(db, this.#db.dialect, part, step));
      const took = performance.now() - started;
      job.added += added.length;
      i += part.length;
      if (!file && job.added >= analyzedAt * 2) {
        await analyzeBlocklist(this.#db.db());
        analyzedAt = Math.max(job.added, ANALYZE_FROM);
      }
      if (i >= unique.length) break;
      size = Math.round(Math.min(IMPORT_STEP_MAX, Math.max(budget.min, (size * budget.ms) / Math.max(took, 1))));
      await yieldToEventLoop();
    }
    return {
      added: job.added,
      skipped: entries.length - job.added,
      job: job.added ? { id: job.id } : null,
    };
  }

  async dryRun(entries: NewBlocklistEntry[], maxDistance: number, pdqDistance = PDQ_DISTANCE) {
    // Reads only, of what is committed: on SQLite's reader threads, off the event loop (as the hold job's).
    const db = this.#db.read();
    const keys = [...new Set(entries.map(entryKey))];
    const present = new Set<string>();
    for (let i = 0; i < keys.length; i += INSERT_CHUNK) {
      const rows = await db
        .selectFrom('blocklist')
        .select('entry_key')
        .where('entry_key', 'in', keys.slice(i, i + INSERT_CHUNK))
        .execute();
      for (const r of rows) present.add(r.entry_key);
    }
    const fresh = entries.filter((e) => !present.has(entryKey(e)));
    const freshKeys = new Set(fresh.map(entryKey));
    const matches = await this.#matchingUploads(db, [...freshKeys].map(fromKey), maxDistance, pdqDistance);
    return { added: freshKeys.size, skipped: entries.length - freshKeys.size, matches: matches.size };
  }

  remove(id: string, opts: { moderator: Moderator; at: Date }) {
    const d = this.#db.dialect;
    return this.#db.transaction(async (_em, db) => {
      await db.deleteFrom('blocklist_pdq_chunks').where('entry_id', '=', id).execute();
      const gone = await db.deleteFrom('blocklist').where('id', '=', id).returning(['reason']).execute();
      if (!gone.length) return false;
      // Every process's in-memory PDQ entries are rebuilt at their next lookup (pdq-lookup.ts).
      await bumpBlocklistVersion(db);
      // Still queued for the hold job: nothing left to hold for it, counted as handled in its job's progress.
      const pending = await db.deleteFrom('blocklist_pending').where('entry_id', '=', id).returning('job_id').execute();
      await countHandled(db, d, countsByJob(pending), opts.at);
      await appendModlog(
        db,
        d,
        [{ action: 'unblock', target: { type: 'blocklist', id }, reason: gone[0]!.reason, moderator: opts.moderator }],
        opts.at,
      );
      return true;
    });
  }

  async size(): Promise<number> {
    const row = await this.#db
      .db()
      .selectFrom('blocklist')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async holdMatches(batch: number, maxDistance: number, at: Date, pdqDistance = PDQ_DISTANCE) {
    // The queue and the scan of the stored hashes are reads of what is committed (the entries were, before the job
    // was kicked): on SQLite's reader threads, so that a page of 5 000 rows, or sorting a long queue, does not hold
    // the event loop; the holds and the dequeue are writes, on the main connection.
    const db = this.#db.read();
    const pending = await db
      .selectFrom('blocklist_pending as p')
      .leftJoin('blocklist as b', 'b.id', 'p.entry_id')
      .select(['p.entry_id', 'b.sha256', 'b.phash', 'b.pdq'])
      .orderBy('p.created_at')
      .orderBy('p.entry_id')
      .limit(batch)
      .execute();
    if (!pending.length) return { entries: 0, held: 0 };
    const ids = await this.#matchingUploads(db, pending, maxDistance, pdqDistance);
    let held = 0;
    for (const uploadId of ids) {
      const done = await this.#db.transaction((_em, tx) =>
        holdUpload(tx, this.#db.dialect, uploadId, {
          at,
          line: { action: 'auto_hold', reason: 'matches the blocklist', moderator: null },
        }),
      );
      if (done) held++;
    }
    // Dequeued only once their matches are held: a crash before this line runs them again (holding is idempotent).
    // Each job's progress counts the entries this run dequeued (not another process running the same entries).
    const done = pending.map((p) => p.entry_id);
    const gone: Array<{ job_id: string | null }> = [];
    for (let i = 0; i < done.length; i += INSERT_CHUNK) {
      gone.push(
        ...(await this.#db
          .db()
          .deleteFrom('blocklist_pending')
          .where('entry_id', 'in', done.slice(i, i + INSERT_CHUNK))
          .returning('job_id')
          .execute()),
      );
      await yieldToEventLoop();
    }
    await countHandled(this.#db.db(), this.#db.dialect, countsByJob(gone), at);
    return { entries: pending.length, held };
  }

  /**
   * Ids of the visible stored uploads these entries match: exact SHA-256, perceptual hash within maxDistance, or
   * PDQ (of quality ≥ PDQ_MIN_QUALITY) within pdqDistance.
   */
  async #matchingUploads(
    db: Kysely<DB>,
    entries: Hashes[],
    maxDistance: number,
    pdqDistance: number,
  ): Promise<Set<string>> {
    const d = this.#db.dialect;
    const out = new Set<string>();
    const shas = [...new Set(entries.flatMap((e) => (e.sha256 ? [e.sha256] : [])))];
    for (let i = 0; i < shas.length; i += INSERT_CHUNK) {
      const rows = await db
        .selectFrom('uploads')
        .select('id')
        .where('sha256', 'in', shas.slice(i, i + INSERT_CHUNK))
        .where('moderation', '=', 'visible')
        .execute();
      for (const r of rows) out.add(r.id);
    }
    const pdqs = [...new Set(entries.flatMap((e) => (e.pdq ? [e.pdq] : [])))];
    if (pdqs.length) {
      const set = new PdqSet(pdqs, pdqDistance);
      await this.#scan(db, 'pdq', (h) => set.matches(h), out);
    }
    const phashes = [...new Set(entries.flatMap((e) => (e.phash ? [e.phash] : [])))];
    if (!phashes.length) return out;
    const visible = sql<boolean>`u.moderation = 'visible'`;
    if (phashes.length < this.#scanFrom) {
      for (const h of phashes) {
        const { rows } = await nearRows(d, 'uploads', h, maxDistance, { filter: visible }).execute(db);
        for (const r of rows) out.add(r.id);
      }
      return out;
    }
    // Many hashes: one pass over the stored hashes against an in-memory index.
    const set = new PhashSet(phashes, maxDistance);
    await this.#scan(db, 'phash', (h) => set.matches(h), out);
    return out;
  }

  /**
   * One pass over the visible uploads' stored hashes of a column (in id order, a page at a time), adding those
   * `matches` says yes to. The job runs on a gateway's event loop: `db` is the reader (SQLite reads the pages on
   * its reader threads), and after each page's matching the loop gets a turn, so requests wait for one page's
   * matching at most, not for the whole scan. PDQ: only those
   * of quality ≥ 50. The stored PDQ has no index (16 chunk rows per upload would outweigh the blocklist itself).
   */
  async #scan(db: Kysely<DB>, column: 'phash' | 'pdq', matches: (hash: string) => boolean, out: Set<string>) {
    let after = '00000000-0000-0000-0000-000000000000';
    for (;;) {
      let q = db
        .selectFrom('uploads')
        .select(['id', `${column} as hash`])
        .where('id', '>', after)
        .where(column, 'is not', null)
        .where('moderation', '=', 'visible');
      if (column === 'pdq') q = q.where('pdq_quality', '>=', PDQ_MIN_QUALITY);
      const rows = await q.orderBy('id').limit(this.#scanPage).execute();
      for (const r of rows) if (matches(r.hash!)) out.add(r.id);
      if (rows.length < this.#scanPage) return;
      after = rows.at(-1)!.id;
      await yieldToEventLoop();
    }
  }
}

/** How many dequeued entries each `blocklist_hold` job had (entries queued before m010 have none). */
function countsByJob(rows: Array<{ job_id: string | null }>): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of rows) if (r.job_id) out.set(r.job_id, (out.get(r.job_id) ?? 0) + 1);
  return out;
}

/** Adds dequeued entries to their jobs' progress; a job whose every entry is handled is done. */
async function countHandled(db: Kysely<DB>, d: Dialect, perJob: Map<string, number>, at: Date): Promise<void> {
  for (const [jobId, n] of perJob)
    await db
      .updateTable('moderation_jobs')
      .set((eb) => ({
        done: sql`${eb.ref('done')} + ${n}`,
        status: sql`case when ${eb.ref('done')} + ${n} >= ${eb.ref('total')} then 'done' else 'running' end`,
        updated_at: d.date(at),
      }))
      .where('id', '=', jobId)
      .execute();
}

/** 5 000 rows of (id, phash): a few milliseconds of SQLite reading and matching on this machine. */
const SCAN_PAGE = 5_000;

const fromKey = (key: string): Hashes => {
  const [sha256, phash, pdq] = key.split(':');
  return { sha256: sha256 || null, phash: phash || null, pdq: pdq || null };
};
