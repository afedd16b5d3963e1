/**
 * The test runner's batches (scripts/test.ts, scripts/test-batch.mjs): short files run several to a process, yet each
 * is reported, limited and failed as if it had run alone. The runner is started on files written here (in a
 * directory of their own, with their own test/durations.json), as `npm test -- FILES` would start it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

const runner = join(import.meta.dirname, '../../scripts/test.ts');
let dir: string;

// What each file does, and what it took "last time" (the batch is packed longest first: a, d, c, b, e).
const FILES: Record<string, { seconds: number; code: string }> = {
  'test/unit/a.test.ts': { seconds: 5, code: `test('a passes', () => {});` },
  // Sets a variable at its top level, as a file that configures its app might.
  'test/unit/d.test.ts': { seconds: 4, code: `process.env.PIXVOTE_BATCH_LEAK = 'd'; test('d passes', () => {});` },
  // Runs after d in the same process: it must not see d's variable.
  'test/unit/c.test.ts': {
    seconds: 3,
    code: `test('c sees no variable of d', () => { if (process.env.PIXVOTE_BATCH_LEAK) throw new Error('leaked'); });`,
  },
  // Never ends: stopped at the limit, it fails alone and the files after it still run.
  'test/unit/b.test.ts': { seconds: 2, code: `test('b hangs', () => new Promise(() => setInterval(() => {}, 1000)));` },
  // Throws at its top level after declaring a test: node:test's run() alone would not fail it.
  'test/unit/e.test.ts': {
    seconds: 1,
    code: `test('e passes', () => {}); throw new Error('e threw at its top level');`,
  },
};

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pixvote-test-batches-'));
  await mkdir(join(dir, 'test/unit'), { recursive: true });
  for (const [file, { code }] of Object.entries(FILES))
    await writeFile(join(dir, file), `import { test } from 'node:test';\n${code}\n`);
  const durations = { sqlite: Object.fromEntries(Object.entries(FILES).map(([f, { seconds }]) => [f, seconds])) };
  await writeFile(join(dir, 'durations.json'), JSON.stringify(durations));
});
after(() => rm(dir, { recursive: true, force: true }));

/** Runs the runner on `files` in the directory, one job at a time; its exit code and what it printed. */
function runTests(files: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
  // Not the outer run's settings: its service requirement, nor its timings file (these runs' files are not its).
  const { PIXVOTE_REQUIRE_SERVICES: _, PIXVOTE_TEST_TIMINGS: _t, ...outer } = process.env;
  const child = spawn(process.execPath, ['--experimental-strip-types', runner, '--db=sqlite', ...files], {
    cwd: dir,
    env: {
      ...outer,
      PIXVOTE_TEST_DURATIONS: join(dir, 'durations.json'),
      PIXVOTE_TEST_CONCURRENCY: '1',
      // A wall-time limit for the file that hangs; the others end in well under a second.
      PIXVOTE_TEST_TIMEOUT_S: '10',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out })));
}

/** What the runner said of one file: its header line. */
const header = (out: string, file: string) =>
  new RegExp(`^=== \\[\\d+/\\d+\\] sqlite: ${file.replaceAll('.', '\\.')}: (.*)$`, 'm').exec(out)?.[1];

test('each file of a batch is reported alone; a hang fails only its file, the ones after it run anew', async () => {
  const { code, out } = await runTests(Object.keys(FILES));
  assert.equal(code, 1, out);
  assert.match(out, /=== 1 jobs \(5 test files in 1 batches\)/);
  assert.match(header(out, 'test/unit/a.test.ts') ?? '', /^passed in .*1 of 4 in a batch\)$/, out);
  assert.match(header(out, 'test/unit/d.test.ts') ?? '', /^passed in .*2 of 4 in a batch\)$/, out);
  assert.match(header(out, 'test/unit/c.test.ts') ?? '', /^passed in .*3 of 4 in a batch\)$/, out);
  assert.match(header(out, 'test/unit/b.test.ts') ?? '', /^TIMED OUT: met the 10 s limit.*4 of 4 in a batch\)$/, out);
  assert.match(out, /test\/unit\/b\.test\.ts stopped at the limit; tests started and not ended:\n\s+0 "b hangs"/);
  // The file after the hang, in a batch of its own, fails for its top-level throw.
  assert.match(header(out, 'test/unit/e.test.ts') ?? '', /^FAILED in .*1 of 1 in a batch\)$/, out);
  assert.match(out, /test\/unit\/e\.test\.ts threw while it was loaded:\nError: e threw at its top level/);
  assert.match(out, /SQLite pass: FAILED \(5 files.*\): test\/unit\/[be]\.test\.ts, test\/unit\/[be]\.test\.ts;/);
});

test('PIXVOTE_TEST_BATCH=0 runs every file in a process of its own', async () => {
  const files = ['test/unit/a.test.ts', 'test/unit/c.test.ts', 'test/unit/d.test.ts'];
  const { code, out } = await runTests(files, { PIXVOTE_TEST_BATCH: '0' });
  assert.equal(code, 0, out);
  assert.match(out, /=== 3 jobs \(0 test files in 0 batches: PIXVOTE_TEST_BATCH=0\)/);
  for (const file of files) assert.match(header(out, file) ?? '', /^passed in [\d.]+ s \(at \d+ s\)$/, out);
});

test('a batched file’s limit is ten times its last time (at least a floor), not a lone file’s limit', async () => {
  // A file that took 0.2 s last time and now hangs, after one that passes: 10 × 0.2 = 2 s of a quiet machine.
  await writeFile(
    join(dir, 'test/unit/f.test.ts'),
    `import { test } from 'node:test';\n${FILES['test/unit/b.test.ts']!.code}\n`,
  );
  const durations = join(dir, 'durations-f.json');
  await writeFile(durations, JSON.stringify({ sqlite: { 'test/unit/a.test.ts': 5, 'test/unit/f.test.ts': 0.2 } }));
  const { code, out } = await runTests(['test/unit/a.test.ts', 'test/unit/f.test.ts'], {
    PIXVOTE_TEST_DURATIONS: durations,
    // No fixed limit: the batch's own; its floor lowered from a minute to a second.
    PIXVOTE_TEST_TIMEOUT_S: '',
    PIXVOTE_TEST_BATCH_LIMIT_MIN_S: '1',
  });
  assert.equal(code, 1, out);
  assert.match(header(out, 'test/unit/a.test.ts') ?? '', /^passed in .*1 of 2 in a batch\)$/, out);
  assert.match(header(out, 'test/unit/f.test.ts') ?? '', /^TIMED OUT: met the 2 s limit.*2 of 2 in a batch\)$/, out);
});
