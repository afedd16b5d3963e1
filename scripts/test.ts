/**
 * `npm test`: first the lint (ESLint, the layer rules of .dependency-cruiser.cjs, the format check), then the whole
 * suite on SQLite, then the database-facing suites (test/http, test/integration, but for the files whose subject is not
 * the database: SQLITE_PASS_ONLY) again on PostgreSQL + Redis when they answer. Says plainly which passes it skipped
 * and why.
 *
 *   npm test                       both passes (PostgreSQL pass skipped, with the reason, if unreachable)
 *   npm test -- --db=sqlite        only the SQLite pass
 *   npm test -- test/http/auth.test.ts   only these files (on each selected database)
 *   npm test -- --no-lint          skip the lint step (PIXVOTE_SKIP_LINT=1 does the same)
 *
 * A run of the whole suite starts with the lint (ESLint, the layer rules, the format check) and fails on any
 * finding; a run of named files skips it, to stay quick.
 * PIXVOTE_REQUIRE_SERVICES=1 (set by .ci/run) turns a skipped PostgreSQL pass (or a missing S3 server) into a failure.
 * PIXVOTE_TEST_CONCURRENCY: test files run side by side (default 3).
 * Each pass starts its files slowest first (test/durations.json; scripts/test-pass.ts runs them in that order).
 * PIXVOTE_TEST_TIMINGS=FILE: each pass appends its files' test time to FILE, slowest first.
 * PIXVOTE_TEST_TIMEOUT_S: the runner's timeout per test file, in seconds. By default 300 s on a quiet machine, scaled
 * with the load measured at the start of each pass (load average per core, when above 1): a busy machine makes the
 * suite slower, not red. A file that still meets it is named in the summary with the load of the moment.
 * After the run, the summary fails on any Redis key of the run left without expiry and any temp file left in the
 * run's TMPDIR.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, globSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { TEST_PG_URL, TEST_REDIS_URL } from '../test/support/env.ts';
import { postgresUnreachable, redisUnreachable } from '../test/support/services.ts';
import { s3Unreachable, TEST_S3_ENDPOINT } from '../test/support/s3.ts';
import { keysWithoutExpiry } from '../test/support/redis.ts';

const args = process.argv.slice(2);
const dbArg = args.find((a) => a.startsWith('--db='))?.slice(5);
const files = args.filter((a) => !a.startsWith('--'));
const required = process.env.PIXVOTE_REQUIRE_SERVICES === '1';
const lint = !files.length && !args.includes('--no-lint') && process.env.PIXVOTE_SKIP_LINT !== '1';

// What a run leaves behind is checked after it (see the end): every Redis key a test writes is under
// pvtest:<run>: (test/support/redis.ts), and every temp file under a directory of the run's own (TMPDIR, which
// os.tmpdir() and mkdtemp in the tests and the processes they start follow).
const runId = randomBytes(4).toString('hex');
const runTmp = mkdtempSync(join(tmpdir(), 'pixvote-test-run-'));
chmodSync(runTmp, 0o1777); // as /tmp is: tests run commands as another user (startup-errors: uid 65534)
const runEnv = {
  PIXVOTE_TEST_RUN: runId,
  TMPDIR: runTmp,
  // Every process the run starts (test files, servers, the CLI) compiles the same modules: cached once.
  NODE_COMPILE_CACHE:
    process.env.NODE_COMPILE_CACHE ?? join(import.meta.dirname, '../node_modules/.cache/node-compile'),
};

// PIXVOTE_TEST_TIMINGS (header): a second reporter, beside spec, writes each file's test time there.
const timings = process.env.PIXVOTE_TEST_TIMINGS;
const timingsReporter = join(import.meta.dirname, 'test-timings-reporter.mjs');

// The test files that met the runner's timeout, one line each (scripts/test-timeouts-reporter.mjs), kept outside the
// run's TMPDIR (whose leftovers fail the run).
const timeoutsDir = mkdtempSync(join(tmpdir(), 'pixvote-test-timeouts-'));
const timeoutsReporter = join(import.meta.dirname, 'test-timeouts-reporter.mjs');

/** How loaded the machine is: the 1-minute load average per core (the 5-minute one when higher). */
function loadPerCore(): number {
  const [one = 0, five = 0] = loadavg();
  return Math.max(one, five) / availableParallelism();
}
const describeLoad = () =>
  `load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} on ${availableParallelism()} cores`;

/**
 * The runner's per-file timeout for a pass starting now: PIXVOTE_TEST_TIMEOUT_S, else 300 s times the load per
 * core when above 1 (the tests wait on events, not on fixed budgets: on a busy machine they only take longer).
 */
function testTimeoutS(): number {
  const set = Number(process.env.PIXVOTE_TEST_TIMEOUT_S);
  if (Number.isFinite(set) && set > 0) return set;
  return Math.round(300 * Math.max(1, loadPerCore()));
}

function run(label: string, patterns: string[], env: Record<string, string>, leave: string[] = []): boolean {
  const selected = files.length
    ? files.filter((f) => patterns.some((p) => globMatch(f, p)))
    : patterns
        .flatMap((p) => globSync(p))
        .filter((f) => !leave.includes(f))
        .sort();
  if (!selected.length) {
    console.log(`\n=== ${label}: no test files selected`);
    return true;
  }
  const timeoutS = testTimeoutS();
  const timeoutsFile = join(timeoutsDir, `${env.PIXVOTE_TEST_DB ?? 'pass'}.txt`);
  console.log(
    `\n=== ${label}: ${selected.length} files, ${concurrency} side by side, at most ${timeoutS} s per file ` +
      `(${describeLoad()}${process.env.PIXVOTE_TEST_TIMEOUT_S ? '; PIXVOTE_TEST_TIMEOUT_S' : ''})`,
  );
  // Slowest first (test/durations.json, per pass), so that the long files do not start last and run alone at the
  // end: the pass ends about when the sum of its files divided by the concurrency says.
  const ordered = slowestFirst(selected, env.PIXVOTE_TEST_DB ?? 'sqlite');
  const pass = {
    files: ordered,
    concurrency,
    timeoutMs: timeoutS * 1000,
    reporters: [...(timings ? [timingsReporter] : []), timeoutsReporter],
  };
  const r = spawnSync(
    process.execPath,
    [
      '--experimental-strip-types',
      '--experimental-async-context-frame',
      join(import.meta.dirname, 'test-pass.ts'),
      JSON.stringify(pass),
    ],
    { stdio: 'inherit', env: { ...process.env, ...runEnv, ...env, PIXVOTE_TEST_TIMEOUTS: timeoutsFile } },
  );
  if (existsSync(timeoutsFile)) {
    const timedOut = readFileSync(timeoutsFile, 'utf8').trim().split('\n');
    results.push(
      `${label.split(' (')[0]}: ${timedOut.length} met the ${timeoutS} s timeout, with the ${describeLoad()} ` +
        `at the end (a busy machine? rerun with a larger PIXVOTE_TEST_TIMEOUT_S or PIXVOTE_TEST_CONCURRENCY=1): ` +
        timedOut.slice(0, 10).join('; '),
    );
  }
  return r.status === 0;
}

function globMatch(file: string, pattern: string): boolean {
  return globSync(pattern).includes(file.replace(/^\.\//, ''));
}

/**
 * test/durations.json: seconds per file and pass, from a timed run (`PIXVOTE_TEST_TIMINGS=FILE npm test`, then
 * `npx node --experimental-strip-types scripts/test-durations.ts FILE`). Only the order of a pass depends on it: a file
 * it does not know yet (a new one) starts first, as if it were the slowest.
 */
function slowestFirst(selected: string[], db: string): string[] {
  const path = join(import.meta.dirname, '../test/durations.json');
  const known = existsSync(path)
    ? ((JSON.parse(readFileSync(path, 'utf8')) as Record<string, Record<string, number>>)[db] ?? {})
    : {};
  const seconds = (f: string) => known[f.replace(/^\.\//, '')] ?? Infinity;
  return [...selected].sort((a, b) => seconds(b) - seconds(a) || a.localeCompare(b));
}

const ALL = ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts', 'test/http/**/*.test.ts'];
const DB_FACING = ['test/integration/**/*.test.ts', 'test/http/**/*.test.ts'];

/**
 * HTTP and integration files whose subject is not the database: the pages in a browser, the CLI as a client, the
 * OpenAPI document, the transport, the detector and the workers. They reach the store only through routes and
 * services the other files prove on both databases, so the PostgreSQL + Redis pass leaves them to the SQLite pass
 * (each costs a process, often a browser, per pass: about 4 minutes of CI). Named on the command line, a file runs in
 * every selected pass all the same.
 */
const SQLITE_PASS_ONLY: Record<string, string> = {
  'test/http/web.test.ts': 'the front end over HTTP: CSP, assets, page routes',
  'test/http/web-pages.test.ts': 'the pages in Chromium, by keyboard and mouse',
  'test/http/web-resumable.test.ts': 'the upload form offline and back, in Chromium',
  'test/http/web-details.test.ts': 'the pages in Chromium at 375 and 1280 px',
  'test/http/web-views.test.ts': "the views built in Chromium against the server's markup of them",
  'test/http/web-security.test.ts': 'hostile strings and the CSP, in Chromium',
  'test/http/web-a11y.test.ts': 'axe-core on every page, in Chromium',
  'test/http/no-js.test.ts': 'the pages in Chromium with JavaScript off',
  'test/http/docs.test.ts': 'the /docs page in Chromium',
  'test/http/unfurl.test.ts': 'the pages read by an unfurling library',
  'test/http/error-pages.test.ts': 'HTML error pages and the JSON of machine paths',
  'test/http/openapi.test.ts': 'the OpenAPI document',
  'test/http/openapi-client.test.ts': 'a client generated from the OpenAPI document',
  'test/http/cli-auth.test.ts': 'the CLI: login, config file',
  'test/http/cli-upload.test.ts': 'the CLI: walking folders, retries, resume',
  'test/http/cli-resumable.test.ts': 'the CLI over tus: the server side is resumable.test.ts, on both databases',
  'test/http/cli-mod.test.ts': 'the CLI: moderation commands over the API',
  'test/http/admin-cli.test.ts': 'the CLI: admin commands over the API',
  'test/http/cli-launcher.test.ts': 'bin/pixvote.js under an old Node: no server, no database',
  'test/http/docs-commands.test.ts': "the guide's commands as written; the routes they call have files of their own",
  'test/http/startup-errors.test.ts': 'a start that cannot open its database: the same command lines on each pass',
  'test/http/person-detector.test.ts': 'the detector and its runtimes',
  'test/http/upload-cancel.test.ts': 'uploads whose client goes away',
  'test/http/upload-half-close.test.ts': 'uploads over half-closed connections',
  'test/http/connection-cap.test.ts': 'connections per address',
  'test/http/image-range.test.ts': 'Range reads from the local disk store',
  'test/integration/media-pool.test.ts': 'the worker pool',
  'test/integration/media-worker.test.ts': 'the image pipeline in a worker',
  'test/integration/provenance-worker.test.ts': 'C2PA provenance read in the worker pool',
  'test/integration/media-store.test.ts': 'the local disk media store',
  'test/integration/multipart-close.test.ts': 'multipart parsing',
  'test/integration/safe-fetch.test.ts': 'the guarded fetch of image_url',
  'test/integration/node-sqlite.test.ts': 'SQLite itself',
  'test/integration/sqlite-readers.test.ts': "SQLite's reader threads",
};

// A named file that is no test file (a typo, a directory, an absolute path) must not pass as "nothing failed".
const unknown = files.filter((f) => !ALL.some((p) => globMatch(f, p)));
if (unknown.length) {
  console.error(`not test files (give paths like test/http/auth.test.ts): ${unknown.join(', ')}`);
  process.exit(2);
}

// Test files run side by side: many of them wait (for a lease, a restart backoff, a browser, a child process)
// rather than compute, so more files than cores keep the cores busy. PIXVOTE_TEST_CONCURRENCY overrides.
const concurrency = Number(process.env.PIXVOTE_TEST_CONCURRENCY ?? 3);

const results: string[] = [];
let ok = true;
let redisChecked = false;

if (lint) {
  // The same steps as `npm run lint`, each run even when one before it failed, so one run shows every finding.
  console.log('\n=== lint (skip with --no-lint or PIXVOTE_SKIP_LINT=1)');
  const failed = [['lint:eslint'], ['lint:layers', '--if-present'], ['format:check']].filter(
    (script) => spawnSync('npm', ['run', ...script], { stdio: 'inherit' }).status !== 0,
  );
  results.push(`lint: ${failed.length ? `FAILED (${failed.map((f) => f[0]).join(', ')})` : 'passed'}`);
  if (failed.length) ok = false;
} else {
  results.push(`lint: skipped (${files.length ? 'test files named' : '--no-lint or PIXVOTE_SKIP_LINT=1'})`);
}

if (dbArg !== 'postgres') {
  const passed = run('SQLite (embedded default)', ALL, { PIXVOTE_TEST_DB: 'sqlite' });
  results.push(`SQLite pass: ${passed ? 'passed' : 'FAILED'}`);
  ok &&= passed;
}
if (dbArg !== 'sqlite') {
  const why = (await postgresUnreachable(TEST_PG_URL)) ?? (await redisUnreachable(TEST_REDIS_URL));
  if (why) {
    results.push(
      `PostgreSQL + Redis pass: SKIPPED — ${why}. Start them (see docs/contributing.md, "Tests") to run it.`,
    );
    if (required) ok = false;
  } else {
    const leave = Object.keys(SQLITE_PASS_ONLY);
    const label = `PostgreSQL + Redis (${leave.length} files whose subject is not the database: SQLite pass only)`;
    const passed = run(label, DB_FACING, { PIXVOTE_TEST_DB: 'postgres' }, files.length ? [] : leave);
    results.push(`PostgreSQL + Redis pass: ${passed ? 'passed' : 'FAILED'}`);
    ok &&= passed;
    redisChecked = true;
  }
}

// The object-storage tests (test/http/object-storage*.test.ts, media-migrate) need the S3 server of
// scripts/s3-server.sh; without it they skip (they fail under PIXVOTE_REQUIRE_SERVICES=1, as in CI).
const s3Why = await s3Unreachable();
const s3Outcome = required ? 'FAILED' : 'SKIPPED';
results.push(`object storage: ${s3Why ? `tests ${s3Outcome} — ${s3Why}` : `S3 server at ${TEST_S3_ENDPOINT}`}`);
if (s3Why && required) ok = false;

// Nothing may outlive the run: a Redis key with no expiry (a test must delete its keys: dropRedisKeys) ...
if (redisChecked) {
  const forever = await keysWithoutExpiry(runId);
  if (forever.length) {
    ok = false;
    results.push(
      `Redis keys: FAILED — the run left ${forever.length} without expiry: ${forever.slice(0, 10).join(', ')}` +
        `${forever.length > 10 ? ', …' : ''} (a test must delete its keys; see test/support/redis.ts)`,
    );
  } else {
    results.push('Redis keys: none left without expiry');
  }
}
// ... nor a temp file (a test removes what it creates, also when it fails).
// onnxruntime embeds Microsoft's telemetry SDK, which writes .ses and an empty mat-debug-<pid>.log into the temp
// directory of every process that creates a model session (the server's workers too): not the tests' doing.
const onnxruntimeTelemetry = (name: string) => name === '.ses' || /^mat-debug-\d+\.log$/.test(name);
const leftovers = readdirSync(runTmp).filter((name) => !onnxruntimeTelemetry(name));
if (leftovers.length) {
  ok = false;
  results.push(
    `temp files: FAILED — the run left ${leftovers.length} in its TMPDIR: ${leftovers.slice(0, 10).join(', ')}` +
      `${leftovers.length > 10 ? ', …' : ''}`,
  );
} else {
  results.push('temp files: none left');
}
rmSync(runTmp, { recursive: true, force: true });
rmSync(timeoutsDir, { recursive: true, force: true });

console.log('\n=== summary');
for (const r of results) console.log(`- ${r}`);
process.exit(ok ? 0 : 1);
