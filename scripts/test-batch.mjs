/**
 * Runs several test files one after another in this one process, for scripts/test.ts (`npm test`): each file through
 * node:test's `run()` with `isolation: 'none'`, so each keeps its own root (its top-level hooks, its tests, its
 * summary) while the modules they import are loaded, compiled and optimised once for the batch instead of once per
 * file. An HTTP test file spent ~1.6 s of CPU importing the app before its first test, and its first requests ran
 * cold code (docs/contributing.md, "Where the CPU goes").
 *
 *   node --experimental-strip-types scripts/test-batch.mjs PROGRESS_FILE FILE...
 *
 * Per file, on stdout: a start line, the spec reporter's output, then an end line with the file's outcome, its
 * seconds and its CPU (this process's, with the processes it started and reaped), which scripts/test.ts reads to
 * report each file as if it had run alone. PROGRESS_FILE gets scripts/test-progress-reporter.mjs's lines (which
 * tests started and had not ended, if the batch is stopped at its limit), each file's preceded by its name.
 * A file that fails does not stop the batch. The process ends by itself when the last file ends, as a file's own
 * process would: a file that leaves a handle open (a server, a timer) holds it until the runner's limit.
 */
import { appendFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { inspect } from 'node:util';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { progressLine } from './test-progress-reporter.mjs';
import { childrenCpuS, FILE_END, FILE_START } from './test-batch-protocol.ts';

/** CPU seconds of this process (all its threads) and of the children it reaped. */
const cpuNow = () => {
  const own = process.cpuUsage();
  return (own.user + own.system) / 1e6 + childrenCpuS();
};

const [progressFile, ...files] = process.argv.slice(2);
let failedFiles = 0;
const env = { ...process.env };
const cwd = process.cwd();
for (const file of files) {
  // Each file starts from the environment and directory the batch started in, as in its own process: a file that
  // sets a variable (PIXVOTE_*, read when the app is built) must not configure the next file's app.
  for (const key of Object.keys(process.env)) if (!(key in env)) delete process.env[key];
  Object.assign(process.env, env);
  process.chdir(cwd);
  process.stdout.write(`${FILE_START}${file}\n`);
  appendFileSync(progressFile, `file ${file}\n`);
  const started = performance.now();
  const cpu = cpuNow();
  let failures = 0;
  // One pass over the file's events, to the spec reporter (stdout) and the progress file.
  const reporter = new spec();
  reporter.on('data', (chunk) => process.stdout.write(chunk));
  const reported = new Promise((resolve) => reporter.on('end', resolve));
  for await (const event of run({ files: [file], isolation: 'none' })) {
    if (event.type === 'test:fail') failures++;
    const line = progressLine(event);
    if (line) appendFileSync(progressFile, line);
    reporter.write(event);
  }
  reporter.end();
  await reported;
  // A file that threw at its top level after it had declared a test is not failed by run() (it fails only a file
  // with no test): such a module stays errored, so importing it again throws what it threw.
  try {
    await import(pathToFileURL(resolve(file)).href);
  } catch (error) {
    failures++;
    process.stdout.write(`\n✖ ${file} threw while it was loaded:\n${inspect(error)}\n`);
  }
  if (failures) failedFiles++;
  const result = { file, ok: failures === 0, seconds: (performance.now() - started) / 1000, cpuS: cpuNow() - cpu };
  process.stdout.write(`\n${FILE_END}${JSON.stringify(result)}\n`);
  // A run's root ends on 'beforeExit', when nothing is left on the event loop (as a file's own process ends), and
  // the next file is loaded from within that event: an immediate keeps the loop going, so that Node emits
  // 'beforeExit' again when that file is done (it does not when no handle was alive after the first).
  await new Promise((resolve) => setImmediate(resolve));
}
process.exitCode = failedFiles ? 1 : 0;
