/**
 * `npm run bench:ci`: the throughput guard `.ci/run` calls after the tests. Asserts ratios only — each
 * measured against its yardstick in the same interleaved rounds, median of the rounds — never absolute
 * times, so a slower or busier CI machine does not fail it; a regression does:
 *
 *   HTTP upload throughput ÷ the direct pipeline (same images, same 2 workers)   ≥ 0.8
 *   HTTP upload throughput, person detection on ÷ off (2 MP, 2 workers)        ≥ 0.65 (issue 17; goal 0.7)
 *   MediaPool of 1 worker ÷ processImage in-process (pool overhead ≤ 10 %)       ≥ 0.9
 *   ThumbHash CPU ÷ encoding the three variants of the same 2 MP images           ≤ 0.015
 *   near-duplicate lookup at 100k hashes on PostgreSQL ÷ a full scan (p50)       ≤ 0.1
 *   blocklist check (100k entries: SHA-256, pHash, PDQ) ÷ a primary-key lookup (p50)  ≤ 5 (issue 48)
 *   cached feed page ÷ a Koa hello-world (requests/s, wrk), per app process, SQLite and PostgreSQL+Redis ≥ 0.6
 *     (goal 0.75, issue 48)
 *   Koa sending the same bytes ÷ a cached feed read, CPU in process (no sockets)  ≥ 0.55
 *   Koa hello-world ÷ a cached feed read, CPU in process                         ≥ 0.6 (issue 48: the goal)
 *     (and a cost line per middleware, reported: bench/gateway.bench.ts)
 *   image GET p50 during 16 concurrent logins ÷ idle (password hashing off libuv) ≤ 3 (goal 2)
 *   feed GET p50 under 200 concurrent /metrics + /readyz ÷ under 200 /healthz      ≤ 3 (goal 1.5)
 *   upload p50 under 64 /metrics scrapers ÷ under 64 /healthz, ± METRICS_TOKEN     ≤ 2 (goal 1.5)
 *   listing reads (page 1, by cursor half-way, popular tag) at 50k uploads ÷ at 10k, p50  ≤ 3 (goal 1.5)
 *   /healthz p99 while 16 clients list deep uncached pages ÷ idle, at 50k, SQLite          ≤ 8
 *     (SQLite's reads off the event loop: 195× with them on it at 100k; PostgreSQL's is reported)
 *   vote-ring detector ÷ sorting and grouping the same ~0.6M votes                 ≤ 5 (with its worst job run's
 *     recall ≥ 0.88 and ≤ 1.2 honest accounts named per 10k on community seed 2 at 40k, exact for the seed; the
 *     issue's goals, 0.9 and 1, are not met: bench/vote-rings.md)
 *   person filter: people-free pictures refused, of 300 it generates (seed 2)       0 (a rate, not a ratio:
 *     issue 32's ≤ 0.3 %, exact for the seed; bench/person-filter.bench.ts)
 *
 * The floors live in bench/support/targets.ts (the login burst's, the probe flood's and the scrapers' in their own
 * bench files). A check that misses is run once more and judged on all its rounds together, so one noisy spell
 * cannot fail CI alone. Prints every ratio either way; exits 1 naming each ratio that regressed. About 4 minutes on
 * 2 cores, plus ~1 for the /healthz rounds of the listing check (~4 min alone under load 16). PostgreSQL missing:
 * the lookup check is skipped with the reason (a failure when PIXVOTE_REQUIRE_SERVICES=1, as .ci/run sets).
 */
import { postgresUnavailable } from './support/bench-database.ts';
import { meets, Recorder, table, writeResults, type Figure } from './support/report.ts';
import { summarize } from './support/stats.ts';
import { parseCommandLine } from './support/cli.ts';

/** A check imports its bench when it runs: `--help`, `--only` and a bad flag answer without loading them all. */
interface Check {
  name: string;
  run(rec: Recorder): Promise<void>;
}

const CHECKS: Check[] = [
  {
    name: 'gateway CPU per cached read vs Koa',
    run: async (rec) => (await import('./gateway.bench.ts')).gatewayBenchIsolated(rec, { rounds: 15, requests: 2000 }),
  },
  {
    name: 'HTTP uploads vs direct pipeline and detection on vs off',
    run: async (rec) =>
      (await import('./http-uploads.bench.ts')).httpUploadsBench(rec, {
        db: 'sqlite',
        rounds: 3,
        images: 12,
        clients: 4,
        workers: 2,
        latency12: false,
      }),
  },
  {
    name: 'resumable uploads vs direct',
    run: async (rec) =>
      (await import('./resumable.bench.ts')).resumableBench(rec, {
        db: 'sqlite',
        store: 'disk',
        rounds: 3,
        images: 6,
        ciOnly: true,
      }),
  },
  {
    name: 'pool overhead',
    run: async (rec) => (await import('./pipeline.bench.ts')).poolOverhead(rec, { images: 8, rounds: 5 }),
  },
  {
    name: 'thumbhash vs encode',
    run: async (rec) =>
      (await import('./support/stage-costs.ts')).thumbhashCost(rec, { megapixels: 2, images: 4, rounds: 5 }),
  },
  {
    name: 'near-duplicate lookup on PostgreSQL',
    run: async (rec) =>
      (await import('./lookup.bench.ts')).lookupBench(rec, {
        sizes: [100_000],
        dbs: ['postgres'],
        probes: 100,
        rounds: 3,
      }),
  },
  // 100k uploads and the goal's 100k entries (the check reads the blocklist only); no import: bench:blocklist.
  ...(['SQLite', 'PostgreSQL'] as const).map((name) => ({
    name: `blocklist check on ${name}`,
    run: async (rec: Recorder) =>
      (await import('./blocklist.bench.ts')).blocklistBench(rec, {
        uploads: 100_000,
        entries: 100_000,
        dbs: [name === 'SQLite' ? 'sqlite' : 'postgres'],
        probes: 150,
        rounds: 3,
        imports: 0,
        matches: 0,
        ci: true,
      }),
  })),
  // Per fresh app process, with wrk (Debian's, .ci/run installs it): the undici client of bench:feeds took so much of
  // the two cores that its ratio said more of the client than of the gateway (0.35 was the floor it allowed).
  {
    name: 'cached feed vs hello-world',
    run: async (rec) =>
      (await import('./feed-processes.bench.ts')).feedProcessesBench(rec, {
        dbs: ['sqlite', 'postgres'],
        processes: 3,
        rounds: 3,
        seconds: 1,
        connections: 8,
      }),
  },
  // 16 logins already keep libuv's 4 threads busy; 50 (bench:login-burst) take longer to drain between rounds.
  {
    name: 'image GETs during a login burst',
    run: async (rec) =>
      (await import('./login-burst.bench.ts')).loginBurstBench(rec, { rounds: 2, logins: 16, gets: 40 }),
  },
  {
    name: 'feed GETs during a probe flood',
    run: async (rec) => (await import('./probes.bench.ts')).probesBench(rec, { rounds: 2, flood: 200, gets: 30 }),
  },
  // Scrapers without compression: the flood's own choice, and the costlier one (gzip: bench:metrics-scrape).
  {
    name: 'uploads during a /metrics flood',
    run: async (rec) =>
      (await import('./metrics-scrape.bench.ts')).metricsScrapeBench(rec, {
        rounds: 3,
        scrapers: 64,
        uploads: 10,
        megapixels: 1,
        encodings: ['identity'],
      }),
  },
  {
    name: 'vote-ring detector',
    run: async (rec) => void (await import('./vote-rings.bench.ts')).voteRingsBench(rec, { rounds: 3 }),
  },
  // Issue 32: people-free pictures the check generates itself (seed 2), scored as a worker scores an upload.
  {
    name: 'person filter false rejects',
    run: async (rec) => void (await (await import('./person-filter.bench.ts')).personFilterBench(rec, { images: 300 })),
  },
  // Issue 29 at a size CI seeds in seconds: listing reads at 50k uploads ÷ at 12k (a size whose deepest number page
  // is a full page: bench:scale refuses under 11k; bench:scale runs 1M), and /healthz while 16 clients list deep
  // pages at 50k.
  {
    name: 'listing reads as the data grows',
    run: async (rec) =>
      (await import('./scale.bench.ts')).scaleBench(rec, {
        dbs: ['sqlite', 'postgres'],
        small: 12_000,
        large: 50_000,
        probes: 15,
        target: (await import('./support/targets.ts')).TARGETS.listingGrowth,
        http: true,
        healthRounds: 3,
      }),
  },
];

const ciFigures = (figures: readonly Figure[]) => figures.filter((f) => f.target?.kind === 'ci');

/** The same figure over the rounds of both runs. */
function merged(a: Figure, b: Figure): Figure {
  const samples = [...a.samples, ...b.samples];
  return {
    ...a,
    samples,
    summary: summarize(samples),
    note: `${a.note ? `${a.note}; ` : ''}run twice: ${a.summary.median.toFixed(3)} then ${b.summary.median.toFixed(3)}`,
  };
}

const { values } = parseCommandLine(
  'npm run bench:ci --',
  { only: { type: 'string' } },
  {
    help: {
      summary:
        'The throughput guard .ci/run calls after the tests: each ratio measured against its yardstick in the same ' +
        'interleaved rounds, judged against its floor in bench/support/targets.ts (the list is at the top of ' +
        'bench/ci.ts). About 8 minutes on 2 cores. Prints every ratio; exits 1 naming each that regressed.',
      options: {
        only:
          'run only the checks whose name contains one of these comma-separated words ' +
          '(e.g. `--only blocklist,feed`); the checks are named in the output (default: every check)',
      },
      footer: 'PIXVOTE_REQUIRE_SERVICES=1: a missing PostgreSQL fails the run instead of skipping its checks.',
    },
  },
);

const started = Date.now();
const all = new Recorder('ci');
const required = process.env.PIXVOTE_REQUIRE_SERVICES === '1';
const failures: string[] = [];

const only = typeof values.only === 'string' ? values.only.split(',').map((w) => w.trim().toLowerCase()) : null;
const selected = only ? CHECKS.filter((c) => only.some((w) => w && c.name.toLowerCase().includes(w))) : CHECKS;
if (!selected.length) {
  console.error(`npm run bench:ci: no check's name contains ${values.only} (see npm run bench:ci -- --help)`);
  process.exit(2);
}

for (const check of selected) {
  const t = Date.now();
  console.log(`\n— ${check.name}`);
  let rec = new Recorder('ci');
  try {
    await check.run(rec);
    if (ciFigures(rec.figures).some((f) => meets(f) === false)) {
      console.log('  · a ratio missed; measuring again to tell a regression from a noisy spell');
      const again = new Recorder('ci');
      await check.run(again);
      const before = rec;
      rec = new Recorder('ci');
      rec.notes.push(...before.notes);
      for (const f of before.figures) {
        const twin = again.figures.find((g) => g.name === f.name && g.bench === f.bench);
        rec.figures.push(twin ? merged(f, twin) : f);
      }
    }
  } catch (e) {
    failures.push(`${check.name}: the check could not run: ${(e as Error).message}`);
  }
  all.add(...rec.figures);
  all.notes.push(...rec.notes);
  if (!ciFigures(rec.figures).length && !failures.some((f) => f.startsWith(check.name))) {
    const why = check.name.includes('PostgreSQL') ? await postgresUnavailable() : null;
    const message = `${check.name}: no ratio was measured${why ? ` (${why})` : ''}`;
    if (required || !why) failures.push(message);
    else console.log(`  · skipped: ${message}`);
  }
  console.log(`  · ${Math.round((Date.now() - t) / 1000)} s`);
}

console.log(`\n${table(all.figures)}\n`);
for (const f of ciFigures(all.figures)) {
  const op = f.target!.op === '>=' ? '≥' : '≤';
  const ok = meets(f);
  console.log(
    `${ok ? 'ok    ' : 'FAILED'} ${f.bench}: ${f.name} = ${f.summary.median.toFixed(3)} ` +
      `(rounds ${f.summary.min.toFixed(3)}–${f.summary.max.toFixed(3)}), must be ${op} ${f.target!.value}`,
  );
  if (!ok) failures.push(`${f.name} is ${f.summary.median.toFixed(3)}, must be ${op} ${f.target!.value}`);
}
const seconds = Math.round((Date.now() - started) / 1000);
console.log(`\nresults: ${await writeResults(all.report('npm run bench:ci'))}\nbench:ci took ${seconds} s`);
if (failures.length) {
  console.error(`\nbench:ci FAILED:\n${failures.map((f) => `  - ${f}`).join('\n')}`);
  process.exit(1);
}
console.log('bench:ci passed');
process.exit(0);
