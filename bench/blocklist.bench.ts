/**
 * The blocklist (issue 16) at 1M uploads and 100k entries, on SQLite and PostgreSQL:
 *
 * - the upload-time check as an image upload makes it (upload.service.ts createImage): `checkBytes` (the SHA-256 with
 *   the blocklist's version, one statement), then when the bytes are not blocked `blocksNear` (the pHash within
 *   BLOCKLIST_DISTANCE = 8 and the PDQ within BLOCKLIST_PDQ_DISTANCE = 31, from this process's copy in memory at that
 *   version), p50 and p95, against a yardstick in the same interleaved rounds: the primary-key lookup of an upload.
 *   The entries are a quarter each SHA-256, pHash, PDQ and all three; the probes a quarter each SHA-256 hits, pHash
 *   hits (1–8 bits), PDQ hits (1–31 bits) and misses (every family looked up: the common case), reported apart.
 *   Goal (issue 48) p50 ≤ 1 ms on SQLite, ≤ 2 ms on PostgreSQL, ≤ 5× the yardstick (bench:ci guards the ratio), a
 *   miss no dearer than a hit. Beside it: the same check in SQL (what it costs while the copy is older than the
 *   version: after each blocklist change, until the rebuild lands; and about what it cost before issue 48), the
 *   version read, and the insert's guard (its lock, and the owner's ban with the version in one statement).
 * - the import: `--import` entries (`--matches` of them match stored uploads, by SHA-256 or within 1–8 bits)
 *   added through BlocklistRepository.add, then the background job (ModerationService.holdBlocklistMatches)
 *   until every matching upload is held, with a restart after its first step (the database closed and opened
 *   again, the job resumed from its durable queue). Goal ≤ 60 s. The uploads held must be exactly the ones the
 *   entries match (computed in memory), each with one `auto_hold` modlog line, and the queue must be empty.
 *
 *   npm run bench:blocklist [-- --uploads 1m --entries 100k --db sqlite,postgres --probes 300 --rounds 3
 *                              --import 10k --matches 300 --batch N]
 */
import type { Kysely } from 'kysely';
import type { Database } from '../src/store/database.ts';
import type { DB } from '../src/store/database-types.ts';
import { hammingHex } from '../src/store/similarity/hamming.ts';
import { similarityIndexFor } from '../src/store/similarity/similarity-index.ts';
import { BlocklistRepository, blocklistRow } from '../src/store/moderation/blocklist.repository.ts';
import { PhashSet } from '../src/store/moderation/phash-set.ts';
import { ModerationRepository } from '../src/store/moderation/moderation.repository.ts';
import { JobRepository } from '../src/store/moderation/job.repository.ts';
import { UploadRepository } from '../src/store/repositories/upload.repository.ts';
import { HOLD_BATCH, ModerationService } from '../src/domain/moderation/moderation.service.ts';
import { PDQ_MIN_QUALITY, type NewBlocklistEntry } from '../src/domain/moderation/moderation.types.ts';
import { insertGuardReads, lockBlocklistForInsert, nearBlocklisted } from '../src/store/moderation/insert-guard.ts';
import { pdqChunkKeys } from '../src/store/similarity/pdq-hamming.ts';
import { createBenchDatabase, postgresUnavailable, type BenchDatabase, type DbKind } from './support/bench-database.ts';
import { analyze, insertRows, withIndexesDeferred } from './support/bulk-insert.ts';
import { isMain, numbers, runAlone } from './support/cli.ts';
import { figure, type Recorder } from './support/report.ts';
import {
  flipBits,
  flipPdq,
  growUploads,
  randomHash,
  randomPdq,
  rng,
  seedUsers,
  type Rng,
  type SeededUser,
} from './support/seed.ts';
import { quantile, ratios } from './support/stats.ts';
import { TARGETS, asGoal } from './support/targets.ts';

export interface BlocklistOptions {
  uploads: number;
  entries: number;
  dbs: DbKind[];
  probes: number;
  rounds: number;
  /** Entries imported while the job is timed; 0 skips the import. */
  imports: number;
  /** How many of the imported entries match stored uploads. */
  matches: number;
  /** The job's batch; ModerationService's default when absent. */
  batch?: number;
  /** Tag the lookup ratio as the CI target (bench:ci asserts it). */
  ci?: boolean;
}

/** BLOCKLIST_DISTANCE's and BLOCKLIST_PDQ_DISTANCE's defaults (src/config.ts). */
const DISTANCE = 8;
const PDQ_DISTANCE = 31;
const AT = new Date(Date.UTC(2026, 1, 1));

const randomSha = (r: Rng) => randomHash(r) + randomHash(r) + randomHash(r) + randomHash(r);

/**
 * A random entry of the lookups' blocklist: a quarter SHA-256 only (`block: "exact"`), a quarter perceptual hash
 * only, a quarter PDQ only (an HMA import), a quarter all three (`block: "near"`).
 */
function randomEntry(i: number, r: Rng): NewBlocklistEntry {
  const kind = i % 4;
  return {
    sha256: kind === 0 || kind === 3 ? randomSha(r) : null,
    phash: kind === 1 || kind === 3 ? randomHash(r) : null,
    pdq: kind === 2 || kind === 3 ? randomPdq(r) : null,
    reason: 'bench',
  };
}

/** The import's entries, as bench:blocklist has always made them: a third SHA-256, a third pHash, a third both. */
function importEntry(i: number, r: Rng): NewBlocklistEntry {
  const kind = i % 3;
  return { sha256: kind === 1 ? null : randomSha(r), phash: kind === 0 ? null : randomHash(r), reason: 'bench' };
}

export async function blocklistBench(rec: Recorder, opts: BlocklistOptions): Promise<void> {
  for (const kind of opts.dbs) {
    if (kind === 'postgres') {
      const why = await postgresUnavailable();
      if (why) {
        rec.note(`blocklist on PostgreSQL skipped: ${why}`);
        continue;
      }
    }
    const bdb = await createBenchDatabase(kind);
    let db = await bdb.open();
    try {
      const r = rng(16);
      const users = await seedUsers(db, 100);
      const hashes: string[] = [];
      const { ids, seconds } = await growUploads(db, { size: opts.uploads, hashes, users, r });
      const entries = await seedEntries(db, opts.entries, r);
      rec.add(
        figure('blocklist', `${kind}: seed ${label(opts.uploads)} uploads, ${label(opts.entries)} entries`, 's', [
          seconds + entries.seconds,
        ]),
      );
      await lookups(rec, db, kind, entries.rows, ids, opts, r);
      if (opts.imports > 0) db = await importing(rec, bdb, db, { hashes, ids, users, r }, opts);
    } finally {
      await db.close();
      await bdb.dispose();
    }
  }
}

/** The existing blocklist, inserted as the store writes it (not queued: its matches were held long ago). */
async function seedEntries(db: Database, count: number, r: Rng) {
  const started = performance.now();
  const d = db.dialect;
  const entries = Array.from({ length: count }, (_, i) => randomEntry(i, r));
  const rows = entries.map((e, i) => blocklistRow(d, e, 'import', new Date(AT.getTime() - (count - i) * 1000)));
  await withIndexesDeferred(db, ['blocklist'], () => insertRows(db, 'blocklist', rows));
  const chunks = rows.flatMap((row) =>
    row.pdq ? pdqChunkKeys(row.pdq).map((chunk) => ({ chunk, entry_id: row.id })) : [],
  );
  await withIndexesDeferred(db, ['blocklist_pdq_chunks'], () => insertRows(db, 'blocklist_pdq_chunks', chunks));
  await analyze(db);
  return { rows: entries, seconds: (performance.now() - started) / 1000 };
}

const KINDS = ['sha256 hit', 'phash hit', 'pdq hit', 'miss'] as const;

/** An image as its upload asks about it: its SHA-256, its perceptual hash and its PDQ (of quality ≥ 50). */
interface Probe {
  kind: (typeof KINDS)[number];
  sha256: string;
  phash: string;
  pdq: string;
}

async function lookups(
  rec: Recorder,
  db: Database,
  kind: DbKind,
  entries: NewBlocklistEntry[],
  uploadIds: string[],
  opts: BlocklistOptions,
  r: Rng,
): Promise<void> {
  const blocklist = new BlocklistRepository(db);
  const d = db.dialect;
  const withSha = entries.filter((e) => e.sha256);
  const withPhash = entries.filter((e) => e.phash);
  const withPdq = entries.filter((e) => e.pdq);
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)]!;
  const probes: Probe[] = Array.from({ length: opts.probes }, (_, i) => {
    const miss = { sha256: randomSha(r), phash: randomHash(r), pdq: randomPdq(r) };
    const k = KINDS[i % KINDS.length]!;
    if (k === 'sha256 hit') return { ...miss, kind: k, sha256: pick(withSha).sha256! };
    if (k === 'phash hit') return { ...miss, kind: k, phash: flipBits(pick(withPhash).phash!, 1 + (i % DISTANCE), r) };
    if (k === 'pdq hit') return { ...miss, kind: k, pdq: flipPdq(pick(withPdq).pdq!, 1 + (i % PDQ_DISTANCE), r) };
    return { ...miss, kind: k };
  });
  const ids = probes.map(() => pick(uploadIds));
  const distances = { phash: DISTANCE, pdq: PDQ_DISTANCE };
  // What an image upload asks (upload.service.ts createImage): the bytes' SHA-256 with the blocklist's version, in
  // one read; once the worker has the hashes, the near check as of that version (this process's copy in memory).
  const check = async (p: Probe) => {
    const bytes = await blocklist.checkBytes(p.sha256);
    return bytes.blocked || (await blocklist.blocksNear({ phash: p.phash, pdq: p.pdq }, distances, bytes.version));
  };
  // The same in SQL: what the check costs while the copy is older than the version (after each blocklist change,
  // until the rebuild lands), and about what it cost before issue 48 (the pHash looked up in SQL).
  const inSql = async (p: Probe) =>
    (await blocklist.checkBytes(p.sha256)).blocked ||
    (await nearBlocklisted(
      db.db(),
      d,
      p.phash,
      DISTANCE,
      { hash: p.pdq, quality: PDQ_MIN_QUALITY, distance: PDQ_DISTANCE },
      db.prepared,
    ));
  // What the insert adds under its locks (upload.repository.ts insert): timed inside a transaction of its own, as
  // the primary-key read beside it (the commit is not theirs: the insert's transaction commits its writes anyway;
  // here the row lock FOR SHARE would be its only write, and its WAL flush would be all the figure showed).
  const user = await db
    .db()
    .selectFrom('uploads')
    .select('user_id')
    .where('id', '=', ids[0]!)
    .executeTakeFirstOrThrow();
  const timedIn = (work: (tx: Kysely<DB>) => Promise<unknown>) =>
    db.transaction(async (_em, tx) => {
      const t = performance.now();
      await work(tx);
      return performance.now() - t;
    });
  const byId = (id: string, on = db.db()) =>
    on.selectFrom('uploads').select(['id', 'user_id', 'phash', 'moderation']).where('id', '=', id).executeTakeFirst();
  const guard = () =>
    timedIn(async (tx) => {
      await lockBlocklistForInsert(tx, d);
      return insertGuardReads(tx, d, user.user_id, AT);
    });
  const pkInTransaction = (id: string) => timedIn((tx) => byId(id, tx));

  // Warm the caches (the copy in memory built, as in a process that has checked before), and check the answers.
  const building = performance.now();
  await blocklist.warm();
  const buildMs = performance.now() - building;
  const wrong = [];
  for (const p of probes) {
    if ((await check(p)) !== (p.kind !== 'miss')) wrong.push(`${p.kind} (memory)`);
    if ((await inSql(p)) !== (p.kind !== 'miss')) wrong.push(`${p.kind} (SQL)`);
  }
  for (const id of ids) await byId(id);
  if (wrong.length) rec.note(`BUG? ${kind}: the blocklist check answered wrong on ${wrong.join(', ')}`);

  const measures = {
    check: async (i: number) => void (await check(probes[i]!)),
    sql: async (i: number) => void (await inSql(probes[i]!)),
    pk: async (i: number) => void (await byId(ids[i]!)),
    version: async () => void (await blocklist.version()),
    guard: () => guard(),
    pkTx: (i: number) => pkInTransaction(ids[i]!),
  };
  const names = Object.keys(measures) as Array<keyof typeof measures>;
  const p50 = Object.fromEntries([...names, ...KINDS].map((k) => [k, [] as number[]])) as Record<string, number[]>;
  const p95 = Object.fromEntries(names.map((k) => [k, [] as number[]])) as Record<string, number[]>;
  for (let round = 0; round < opts.rounds; round++) {
    for (const what of names.map((_, i) => names[(i + round) % names.length]!)) {
      const ms: number[] = [];
      for (let i = 0; i < probes.length; i++) {
        const t = performance.now();
        const inside = await measures[what](i);
        ms.push(typeof inside === 'number' ? inside : performance.now() - t);
      }
      p50[what]!.push(quantile(ms, 0.5));
      p95[what]!.push(quantile(ms, 0.95));
      if (what === 'check')
        for (const k of KINDS)
          p50[k]!.push(
            quantile(
              ms.filter((_, i) => probes[i]!.kind === k),
              0.5,
            ),
          );
    }
  }
  const at = `${kind} ${label(opts.uploads)} uploads, ${label(opts.entries)} entries`;
  const note =
    `${opts.probes} probes per round: a quarter each SHA-256 hits, pHash hits (1–${DISTANCE} bits), ` +
    `PDQ hits (1–${PDQ_DISTANCE} bits) and misses; entries a quarter each SHA-256, pHash, PDQ and all three`;
  rec.add(figure('blocklist', `${at}: check p50`, 'ms', p50.check!, { target: TARGETS.blocklistLookupMs[kind], note }));
  rec.add(figure('blocklist', `${at}: check p95`, 'ms', p95.check!));
  for (const k of KINDS) rec.add(figure('blocklist', `${at}: check p50, ${k}`, 'ms', p50[k]!));
  const hits = p50['sha256 hit']!.map((_, i) => Math.max(...KINDS.slice(0, 3).map((k) => p50[k]![i]!)));
  rec.add(
    figure('blocklist', `${kind}: check p50, miss ÷ the dearest hit`, '×', ratios(p50.miss!, hits), {
      target: TARGETS.blocklistMissVsHit,
    }),
  );
  rec.add(figure('blocklist', `${at}: check p50 in SQL (the copy in memory stale)`, 'ms', p50.sql!));
  rec.add(
    figure('blocklist', `${at}: building the copy in memory`, 'ms', buildMs, {
      note: 'after each blocklist change, once per process, in the background; meanwhile the check runs in SQL',
    }),
  );
  rec.add(figure('blocklist', `${at}: upload by primary key p50`, 'ms', p50.pk!));
  rec.add(
    figure('blocklist', `${at}: blocklist version read p50`, 'ms', p50.version!, {
      note: 'the insert compares it with the one the check read, and re-runs the check in SQL only when it moved',
    }),
  );
  rec.add(
    figure('blocklist', `${at}: insert guard p50 (lock, ban and version read, in a transaction)`, 'ms', p50.guard!, {
      note: 'beside it the same transaction around the primary-key read',
    }),
  );
  rec.add(figure('blocklist', `${at}: primary-key read in a transaction p50`, 'ms', p50.pkTx!));
  rec.add(
    figure(
      'blocklist',
      `${kind}: insert guard ÷ primary-key read, each in a transaction (p50)`,
      '×',
      ratios(p50.guard!, p50.pkTx!),
    ),
  );
  rec.add(
    figure('blocklist', `${kind}: blocklist check in SQL ÷ primary-key lookup (p50)`, '×', ratios(p50.sql!, p50.pk!)),
  );
  const ratio = opts.ci ? TARGETS.blocklistVsPrimaryKey : asGoal(TARGETS.blocklistVsPrimaryKey);
  rec.add(
    figure('blocklist', `${kind}: blocklist check ÷ primary-key lookup (p50)`, '×', ratios(p50.check!, p50.pk!), {
      target: ratio,
      note: at,
    }),
  );
}

interface Seeded {
  hashes: string[];
  ids: string[];
  users: SeededUser[];
  r: Rng;
}

function services(db: Database) {
  const similarity = similarityIndexFor(db.dialect, 'multi-index-hashing');
  const uploads = new UploadRepository(db, similarity);
  const blocklist = new BlocklistRepository(db);
  const moderation = new ModerationService({
    store: new ModerationRepository(db, uploads, similarity),
    blocklist,
    jobs: new JobRepository(db, similarity),
    uploads,
    clock: { now: () => new Date() },
    policy: { reportHoldThreshold: 3, blocklistDistance: DISTANCE },
    releaseMedia: async () => {},
  });
  return { blocklist, moderation };
}

/** Imports entries, runs the job with a restart after its first step, checks what it held. Returns the open db. */
async function importing(
  rec: Recorder,
  bdb: BenchDatabase,
  db: Database,
  seeded: Seeded,
  opts: BlocklistOptions,
): Promise<Database> {
  const { hashes, ids, users, r } = seeded;
  const kind = bdb.kind;
  // The matching entries: a third the SHA-256 of a stored upload, a third a perceptual hash 1–8 bits from one's,
  // a third both.
  const targets = new Set<number>();
  while (targets.size < opts.matches) targets.add(Math.floor(r() * ids.length));
  const targetList = [...targets];
  const shaOf = new Map<string, string>();
  for (let i = 0; i < targetList.length; i += 500) {
    const rows = await db
      .db()
      .selectFrom('uploads')
      .select(['id', 'sha256'])
      .where(
        'id',
        'in',
        targetList.slice(i, i + 500).map((t) => ids[t]!),
      )
      .execute();
    for (const row of rows) shaOf.set(row.id, row.sha256!);
  }
  const entries: NewBlocklistEntry[] = targetList.map((t, k) => ({
    sha256: k % 3 === 1 ? null : shaOf.get(ids[t]!)!,
    phash: k % 3 === 0 ? null : flipBits(hashes[t]!, 1 + (k % DISTANCE), r),
    reason: 'bench: matches',
  }));
  for (let i = entries.length; i < opts.imports; i++) entries.push(importEntry(i, r));
  for (let i = entries.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [entries[i], entries[j]] = [entries[j]!, entries[i]!];
  }

  // What the job must hold: every upload an entry matches (in memory; the SHA-256s of the seeded uploads are
  // random, so only the targets' match).
  const expected = new Set<string>();
  const shas = new Set(entries.flatMap((e) => (e.sha256 ? [e.sha256] : [])));
  for (const [id, sha] of shaOf) if (shas.has(sha)) expected.add(id);
  const set = new PhashSet(
    entries.flatMap((e) => (e.phash ? [e.phash] : [])),
    DISTANCE,
  );
  hashes.forEach((h, i) => {
    if (set.matches(h)) expected.add(ids[i]!);
  });

  const moderator = { id: users[0]!.id, username: users[0]!.username };
  const started = performance.now();
  const added = await services(db).blocklist.add(entries, { source: 'import', moderator, at: new Date() });
  const addSeconds = (performance.now() - started) / 1000;
  // The job's first step, then a restart: the queue is all that carries over.
  const first = await services(db).blocklist.holdMatches(opts.batch ?? HOLD_BATCH, DISTANCE, new Date());
  const firstSeconds = (performance.now() - started) / 1000 - addSeconds;
  await db.close();
  db = await bdb.open();
  const resumed = performance.now();
  const rest = await services(db).moderation.holdBlocklistMatches(...(opts.batch ? [opts.batch] : []));
  const total = (performance.now() - started) / 1000;
  const restSeconds = (performance.now() - resumed) / 1000;

  const held = await db.db().selectFrom('uploads').select('id').where('moderation', '=', 'held').execute();
  const heldIds = new Set(held.map((h) => h.id));
  const missing = [...expected].filter((id) => !heldIds.has(id)).length;
  const extra = [...heldIds].filter((id) => !expected.has(id)).length;
  const lines = await db
    .db()
    .selectFrom('modlog')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('action', '=', 'auto_hold')
    .executeTakeFirstOrThrow();
  const pending = await db
    .db()
    .selectFrom('blocklist_pending')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  // Independent of the index: every held upload lies within the distance of an entry, or shares its SHA-256.
  const entryPhashes = entries.flatMap((e) => (e.phash ? [e.phash] : []));
  const indexOf = new Map(ids.map((id, i) => [id, i]));
  const unjustified = [...heldIds].filter((id) => {
    const h = hashes[indexOf.get(id)!]!;
    return !(shaOf.has(id) && shas.has(shaOf.get(id)!)) && !entryPhashes.some((p) => hammingHex(p, h) <= DISTANCE);
  }).length;
  if (missing || extra || unjustified || Number(lines.n) !== heldIds.size || Number(pending.n) !== 0)
    rec.note(
      `BUG? ${kind} import: ${missing} matching uploads not held, ${extra} held that match nothing ` +
        `(${unjustified} not within the distance), ${Number(lines.n)} auto_hold lines for ${heldIds.size} held, ` +
        `${Number(pending.n)} entries still queued`,
    );

  const at = `${kind} ${label(opts.uploads)} uploads`;
  const note =
    `${added.added} entries (${opts.matches} made to match), ${expected.size} uploads matched and ` +
    `${first.held + rest} held (${first.held} in the first step of ${first.entries} entries, then a restart), ` +
    `batch ${opts.batch ?? 'default'}`;
  const goal = TARGETS.blocklistImportSeconds;
  rec.add(
    figure('blocklist', `${at}: import ${label(opts.imports)} entries until every match is held`, 's', total, {
      target: goal,
      note,
    }),
  );
  rec.add(figure('blocklist', `${at}: of which adding the entries`, 's', addSeconds));
  rec.add(figure('blocklist', `${at}: of which the job's first step`, 's', firstSeconds));
  rec.add(figure('blocklist', `${at}: of which the job after the restart`, 's', restSeconds));
  return db;
}

export const label = (n: number) => (n >= 1e6 ? `${n / 1e6}M` : n >= 1e3 ? `${n / 1e3}k` : String(n));

/** The command-line options of a blocklist lookup bench (this one's and pdq-lookup.bench.ts's). */
export const LOOKUP_OPTIONS = {
  uploads: { type: 'string', default: '1m' },
  entries: { type: 'string', default: '100k' },
  db: { type: 'string', default: 'sqlite,postgres' },
  probes: { type: 'string', default: '300' },
  rounds: { type: 'string', default: '3' },
} as const;

/** Those options parsed. */
export const lookupOptions = (v: Record<keyof typeof LOOKUP_OPTIONS, unknown>) => ({
  uploads: numbers(String(v.uploads))[0]!,
  entries: numbers(String(v.entries))[0]!,
  dbs: String(v.db).split(',') as DbKind[],
  probes: Number(v.probes),
  rounds: Number(v.rounds),
});

if (isMain(import.meta.url)) {
  const options = {
    ...LOOKUP_OPTIONS,
    import: { type: 'string', default: '10k' },
    matches: { type: 'string', default: '300' },
    batch: { type: 'string' },
  } as const;
  await runAlone('blocklist', options, (rec, v) =>
    blocklistBench(rec, {
      ...lookupOptions(v),
      imports: numbers(String(v.import))[0]!,
      matches: Number(v.matches),
      ...(v.batch ? { batch: numbers(String(v.batch))[0]! } : {}),
    }),
  );
}
