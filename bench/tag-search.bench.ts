/**
 * Tag search by prefix at 500 and at 50 000 tags (issue 46: `GET /api/tags?q=<prefix>` grew 3.4–4.7× from 10k to
 * 1M uploads, a sequential scan of every tag for `LIKE 'zzz%'`). The store's own query (TagRepository.suggest), on
 * both databases, for a prefix that matches many tags, one that matches few, and one that matches none; the figure
 * is p50 at 50 000 tags ÷ p50 at 500 in the same run. `--like` times the LIKE scan it replaced
 * (tagSearchQueries alone) beside it.
 *
 *   npm run bench:tag-search [-- --probes 200 --db sqlite,postgres]
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { performance } from 'node:perf_hooks';
import { TagRepository, tagSearchQueries } from '../src/store/repositories/tag.repository.ts';
import type { Database } from '../src/store/database.ts';
import { createBenchDatabase, postgresUnavailable, type DbKind } from './support/bench-database.ts';
import { quantile } from './support/stats.ts';

const args = process.argv.slice(2);
const opt = (name: string, dflt: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1]! : dflt;
};
const probes = Number(opt('probes', '200'));
const kinds = opt('db', 'sqlite,postgres').split(',') as DbKind[];
const SIZES = [500, 50_000];
/** A prefix per case: `ta` starts 1 in 8 names, `qu7` a handful, `zzz` none. */
const PREFIXES = { many: 'ta', few: 'qu7', none: 'zzz' } as const;

/** Names like a real tag population: words over a-y with digits, 1 in 8 starting with "ta". */
function names(n: number): string[] {
  let seed = 11;
  const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8;
  const out = new Set<string>();
  while (out.size < n) {
    const len = 3 + (next() % 9);
    let s = next() % 8 === 0 ? 'ta' : '';
    while (s.length < len) s += next() % 7 === 0 ? String(next() % 10) : 'abcdefghijklmnopqrstuvwxy'[next() % 25];
    out.add(s);
  }
  return [...out];
}

async function seed(db: Database, n: number): Promise<void> {
  const all = names(n);
  for (let i = 0; i < all.length; i += 1000) {
    const rows = all.slice(i, i + 1000).map((name, j) => ({
      id: randomUUID(),
      name,
      slug: name,
      upload_count: (i + j) % 13 === 0 ? 0 : 1 + ((i + j) % 97),
      created_at: db.dialect.date(new Date()),
    }));
    await db.db().insertInto('tags').values(rows).execute();
  }
  if (db.dialect.name === 'postgres') await sql`analyze tags`.execute(db.db());
}

/** p50 of each run, their probes interleaved (one of each in turn), so a noisy moment slows every one alike. */
async function times(runs: Array<() => Promise<unknown>>): Promise<number[]> {
  for (let i = 0; i < 10; i++) for (const run of runs) await run();
  const ms: number[][] = runs.map(() => []);
  for (let i = 0; i < probes; i++) {
    for (const [j, run] of runs.entries()) {
      const t = performance.now();
      await run();
      ms[j]!.push(performance.now() - t);
    }
  }
  return ms.map((m) => quantile(m, 0.5));
}

for (const kind of kinds) {
  if (kind === 'postgres') {
    const why = await postgresUnavailable();
    if (why) {
      console.log(`postgres: skipped (${why})`);
      continue;
    }
  }
  const p50 = new Map<string, number>();
  const dbs = await Promise.all(SIZES.map(() => createBenchDatabase(kind)));
  try {
    const opened = await Promise.all(dbs.map((d) => d.open()));
    await Promise.all(opened.map((db, i) => seed(db, SIZES[i]!)));
    // Interleaved: each case at both sizes in turn, so a noisy moment slows both.
    for (const [name, prefix] of Object.entries(PREFIXES)) {
      const runs = opened.map((db) => {
        const repo = new TagRepository(db);
        return () => repo.suggest(prefix, null, 21);
      });
      const like = args.includes('--like')
        ? opened.map((db) => () => tagSearchQueries(db.db(), prefix, null, 21)[0]!.execute())
        : [];
      const got = await times([...runs, ...like]);
      for (const [i, n] of SIZES.entries()) {
        p50.set(`${name} ${n}`, got[i]!);
        if (like.length) p50.set(`${name} ${n} like`, got[SIZES.length + i]!);
      }
    }
    for (const name of Object.keys(PREFIXES)) {
      const [small, large] = SIZES.map((n) => p50.get(`${name} ${n}`)!);
      let line =
        `${kind} q=${PREFIXES[name as keyof typeof PREFIXES]} (${name}): p50 ${small!.toFixed(3)} ms at ${SIZES[0]} ` +
        `tags, ${large!.toFixed(3)} ms at ${SIZES[1]}: ${(large! / small!).toFixed(2)}×`;
      if (args.includes('--like')) {
        const [ls, ll] = SIZES.map((n) => p50.get(`${name} ${n} like`)!);
        line += `; the LIKE scan alone ${ls!.toFixed(3)} / ${ll!.toFixed(3)} ms: ${(ll! / ls!).toFixed(2)}×`;
      }
      console.log(line);
    }
    await Promise.all(opened.map((db) => db.close()));
  } finally {
    await Promise.all(dbs.map((d) => d.dispose()));
  }
}
