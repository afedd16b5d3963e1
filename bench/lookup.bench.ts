/**
 * Near-duplicate lookup (`findNear`, distance ≤ 4, a non-admin viewer) at 100k and 1M hashes:
 * multi-index hashing (what both databases run: a UNION ALL of index-only scans over covering chunk
 * indexes) vs sqlite-vec KNN (the brute-force yardstick, selectable with NEAR_DUPLICATE_INDEX) on SQLite,
 * and vs a full scan computing bit_count over every row on PostgreSQL. Half the probes have a neighbour
 * at distance 1–4, half have none (the common case: most uploads are new). Every method must return the
 * same match for every probe; a disagreement is reported as a bug.
 *
 *   npm run bench:lookup [-- --sizes 100k,1m --db sqlite,postgres --probes 200 --rounds 3 --time-yardstick-up-to 2m]
 *
 * `--existing URL[,URL…]`: no seeding; multi-index hashing on databases already seeded (PostgreSQL URLs, e.g. the two
 * bench:scale databases while it measures: the way to time it at 10M without another hour of seeding), the URLs'
 * probes interleaved round by round; half the probes are 1–4 bits from a stored hash, half random.
 */
import { sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { openDatabase, type Database } from '../src/store/database.ts';
import type { DB } from '../src/store/database-types.ts';
import { postgresDialect, sqliteDialect } from '../src/store/dialect.ts';
import {
  multiIndexHashing,
  nearRows,
  sqliteVecIndex,
  type NearMatch,
} from '../src/store/similarity/similarity-index.ts';
import { visibleTo } from '../src/store/upload-rows.ts';
import type { Viewer } from '../src/domain/uploads/upload.types.ts';
import { createBenchDatabase, postgresUnavailable, type DbKind } from './support/bench-database.ts';
import { isMain, numbers, runAlone } from './support/cli.ts';
import { figure, type Recorder } from './support/report.ts';
import { TARGETS, asGoal } from './support/targets.ts';
import { flipBits, growUploads, randomHash, rng, seedUsers, someStoredHash } from './support/seed.ts';
import { mapLimit, quantile, ratios } from './support/stats.ts';

export interface LookupOptions {
  sizes: number[];
  dbs: DbKind[];
  probes: number;
  rounds: number;
  /** Which target to tag as the CI one (bench:ci asserts it). */
  ciRatioAt?: number;
  /**
   * Above this size the yardstick (a full scan: ~4 s a probe at 10M, reading the whole table) only checks agreement and
   * is not timed: alternating with it would time multi-index hashing on indexes it pushed out of the cache.
   */
  timeYardstickUpTo?: number;
}

const MAX_DISTANCE = 4;
/** Probes every method must agree on. */
const CHECKED = 40;
/**
 * A round of one method stops after this long (a full scan of 1M rows takes ~0.5 s),
 * but times at least MIN_TIMED probes.
 */
const BUDGET_MS = 8000;
const MIN_TIMED = 20;

type Find = (k: Kysely<DB>, phash: string, viewer: Viewer) => Promise<NearMatch | null>;

/** The same query multi-index hashing runs on PostgreSQL, without the chunk filter: every row's distance. */
const pgFullScan: Find = async (k, phash, viewer) => {
  const { rows } = await sql<{ id: string; distance: number }>`
    select id, distance from (
      select u.id as id, u.created_at as created_at,
        bit_count(('x' || u.phash)::bit(64) # ${sql.lit(`x${phash}`)}::bit(64)) as distance
      from uploads u
      where u.phash is not null and (u.is_private = false or u.user_id = ${viewer.userId})
    ) m
    where distance <= ${MAX_DISTANCE}
    order by distance, created_at limit 1`.execute(k);
  return rows[0] ? { id: rows[0].id, distance: Number(rows[0].distance) } : null;
};

/** Each database's yardstick: the exact lookup multi-index hashing is timed against. */
const YARDSTICK: Record<DbKind, string> = { sqlite: 'sqlite-vec KNN', postgres: 'full scan (bit_count)' };

/** The methods timed, the app's own first (on PostgreSQL, prepared: Database.prepared). */
function methods(kind: DbKind, db: Database): Record<string, Find> {
  if (kind === 'sqlite') {
    const vec = sqliteVecIndex(sqliteDialect);
    const mih = multiIndexHashing(sqliteDialect);
    return {
      'multi-index hashing': (k, h, v) => mih.findNear(k, h, MAX_DISTANCE, v),
      [YARDSTICK.sqlite]: (k, h, v) => vec.findNear(k, h, MAX_DISTANCE, v),
    };
  }
  const prepared = multiIndexHashing(postgresDialect, db.prepared);
  const unprepared = multiIndexHashing(postgresDialect);
  return {
    'multi-index hashing': (k, h, v) => prepared.findNear(k, h, MAX_DISTANCE, v),
    'multi-index hashing, unprepared': (k, h, v) => unprepared.findNear(k, h, MAX_DISTANCE, v),
    [YARDSTICK.postgres]: pgFullScan,
  };
}

export async function lookupBench(rec: Recorder, opts: LookupOptions): Promise<void> {
  for (const kind of opts.dbs) {
    if (kind === 'postgres') {
      const why = await postgresUnavailable();
      if (why) {
        rec.note(`lookup on PostgreSQL skipped: ${why}`);
        continue;
      }
    }
    const bdb = await createBenchDatabase(kind);
    const db = await bdb.open();
    try {
      await lookupOn(rec, db, kind, opts);
    } finally {
      await db.close();
      await bdb.dispose();
    }
  }
}

async function lookupOn(rec: Recorder, db: Database, kind: DbKind, opts: LookupOptions): Promise<void> {
  const r = rng(42);
  const users = await seedUsers(db, 100);
  const viewer: Viewer = { userId: users[0]!.id, isAdmin: false };
  const hashes: string[] = [];
  const find = methods(kind, db);
  for (const size of [...opts.sizes].sort((a, b) => a - b)) {
    const from = hashes.length;
    const { seconds } = await growUploads(db, { size, hashes, users, r });
    rec.add(
      figure('lookup', `${kind}: seed ${size - from} uploads (to ${size})`, 'rows/s', (size - from) / seconds, {
        note: `${seconds.toFixed(1)} s`,
      }),
    );

    const probes = Array.from({ length: opts.probes }, (_, p) =>
      p % 2 === 0 ? flipBits(hashes[Math.floor(r() * size)]!, 1 + ((p / 2) % MAX_DISTANCE), r) : randomHash(r),
    );
    await agree(rec, `${kind} at ${size}`, find, probes.slice(0, CHECKED), db, viewer);
    if (kind === 'postgres')
      rec.add(buffersFigure(`${kind} ${label(size)}`, await checkBuffers(db, probes.slice(0, CHECKED), viewer)));
    const timed =
      size > (opts.timeYardstickUpTo ?? Infinity)
        ? Object.fromEntries(Object.entries(find).filter(([name]) => name !== YARDSTICK[kind]))
        : find;
    const { p50, p95, timedProbes } = await timeRounds(timed, probes, opts.rounds, db, viewer);
    for (const name of Object.keys(timed)) {
      const note =
        `${timedProbes[name]} probes per round, ` + `every other one with a neighbour at distance 1–${MAX_DISTANCE}`;
      const goal = size >= 1_000_000 && name === 'multi-index hashing' ? { target: TARGETS.lookupAt1MMs } : {};
      rec.add(figure('lookup', `${kind} ${label(size)}: ${name} p50`, 'ms', p50[name]!, { ...goal, note }));
      rec.add(figure('lookup', `${kind} ${label(size)}: ${name} p95`, 'ms', p95[name]!));
    }
    const [a, b] = ['multi-index hashing', YARDSTICK[kind]];
    const target =
      kind === 'postgres'
        ? { target: size === (opts.ciRatioAt ?? 100_000) ? TARGETS.lookupVsFullScan : asGoal(TARGETS.lookupVsFullScan) }
        : {};
    if (p50[b]) {
      rec.add(figure('lookup', `${kind} ${label(size)}: ${a} ÷ ${b} (p50)`, '×', ratios(p50[a]!, p50[b]), target));
    }
  }
}

/**
 * Per probe, the shared buffers (hit or read) `EXPLAIN (ANALYZE, BUFFERS)` counts for the app's near-duplicate check on
 * PostgreSQL (multiIndexHashing's statement, unprepared): a count, not a time, so growth shows through the noise.
 */
async function checkBuffers(db: Database, probes: string[], viewer: Viewer): Promise<number[]> {
  return mapLimit(probes, 1, async (phash) => {
    const query = nearRows(postgresDialect, 'uploads', phash, MAX_DISTANCE, {
      filter: visibleTo(postgresDialect, viewer),
      limit: 1,
    });
    const { rows } = await sql<{ 'QUERY PLAN': Array<{ Plan: Record<string, number> }> }>`
      explain (analyze, buffers, format json) ${query}`.execute(db.db());
    const plan = rows[0]!['QUERY PLAN'][0]!.Plan;
    return (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
  });
}

const buffersFigure = (where: string, blocks: number[]) =>
  figure('lookup', `${where}: multi-index hashing, buffers per check (p50)`, 'blocks', quantile(blocks, 0.5), {
    note: `EXPLAIN (ANALYZE, BUFFERS) of ${blocks.length} probes`,
  });

/** Warms the caches and checks that every method finds the same match; returns the first method's answers. */
async function agree(
  rec: Recorder,
  where: string,
  find: Record<string, Find>,
  checked: string[],
  db: Database,
  viewer: Viewer,
): Promise<Array<NearMatch | null>> {
  const names = Object.keys(find);
  const answers = new Map<string, Array<NearMatch | null>>();
  for (const name of names) answers.set(name, await mapLimit(checked, 1, (h) => find[name]!(db.db(), h, viewer)));
  const reference = answers.get(names[0]!)!;
  for (const name of names.slice(1)) {
    const differ = answers
      .get(name)!
      .filter(
        (x, i) =>
          (x?.distance ?? null) !== (reference[i]?.distance ?? null) || (x?.id ?? null) !== (reference[i]?.id ?? null),
      );
    if (differ.length)
      rec.note(`BUG? ${where}: ${name} disagrees with ${names[0]} on ${differ.length} of ${checked.length} probes`);
  }
  return reference;
}

/** p50 and p95 per round of each method, rotating their order every round. */
async function timeRounds(find: Record<string, Find>, probes: string[], rounds: number, db: Database, viewer: Viewer) {
  const names = Object.keys(find);
  const p50: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const p95: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const timedProbes: Record<string, number> = {};
  for (let round = 0; round < rounds; round++) {
    for (const name of names.map((_, i) => names[(i + round) % names.length]!)) {
      const ms: number[] = [];
      const until = performance.now() + BUDGET_MS;
      for (const h of probes) {
        if (ms.length >= MIN_TIMED && performance.now() > until) break;
        const t = performance.now();
        await find[name]!(db.db(), h, viewer);
        ms.push(performance.now() - t);
      }
      timedProbes[name] = ms.length;
      p50[name]!.push(quantile(ms, 0.5));
      p95[name]!.push(quantile(ms, 0.95));
    }
  }
  return { p50, p95, timedProbes };
}

/** Multi-index hashing on databases seeded elsewhere (`--existing`): each size's p50 and p95, rounds interleaved. */
export async function lookupExisting(rec: Recorder, urls: string[], o: { probes: number; rounds: number }) {
  const r = rng(42);
  const dbs = await Promise.all(urls.map((url) => openDatabase({ databaseUrl: url, sqlitePath: '' })));
  try {
    // Not the owner of anything: private uploads are filtered, as for any other uploader.
    const viewer: Viewer = { userId: randomUUID(), isAdmin: false };
    const sets = await Promise.all(
      dbs.map(async (db) => {
        const { n } = await db
          .db()
          .selectFrom('uploads')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow();
        const probes: string[] = [];
        for (let p = 0; p < o.probes; p++) {
          if (p % 2) {
            probes.push(randomHash(r));
            continue;
          }
          // A stored hash, 1–4 bits away.
          probes.push(flipBits((await someStoredHash(db)) ?? randomHash(r), 1 + ((p / 2) % MAX_DISTANCE), r));
        }
        const mih = multiIndexHashing(postgresDialect, db.prepared);
        return { db, mih, size: Number(n), probes, p50: [] as number[], p95: [] as number[] };
      }),
    );
    for (const x of sets)
      for (const h of x.probes.slice(0, 20)) await x.mih.findNear(x.db.db(), h, MAX_DISTANCE, viewer);
    for (let round = 0; round < o.rounds; round++) {
      for (const x of sets) {
        const ms: number[] = [];
        for (const h of x.probes) {
          const t = performance.now();
          await x.mih.findNear(x.db.db(), h, MAX_DISTANCE, viewer);
          ms.push(performance.now() - t);
        }
        x.p50.push(quantile(ms, 0.5));
        x.p95.push(quantile(ms, 0.95));
      }
    }
    for (const x of sets) {
      const note = `${x.probes.length} probes per round, every other one 1–${MAX_DISTANCE} bits from a stored hash`;
      rec.add(figure('lookup', `postgres ${label(x.size)}: multi-index hashing p50`, 'ms', x.p50, { note }));
      rec.add(figure('lookup', `postgres ${label(x.size)}: multi-index hashing p95`, 'ms', x.p95));
      rec.add(buffersFigure(`postgres ${label(x.size)}`, await checkBuffers(x.db, x.probes.slice(0, CHECKED), viewer)));
    }
  } finally {
    for (const db of dbs) await db.close();
  }
}

const label = (n: number) => (n >= 1e6 ? `${n / 1e6}M` : `${n / 1e3}k`);

if (isMain(import.meta.url)) {
  const options = {
    sizes: { type: 'string', default: '100k,1m' },
    db: { type: 'string', default: 'sqlite,postgres' },
    probes: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '3' },
    existing: { type: 'string' },
    'time-yardstick-up-to': { type: 'string' },
  } as const;
  await runAlone('lookup', options, (rec, v) =>
    v.existing
      ? lookupExisting(rec, String(v.existing).split(','), { probes: Number(v.probes), rounds: Number(v.rounds) })
      : lookupBench(rec, {
          sizes: numbers(String(v.sizes)),
          dbs: String(v.db).split(',') as DbKind[],
          probes: Number(v.probes),
          rounds: Number(v.rounds),
          ...(v['time-yardstick-up-to'] ? { timeYardstickUpTo: numbers(String(v['time-yardstick-up-to']))[0]! } : {}),
        }),
  );
}
