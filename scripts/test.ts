/**
 * `npm test`: the lint (ESLint, the layer rules of .dependency-cruiser.cjs, the format check), the whole suite on
 * SQLite, and the database-facing suites (test/http, test/integration, but for the files whose subject is not the
 * database: SQLITE_PASS_ONLY) again on PostgreSQL + Redis when they answer. Says plainly which passes it skipped
 * and why.
 *
 *   npm test                       both passes (PostgreSQL pass skipped, with the reason, if unreachable)
 *   npm test -- --db=sqlite        only the SQLite pass
 *   npm test -- test/http/auth.test.ts   only these files (on each selected database)
 *   npm test -- --no-lint          skip the lint step (PIXVOTE_SKIP_LINT=1 does the same)
 *
 * A run of the whole suite lints too and fails on any finding; a run of named files skips it, to stay quick.
 * The lint steps and the test files of both passes are jobs of one queue, run PIXVOTE_TEST_CONCURRENCY side by side
 * (default 4), slowest first (test/durations.json): ESLint is one thread and many test files wait on child
 * processes, browsers and leases, so jobs of every kind side by side keep both cores busy until the end, where
 * separate steps (lint, then one pass, then the other) each ended with a tail that ran on one core.
 * A test file that is long (or new) runs in a process of its own (`node FILE` with the spec reporter, as `node --test`
 * would start it, and PIXVOTE_TEST_DB set for its pass); short ones run several to a process, one after another
 * (testJobs; PIXVOTE_TEST_BATCH=0 turns that off). Each process runs in a session of its own that the runner kills
 * when it ends; each file's output is printed whole once the file ends, with its pass and time.
 * PIXVOTE_REQUIRE_SERVICES=1 (set by .ci/run) turns a skipped PostgreSQL pass (or a missing S3 server) into a failure.
 * PIXVOTE_TEST_TIMINGS=FILE: each pass's files with their seconds (the file's process, start to exit) and its CPU
 * seconds (with the servers and tools it started: childrenCpuS), slowest first. The summary says the CPU of each pass
 * and of the run: on two cores the suite is CPU-bound, so its wall time is about its CPU over two.
 * PIXVOTE_TEST_TIMEOUT_S: the limit per test file, in seconds of wall time. By default 300 s of a quiet machine (a
 * batched file: BATCH_FILE_LIMIT_FACTOR times its last time, at least BATCH_FILE_LIMIT_MIN_S): each
 * second of the run counts 1 / (load average per core) while that is above 1, so a busy machine makes the suite
 * slower, not red (runJob). A file that meets it is stopped with everything it started, and its output says which
 * tests had started and not ended and which processes it had running; the summary names it with the load.
 * After the run, the summary fails on any Redis key of the run left without expiry and any temp file left in the
 * run's TMPDIR.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  appendFileSync,
  chmodSync,
  existsSync,
  globSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { TEST_PG_URL, TEST_REDIS_URL } from '../test/support/env.ts';
import { postgresUnreachable, redisUnreachable } from '../test/support/services.ts';
import { s3Unreachable, TEST_S3_ENDPOINT } from '../test/support/s3.ts';
import { keysWithoutExpiry } from '../test/support/redis.ts';
import { childrenCpuS, FILE_END, FILE_START } from './test-batch-protocol.ts';

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
  // … and strips the same TypeScript: stripped once, by content (scripts/ts-strip-cache.mjs; ~0.5 s of CPU per
  // process, ~240 processes a run).
  NODE_OPTIONS: [process.env.NODE_OPTIONS, `--import=${join(import.meta.dirname, 'ts-strip-cache.mjs')}`]
    .filter(Boolean)
    .join(' '),
};

// When the run started: each job's header and the summary say when it ended.
const runStarted = performance.now();

// PIXVOTE_TEST_TIMINGS (header): each pass's files and their seconds, written at the end of the run.
const timings = process.env.PIXVOTE_TEST_TIMINGS;

/** How loaded the machine is: the 1-minute load average per core (the 5-minute one when higher). */
function loadPerCore(): number {
  const [one = 0, five = 0] = loadavg();
  return Math.max(one, five) / availableParallelism();
}
const describeLoad = () =>
  `load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} on ${availableParallelism()} cores`;

/** PIXVOTE_TEST_TIMEOUT_S when set: a fixed limit per test file, in seconds of wall time. */
const fixedTimeoutS = (() => {
  const set = Number(process.env.PIXVOTE_TEST_TIMEOUT_S);
  return Number.isFinite(set) && set > 0 ? set : undefined;
})();
/** The limit per test file: PIXVOTE_TEST_TIMEOUT_S (wall time), else 300 s of a quiet machine (runJob). */
const testTimeoutS = fixedTimeoutS ?? 300;

/** One job of the queue: a lint step or a test file of a pass. */
interface Job {
  /** 'lint', 'sqlite' or 'postgres'. */
  pass: string;
  /** The lint script or the test file. */
  name: string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** Seconds it took last time (test/durations.json); unknown: Infinity, so that it starts first. */
  expectedS: number;
  /** A limit, for test files. */
  timeout: boolean;
  /** A batch: the test files it runs one after another in one process (scripts/test-batch.mjs), in this order. */
  files?: string[];
  /** A batch: each file's limit, seconds (batchFileLimitS). */
  fileLimitsS?: Record<string, number>;
}

/** How one lint step or test file went (a batch has one per file). */
interface Outcome {
  pass: string;
  /** The lint script or the test file. */
  name: string;
  ok: boolean;
  seconds: number;
  /** Top-level and nested tests the spec reporter counted. */
  tests: number;
  /** The limit met, with the load of the moment. */
  timedOut?: string;
  /** When it ended, in seconds since the queue started. */
  endS: number;
  /** CPU seconds (user + system) of its process and every process it waited for (childrenCpuS). */
  cpuS: number;
}

/**
 * CPU seconds of the children this process has reaped, with everything they reaped in turn (childrenCpuS, in clock
 * ticks of 1/100 s): read as each job's process exits, the difference since the last reading is that job's CPU (a
 * test file or batch, the servers it started and stopped, their worker threads). Two jobs reaped in one turn of the
 * event loop share one difference; the sum stays exact. 0 where /proc is not there.
 */
let childrenCpuRead = childrenCpuS();

/** A job's line in the PIXVOTE_TEST_TIMINGS file: its seconds, its CPU seconds, its tests, its name. */
const timingRow = (o: Outcome): string =>
  [o.seconds.toFixed(1).padStart(8), o.cpuS.toFixed(1).padStart(6), String(o.tests).padStart(5), o.name].join('  ');

function selectFiles(patterns: string[], leave: string[] = []): string[] {
  return files.length
    ? files.filter((f) => patterns.some((p) => globMatch(f, p)))
    : patterns
        .flatMap((p) => globSync(p))
        .filter((f) => !leave.includes(f))
        .sort();
}

function globMatch(file: string, pattern: string): boolean {
  return globSync(pattern).includes(file.replace(/^\.\//, ''));
}

/**
 * test/durations.json: seconds per file and pass, from a timed run (`PIXVOTE_TEST_TIMINGS=FILE npm test`, then
 * `npx node --experimental-strip-types scripts/test-durations.ts FILE`). The queue's order and batches depend on it:
 * a file it does not know yet (a new one) starts first, as if it were the slowest, in a process of its own.
 */
const durations = (() => {
  // PIXVOTE_TEST_DURATIONS: another such file (the runner's own test: test/unit/test-batches.test.ts).
  const path = process.env.PIXVOTE_TEST_DURATIONS ?? join(import.meta.dirname, '../test/durations.json');
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Record<string, Record<string, number>>) : {};
})();

/**
 * Test files that must have a process of their own, never a batch's: a file that changes what every later file of the
 * process would see, or one that counts what the whole process holds (an earlier file's threads still ending in it).
 */
const OWN_PROCESS = new Set([
  // Sets the variables sharp reads when it is loaded.
  'test/unit/sharp-setup.test.ts',
  // Counts the process's OS threads before and after a database opens its readers.
  'test/integration/sqlite-readers.test.ts',
]);
/** A file that took under this many seconds last time (test/durations.json) runs in a batch. */
const BATCH_FILE_MAX_S = 30;
/** What a batch's files took last time, together, at most. */
const BATCH_MAX_S = 60;
/**
 * In a batch, a file's limit (seconds of a quiet machine, counted as for any file) is this many times what it took
 * last time, at least BATCH_FILE_LIMIT_MIN_S and at most the limit of a file of its own: a batched file took under
 * BATCH_FILE_MAX_S, and one that hangs (2026-12-02: a 3 s file waited 867 s for the 300 s limit, the batch's other
 * files behind it) is stopped within minutes, not a quarter of an hour. PIXVOTE_TEST_TIMEOUT_S overrides both.
 */
const BATCH_FILE_LIMIT_FACTOR = 10;
/** PIXVOTE_TEST_BATCH_LIMIT_MIN_S sets it (test/unit/test-batches.test.ts: a minute is too long to wait there). */
const BATCH_FILE_LIMIT_MIN_S = Number(process.env.PIXVOTE_TEST_BATCH_LIMIT_MIN_S) || 60;
/** A batched file's limit, from what it took last time. */
const batchFileLimitS = (lastS: number) =>
  fixedTimeoutS ?? Math.min(testTimeoutS, Math.max(BATCH_FILE_LIMIT_MIN_S, BATCH_FILE_LIMIT_FACTOR * lastS));
/** PIXVOTE_TEST_BATCH=0: every file in a process of its own (to tell whether a failure comes from sharing one). */
const batching = process.env.PIXVOTE_TEST_BATCH !== '0';

/**
 * A pass's jobs. A file that runs longer than BATCH_FILE_MAX_S, or is new (unknown to test/durations.json), or is
 * in OWN_PROCESS runs in a process of its own, as `node --test` would start it. The others run in batches
 * (scripts/test-batch.mjs): several files one after another in one process, each through node:test's `run()` with
 * its own root, reported as if it had run alone. Most of a short file's CPU was its start: ~1.6 s of importing the
 * app (resolving, reading and compiling ~700 modules) and code run cold, which a batch pays once: three HTTP files
 * took 24.3 s of CPU in their own processes and 16.9 s in one (docs/contributing.md, "Where the CPU goes").
 */
function testJobs(pass: string, selected: string[]): Job[] {
  const env = { ...process.env, ...runEnv, PIXVOTE_TEST_DB: pass };
  const flags = ['--experimental-strip-types', '--experimental-async-context-frame'];
  const named = selected.map((f) => f.replace(/^\.\//, ''));
  const expected = (file: string) => durations[pass]?.[file] ?? Infinity;
  const alone = named.filter((f) => !batching || OWN_PROCESS.has(f) || !(expected(f) < BATCH_FILE_MAX_S));
  const jobs: Job[] = alone.map((file) => ({
    pass,
    name: file,
    // As node:test's runner starts a test file (this process's Node flags), with the spec reporter on stdout.
    command: process.execPath,
    args: [...flags, '--test-reporter=spec', '--test-reporter-destination=stdout', file],
    env,
    expectedS: expected(file),
    timeout: true,
  }));
  // The others, longest first, each into the first batch it fits in (first-fit decreasing).
  const batches: Array<{ files: string[]; s: number }> = [];
  for (const file of named.filter((f) => !alone.includes(f)).sort((a, b) => expected(b) - expected(a))) {
    const batch = batches.find((b) => b.s + expected(file) <= BATCH_MAX_S);
    if (batch) {
      batch.files.push(file);
      batch.s += expected(file);
    } else batches.push({ files: [file], s: expected(file) });
  }
  for (const batch of batches)
    jobs.push({
      pass,
      name: `a batch of ${batch.files.length} files`,
      command: process.execPath,
      args: [...flags, join(import.meta.dirname, 'test-batch.mjs')],
      env,
      expectedS: batch.s,
      timeout: true,
      files: batch.files,
      fileLimitsS: Object.fromEntries(batch.files.map((f) => [f, batchFileLimitS(expected(f))])),
    });
  return jobs;
}

/** Every running job's process group, killed if the runner itself is stopped (Ctrl-C): nothing outlives it. */
const running = new Set<number>();
/** Files whose processes outlived them (named in the summary). */
const leftRunning: string[] = [];
const killGroup = (pgid: number, signal: NodeJS.Signals) => {
  try {
    process.kill(-pgid, signal);
  } catch {
    // the group is gone
  }
};
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, () => {
    for (const pgid of running) killGroup(pgid, 'SIGKILL');
    process.exit(130);
  });

/**
 * The processes of the session `sid` (a job's: spawned detached, its process is the leader of a new session and
 * process group), as a tree with their age and CPU time.
 */
function processTree(sid: number): string {
  const ps = spawnSync('ps', ['-o', 'pid,ppid,etimes,time,args', '--forest', '-s', String(sid)], {
    encoding: 'utf8',
  });
  return (ps.stdout || ps.error?.message || '').replace(/^(.{0,200}).*$/gm, '$1');
}

/** The tests a progress file (scripts/test-progress-reporter.mjs) shows started and not ended, innermost last. */
function unfinishedTests(progressFile: string): string[] {
  if (!existsSync(progressFile)) return [];
  const open: string[] = [];
  for (const line of readFileSync(progressFile, 'utf8').split('\n')) {
    // A batch's next file (scripts/test-batch.mjs): only the file running now is of interest.
    if (line.startsWith('file ')) open.length = 0;
    const m = /^(\S+) (start|pass|fail) (\d+) (.*)$/.exec(line);
    if (!m) continue;
    const key = `${m[3]} ${m[4]}`;
    if (m[2] === 'start') open.push(`${key} (since ${m[1]})`);
    else {
      const i = open.findLastIndex((o) => o.startsWith(`${key} (`));
      if (i >= 0) open.splice(i, 1);
    }
  }
  return open;
}

/** What a job's files or step say, each printed whole as it ends, numbered in the order they end. */
let reported = 0;
function report(o: Outcome, text: string, total: number, batch?: string): void {
  const status = o.ok ? 'passed' : o.timedOut ? `TIMED OUT: ${o.timedOut}` : 'FAILED';
  process.stdout.write(
    `\n=== [${++reported}/${total}] ${o.pass}: ${o.name}: ${status} in ${o.seconds.toFixed(1)} s ` +
      `(at ${o.endS.toFixed(0)} s${batch ? `; ${batch}` : ''})\n${text}`,
  );
}

/**
 * A batch's output cut into its files' (scripts/test-batch.mjs): each file's text, and what its end line says when it
 * got there. Whatever came before the first file (the process's own start) goes with the first.
 */
function batchSections(text: string, files: string[]) {
  const sections = new Map<string, { text: string; end?: { ok: boolean; seconds: number; cpuS: number } }>();
  const parts = text.split(FILE_START);
  const before = parts.shift() ?? '';
  for (const part of parts) {
    const newline = part.indexOf('\n');
    const file = part.slice(0, newline);
    let body = part.slice(newline + 1);
    let end: { ok: boolean; seconds: number; cpuS: number } | undefined;
    const at = body.indexOf(FILE_END);
    if (at >= 0) {
      const line = body.slice(at + FILE_END.length).split('\n')[0]!;
      end = JSON.parse(line) as { ok: boolean; seconds: number; cpuS: number };
      body = body.slice(0, at) + body.slice(at + FILE_END.length + line.length + 1);
    }
    sections.set(file, { text: (sections.size ? '' : before) + body, end });
  }
  return files.map((file) => ({ file, ...(sections.get(file) ?? { text: '' }), started: sections.has(file) }));
}

/**
 * Runs one job, its output kept and printed whole when it ends (a batch's, file by file). A test file (or a batch) runs
 * in a process group of its own, so that what it started (servers, browsers, CLIs) goes with it: at its limit the
 * runner prints which tests had started and not ended and the group's process tree, then stops the whole group; a
 * group that outlives its file's exit (a server a test did not stop) is named in the output and the summary, and
 * killed.
 *
 * The limit is per test file (in a batch, from the start of the file running), in seconds of a quiet machine: each
 * second counts 1 / (load per core) when the machine is busier than its cores, so a file that only waits for CPU is
 * not stopped; a hang still is (at the latest after 4 limits of wall time).
 */
function runJob(job: Job, index: number, total: number, requeue: (job: Job) => void): Promise<Outcome[]> {
  const started = performance.now();
  const limitOf = (file: string) => job.fileLimitsS?.[file] ?? testTimeoutS;
  let limitS = testTimeoutS;
  const progressFile = join(runTmp, `.progress-${index}`);
  const args = job.files
    ? [...job.args, progressFile, ...job.files]
    : job.timeout
      ? [
          ...job.args.slice(0, -1),
          `--test-reporter=${join(import.meta.dirname, 'test-progress-reporter.mjs')}`,
          `--test-reporter-destination=${progressFile}`,
          job.args.at(-1)!,
        ]
      : job.args;
  const child = spawn(job.command, args, { env: job.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const pgid = child.pid;
  if (pgid) running.add(pgid);
  const output: Buffer[] = [];
  let timedOut: string | undefined;
  let note = '';
  let creditS = 0;
  let last = performance.now();
  // In a batch, the file running now (its limit counts from its start line).
  let current = job.files ? '' : job.name;
  let fileStarted = started;
  let tail = '';
  child.stdout.on('data', (c: Buffer) => {
    output.push(c);
    if (!job.files) return;
    const seen = tail + c.toString('latin1');
    const at = seen.lastIndexOf(FILE_START);
    const end = at >= 0 ? seen.indexOf('\n', at) : -1;
    // The tail carries the last start line into the next chunk: only a file not running yet restarts the limit.
    const name = end > 0 ? Buffer.from(seen.slice(at + FILE_START.length, end), 'latin1').toString() : current;
    if (name !== current) {
      current = name;
      limitS = limitOf(name);
      creditS = 0;
      fileStarted = performance.now();
    }
    tail = seen.slice(-200);
  });
  child.stderr.on('data', (c: Buffer) => output.push(c));
  const watch = job.timeout
    ? setInterval(() => {
        const now = performance.now();
        creditS += (now - last) / 1000 / (fixedTimeoutS ? 1 : Math.max(1, loadPerCore()));
        last = now;
        const wallS = (now - fileStarted) / 1000;
        if (timedOut || !pgid || (creditS < limitS && wallS < 4 * limitS)) return;
        timedOut =
          `met the ${limitS} s limit after ${wallS.toFixed(0)} s of wall time, ${creditS.toFixed(0)} s counted ` +
          `(${describeLoad()})`;
        const open = unfinishedTests(progressFile).map((o) => `  ${o}`);
        note +=
          `\n--- ${current} stopped at the limit; tests started and not ended:\n${open.join('\n') || '  (none)'}` +
          `\n--- its processes:\n${processTree(pgid)}`;
        killGroup(pgid, 'SIGTERM');
        setTimeout(() => killGroup(pgid, 'SIGKILL'), 10_000).unref();
      }, 1000)
    : undefined;
  let cpuS = 0;
  return new Promise((resolve) => {
    let finished = false;
    const done = (code: number | null, error?: Error) => {
      if (finished) return;
      finished = true;
      clearInterval(watch);
      if (pgid) {
        running.delete(pgid);
        // What the file left running (a server a test did not stop): named and killed. Said, not failed: a browser's
        // helpers may still be on their way out when the file's process exits.
        // (A zombie, `<defunct>`, is no process left running: only an entry its parent, often init, has yet to reap.)
        const tree = processTree(pgid)
          .split('\n')
          .slice(1)
          .filter((line) => line && !line.endsWith('<defunct>'));
        if (tree.length && !timedOut) {
          note += `\n--- left running after the ${job.files ? 'batch' : 'file'} ended (killed):\n${tree.join('\n')}`;
          leftRunning.push(job.pass + ': ' + (job.files ?? [job.name]).join(', '));
        }
        killGroup(pgid, 'SIGKILL');
      }
      rmSync(progressFile, { force: true });
      const seconds = (performance.now() - started) / 1000;
      const said = Buffer.concat(output).toString();
      const text = said + note + (error ? `\n${error.message}\n` : '');
      const endS = (performance.now() - runStarted) / 1000;
      const tests = (t: string) => Number(/^ℹ tests (\d+)$/m.exec(t)?.[1] ?? 0);
      if (!job.files) {
        const ok = code === 0 && !timedOut && !error;
        const o: Outcome = { pass: job.pass, name: job.name, ok, seconds, tests: tests(text), timedOut, endS, cpuS };
        report(o, text, total);
        resolve([o]);
        return;
      }
      // A batch: each file as its own lines say. The file running when the batch stopped (its limit, a crash) fails
      // with what the batch said last; the files after it, not run, go back to the queue as a batch of their own (one
      // file's hang does not fail its neighbours); the batch's CPU beyond what its files counted (the process's start
      // and end) goes to its first file.
      const all = batchSections(said, job.files);
      const lastRun = all.findLastIndex((f) => f.started);
      const rest = lastRun >= 0 ? job.files.slice(lastRun + 1) : [];
      if (rest.length) requeue({ ...job, name: `a batch of ${rest.length} files`, files: rest });
      const sections = all.slice(0, all.length - rest.length);
      // What the runner adds (the limit met, processes left running, a failed start) goes with the last file run.
      const counted = sections.reduce((sum, f) => sum + (f.end?.cpuS ?? 0), 0);
      const outcomes = sections.map((f, i): Outcome => {
        const o: Outcome = {
          pass: job.pass,
          name: f.file,
          ok: f.end?.ok ?? false,
          seconds: f.end?.seconds ?? (f.started ? (performance.now() - fileStarted) / 1000 : 0),
          endS,
          cpuS: (f.end?.cpuS ?? 0) + (i === 0 ? Math.max(0, cpuS - counted) : 0),
          tests: tests(f.text),
        };
        if (f.started && !f.end) o.timedOut = timedOut;
        return o;
      });
      const broken = code !== 0 && outcomes.every((o) => o.ok);
      sections.forEach((f, i) => {
        const o = outcomes[i]!;
        let its = f.started ? f.text : `(not run: the batch's process did not start it)\n`;
        if (i === Math.max(0, lastRun)) its += note + (error ? `\n${error.message}\n` : '');
        // Every file passed, yet the process failed after them: the last file says so.
        if (broken && i === sections.length - 1) {
          o.ok = false;
          its += `\n(the batch's process exited with ${code} after its last file)\n`;
        }
        report(o, its, total, `${i + 1} of ${sections.length} in a batch`);
      });
      resolve(outcomes);
    };
    child.on('error', (e) => done(null, e));
    // 'exit', not 'close': a grandchild holding the pipes (a server the file did not stop) must not hold the job.
    // The output still in the pipes is read for a moment before.
    child.on('exit', (code) => {
      const now = childrenCpuS();
      cpuS = now - childrenCpuRead;
      childrenCpuRead = now;
      setTimeout(() => done(code), 200);
    });
  });
}

/** Runs the jobs `concurrency` at a time, the slowest (by test/durations.json) first. */
async function runQueue(jobs: Job[], total: number): Promise<Outcome[]> {
  const queue = [...jobs].sort((a, b) => b.expectedS - a.expectedS || a.name.localeCompare(b.name));
  const outcomes: Outcome[] = [];
  let started = 0;
  const lane = async () => {
    for (let job = queue.shift(); job; job = queue.shift())
      outcomes.push(...(await runJob(job, ++started, total, (rest) => queue.unshift(rest))));
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, jobs.length) }, lane));
  return outcomes;
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
  'test/http/web-provenance.test.ts': 'the "Made with AI" label in Chromium; what is stored: provenance-api.test.ts',
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

// Jobs run side by side: many test files wait (for a lease, a restart backoff, a browser, a child process) rather
// than compute, so more jobs than cores keep the cores busy. PIXVOTE_TEST_CONCURRENCY overrides.
const concurrency = Math.max(1, Number(process.env.PIXVOTE_TEST_CONCURRENCY ?? 4) || 4);

const results: string[] = [];
let ok = true;
let redisChecked = false;
const jobs: Job[] = [];
/** The passes queued, each with what its header says. */
const passes: Array<{ pass: string; label: string; files: number }> = [];

if (lint) {
  // The same steps as `npm run lint`, each run even when another failed, so one run shows every finding.
  for (const script of [['lint:eslint'], ['lint:layers', '--if-present'], ['format:check']])
    jobs.push({
      pass: 'lint',
      name: script[0]!,
      command: 'npm',
      args: ['run', ...script],
      env: process.env,
      // By its time last run, as a test file (ESLint, one thread and type-checked rules, is among the longest jobs).
      expectedS: durations.lint?.[script[0]!] ?? Infinity,
      timeout: false,
    });
} else {
  results.push(`lint: skipped (${files.length ? 'test files named' : '--no-lint or PIXVOTE_SKIP_LINT=1'})`);
}

if (dbArg !== 'postgres') {
  const selected = selectFiles(ALL);
  if (selected.length) passes.push({ pass: 'sqlite', label: 'SQLite pass', files: selected.length });
  else results.push('SQLite pass: no test files selected');
  jobs.push(...testJobs('sqlite', selected));
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
    const selected = selectFiles(DB_FACING, files.length ? [] : leave);
    if (!selected.length) results.push('PostgreSQL + Redis pass: no test files selected');
    else
      passes.push({
        pass: 'postgres',
        label: `PostgreSQL + Redis pass (${leave.length} files whose subject is not the database: SQLite pass only)`,
        files: selected.length,
      });
    jobs.push(...testJobs('postgres', selected));
    redisChecked = true;
  }
}

const batched = jobs.filter((j) => j.files);
console.log(
  `\n=== ${jobs.length} jobs (${batched.reduce((n, j) => n + j.files!.length, 0)} test files in ${batched.length} ` +
    `batches${batching ? '' : ': PIXVOTE_TEST_BATCH=0'}), ${concurrency} side by side, slowest first: ` +
    [
      ...(lint ? ['lint (ESLint, layer rules, format check)'] : []),
      ...passes.map((p) => `${p.label}: ${p.files} files`),
    ].join('; ') +
    `; at most ${testTimeoutS} s per test file ` +
    (fixedTimeoutS
      ? '(PIXVOTE_TEST_TIMEOUT_S)'
      : `(in a batch ${BATCH_FILE_LIMIT_FACTOR}× its last time, at least ${BATCH_FILE_LIMIT_MIN_S} s) of a quiet ` +
        `machine (a second counts 1 / load per core while that is above 1; ${describeLoad()} now)`),
);
const outcomes = await runQueue(
  jobs,
  jobs.reduce((n, j) => n + (j.files?.length ?? 1), 0),
);
const wall = (performance.now() - runStarted) / 1000;

if (lint) {
  const steps = outcomes.filter((o) => o.pass === 'lint');
  if (timings)
    appendFileSync(
      timings,
      `\nlint pass: ${steps.length} steps\n  step s   CPU s  tests  step\n` + steps.map(timingRow).join('\n') + '\n',
    );
  const failed = steps.filter((o) => !o.ok).map((o) => o.name);
  const times = steps.map((o) => `${o.name} ${o.seconds.toFixed(0)} s, done at ${o.endS.toFixed(0)} s`).join('; ');
  results.push(`lint: ${failed.length ? `FAILED (${failed.join(', ')})` : 'passed'} (${times})`);
  if (failed.length) ok = false;
}
for (const { pass, label } of passes) {
  const mine = outcomes.filter((o) => o.pass === pass);
  const failed = mine.filter((o) => !o.ok);
  const timedOut = failed.filter((o) => o.timedOut);
  const busy = mine.reduce((s, o) => s + o.seconds, 0);
  const cpu = mine.reduce((s, o) => s + o.cpuS, 0);
  const lastS = Math.max(...mine.map((o) => o.endS));
  results.push(
    `${label.split(' (')[0]}: ${failed.length ? 'FAILED' : 'passed'} (${mine.length} files, ${busy.toFixed(0)} s ` +
      `of file processes, ${cpu.toFixed(0)} s of their CPU, its last file done at ${lastS.toFixed(0)} s)` +
      (failed.length ? `: ${failed.map((o) => o.name).join(', ')}` : '') +
      (timedOut.length
        ? `; ${timedOut.length} met the limit (a busy machine? rerun with a larger PIXVOTE_TEST_TIMEOUT_S or ` +
          `PIXVOTE_TEST_CONCURRENCY=1): ${timedOut.map((o) => `${o.name} ${o.timedOut}`).join('; ')}`
        : ''),
  );
  if (failed.length) ok = false;
  if (timings) {
    const rows = [...mine].sort((a, b) => b.seconds - a.seconds);
    appendFileSync(
      timings,
      `\n${pass} pass: ${rows.length} files, ${busy.toFixed(0)} s of file processes, ${cpu.toFixed(0)} s of CPU\n` +
        '  file s   CPU s  tests  file\n' +
        rows.map(timingRow).join('\n') +
        '\n',
    );
  }
}
if (leftRunning.length)
  results.push(`processes left running by a file that ended (killed; see its output): ${leftRunning.join(', ')}`);
const jobsCpu = outcomes.reduce((s, o) => s + o.cpuS, 0);
results.push(
  `wall time: ${wall.toFixed(0)} s for ${jobs.length} jobs, ${concurrency} side by side; ${jobsCpu.toFixed(0)} s of ` +
    `CPU in the jobs (${(jobsCpu / wall).toFixed(2)} of ${availableParallelism()} cores on average)`,
);

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
// SQLite's own temp files (a sort's, a temp index's): it unlinks each right after creating it, so one is left only
// by a process killed in between, which the crash tests do on purpose (SIGKILL mid-job); said, not failed.
const sqliteTemp = (name: string) => /^etilqs_[0-9a-f]+$/.test(name);
const all = readdirSync(runTmp).filter((name) => !onnxruntimeTelemetry(name));
const killedSqlite = all.filter(sqliteTemp);
if (killedSqlite.length)
  results.push(
    `SQLite temp files of killed processes: ${killedSqlite.length} (${killedSqlite.slice(0, 3).join(', ')})`,
  );
const leftovers = all.filter((name) => !sqliteTemp(name));
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

console.log('\n=== summary');
for (const r of results) console.log(`- ${r}`);
process.exit(ok ? 0 : 1);
