/**
 * The blocklist's PDQ lookup (issue 31 part 4) at 1M uploads and 100k PDQ entries, on SQLite and PostgreSQL:
 *
 * - the upload-time check (`blocksPdq` within BLOCKLIST_PDQ_DISTANCE = 31: multi-index hashing over the entries'
 *   sixteen 16-bit chunks, 272 keys, then the candidates' distance), p50 and p99, against a yardstick in the same
 *   interleaved rounds: the primary-key lookup of an upload. A third of the probes lie 1–31 bits from an entry,
 *   two thirds are random (a miss: the common case). Every answer is checked against a brute-force scan. Goal
 *   p50 ≤ 2 ms, as the other blocklist checks.
 * - the hold job's pass over the stored uploads' PDQ for one new entry (`dryRun`, which finds the matches as the
 *   job does): every stored upload is given a random PDQ of quality 80 first.
 *
 *   npm run bench:pdq-lookup [-- --uploads 1m --entries 100k --db sqlite,postgres --probes 300 --rounds 3]
 */
import { sql } from 'kysely';
import type { Database } from '../src/store/database.ts';
import { BlocklistRepository, blocklistRow } from '../src/store/moderation/blocklist.repository.ts';
import { pdqChunkKeys, pdqDistance } from '../src/store/similarity/pdq-hamming.ts';
import { createBenchDatabase, postgresUnavailable, type DbKind } from './support/bench-database.ts';
import { analyze, insertRows, withIndexesDeferred } from './support/bulk-insert.ts';
import { isMain, runAlone } from './support/cli.ts';
import { LOOKUP_OPTIONS, label, lookupOptions } from './blocklist.bench.ts';
import { figure, type Recorder } from './support/report.ts';
import { flipPdq, growUploads, randomPdq, rng, seedUsers, type Rng } from './support/seed.ts';
import { quantile, ratios } from './support/stats.ts';
import { TARGETS, asGoal } from './support/targets.ts';

export interface PdqLookupOptions {
  uploads: number;
  entries: number;
  dbs: DbKind[];
  probes: number;
  rounds: number;
}

/** BLOCKLIST_PDQ_DISTANCE's default (src/config.ts). */
const DISTANCE = 31;
const AT = new Date(Date.UTC(2026, 1, 1));

export async function pdqLookupBench(rec: Recorder, opts: PdqLookupOptions): Promise<void> {
  for (const kind of opts.dbs) {
    if (kind === 'postgres') {
      const why = await postgresUnavailable();
      if (why) {
        rec.note(`PDQ lookup on PostgreSQL skipped: ${why}`);
        continue;
      }
    }
    const bdb = await createBenchDatabase(kind);
    const db = await bdb.open();
    try {
      const r = rng(31);
      const users = await seedUsers(db, 100);
      const { ids, seconds } = await growUploads(db, { size: opts.uploads, hashes: [], users, r });
      const started = performance.now();
      const entries = await seedEntries(db, opts.entries, r);
      await givePdqs(db);
      await analyze(db);
      const at = `${kind} ${label(opts.uploads)} uploads, ${label(opts.entries)} PDQ entries`;
      rec.add(figure('pdq-lookup', `${at}: seed`, 's', [seconds + (performance.now() - started) / 1000]));
      await lookups(rec, db, kind, at, entries, ids, opts, r);
      await holdScan(rec, db, at, r);
    } finally {
      await db.close();
      await bdb.dispose();
    }
  }
}

/** PDQ-only entries with their chunk rows, inserted as the store writes them (not queued for the hold job). */
async function seedEntries(db: Database, count: number, r: Rng): Promise<string[]> {
  const d = db.dialect;
  const hashes = Array.from({ length: count }, () => randomPdq(r));
  const rows = hashes.map((pdq, i) =>
    blocklistRow(d, { sha256: null, phash: null, pdq, reason: 'bench' }, 'import', new Date(AT.getTime() - i * 1000)),
  );
  await withIndexesDeferred(db, ['blocklist'], () => insertRows(db, 'blocklist', rows));
  const chunks = rows.flatMap((row) => pdqChunkKeys(row.pdq!).map((chunk) => ({ chunk, entry_id: row.id })));
  await withIndexesDeferred(db, ['blocklist_pdq_chunks'], () => insertRows(db, 'blocklist_pdq_chunks', chunks));
  return hashes;
}

/** Every stored upload gets a random PDQ of quality 80 (the worker stores one for every image since m012). */
async function givePdqs(db: Database): Promise<void> {
  const random =
    db.dialect.name === 'postgres' ? sql`md5(random()::text) || md5(random()::text)` : sql`lower(hex(randomblob(32)))`;
  // In pages: one statement over a million rows outlasts the PostgreSQL client's read timeout.
  for (;;) {
    const { numAffectedRows } = await sql`update uploads set pdq = ${random}, pdq_quality = 80
      where id in (select id from uploads where pdq is null limit 20000)`.execute(db.db());
    if (!Number(numAffectedRows ?? 0)) return;
  }
}

async function lookups(
  rec: Recorder,
  db: Database,
  kind: DbKind,
  at: string,
  entries: string[],
  uploadIds: string[],
  opts: PdqLookupOptions,
  r: Rng,
): Promise<void> {
  const blocklist = new BlocklistRepository(db);
  // The upload's check answers from this process's copy once it is built (while it is not, in SQL).
  await blocklist.warm();
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)]!;
  const probes = Array.from({ length: opts.probes }, (_, i) =>
    i % 3 === 0 ? { hit: true, pdq: flipPdq(pick(entries), 1 + (i % DISTANCE), r) } : { hit: false, pdq: randomPdq(r) },
  );
  // The truth, by brute force: a random probe may still fall within 31 bits of some entry (it never does in practice).
  for (const p of probes) p.hit = p.hit || entries.some((e) => pdqDistance(e, p.pdq) <= DISTANCE);
  const ids = probes.map(() => pick(uploadIds));
  const byId = (id: string) =>
    db
      .db()
      .selectFrom('uploads')
      .select(['id', 'user_id', 'phash', 'moderation'])
      .where('id', '=', id)
      .executeTakeFirst();

  let wrong = 0;
  for (const p of probes) if ((await blocklist.blocksPdq(p.pdq, DISTANCE)) !== p.hit) wrong++;
  for (const id of ids) await byId(id);
  if (wrong) rec.note(`BUG? ${kind}: the PDQ lookup answered wrong on ${wrong} probes`);

  const p50: Record<'check' | 'pk' | 'hit' | 'miss', number[]> = { check: [], pk: [], hit: [], miss: [] };
  const p99: Record<'check' | 'pk', number[]> = { check: [], pk: [] };
  for (let round = 0; round < opts.rounds; round++) {
    for (const what of round % 2 ? (['pk', 'check'] as const) : (['check', 'pk'] as const)) {
      const ms: number[] = [];
      for (let i = 0; i < probes.length; i++) {
        const t = performance.now();
        if (what === 'check') await blocklist.blocksPdq(probes[i]!.pdq, DISTANCE);
        else await byId(ids[i]!);
        ms.push(performance.now() - t);
      }
      p50[what].push(quantile(ms, 0.5));
      p99[what].push(quantile(ms, 0.99));
      if (what === 'check') {
        p50.hit.push(
          quantile(
            ms.filter((_, i) => probes[i]!.hit),
            0.5,
          ),
        );
        p50.miss.push(
          quantile(
            ms.filter((_, i) => !probes[i]!.hit),
            0.5,
          ),
        );
      }
    }
  }
  const note = `${opts.probes} probes per round: a third 1–${DISTANCE} bits from an entry, two thirds random`;
  rec.add(
    figure('pdq-lookup', `${at}: PDQ check p50`, 'ms', p50.check, { target: TARGETS.blocklistLookupMs[kind], note }),
  );
  rec.add(figure('pdq-lookup', `${at}: PDQ check p99`, 'ms', p99.check));
  rec.add(figure('pdq-lookup', `${at}: PDQ check p50, hit`, 'ms', p50.hit));
  rec.add(figure('pdq-lookup', `${at}: PDQ check p50, miss`, 'ms', p50.miss));
  rec.add(figure('pdq-lookup', `${at}: upload by primary key p50`, 'ms', p50.pk));
  rec.add(figure('pdq-lookup', `${at}: upload by primary key p99`, 'ms', p99.pk));
  rec.add(
    figure('pdq-lookup', `${kind}: PDQ check ÷ primary-key lookup (p50)`, '×', ratios(p50.check, p50.pk), {
      target: asGoal(TARGETS.blocklistVsPrimaryKey),
      note: at,
    }),
  );
}

/** The hold job's pass for one new PDQ entry: every stored upload's PDQ read once and checked. */
async function holdScan(rec: Recorder, db: Database, at: string, r: Rng): Promise<void> {
  const blocklist = new BlocklistRepository(db);
  const t = performance.now();
  const dry = await blocklist.dryRun([{ sha256: null, phash: null, pdq: randomPdq(r), reason: '' }], 8, DISTANCE);
  rec.add(
    figure(
      'pdq-lookup',
      `${at}: hold job's scan of the stored PDQs for one new entry`,
      's',
      [(performance.now() - t) / 1000],
      { note: `${dry.matches} matches` },
    ),
  );
}

if (isMain(import.meta.url))
  await runAlone('pdq-lookup', LOOKUP_OPTIONS, (rec, v) => pdqLookupBench(rec, lookupOptions(v)));
