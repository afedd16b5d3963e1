/**
 * One pass of `npm test` (scripts/test.ts starts it, with the pass's environment): node:test's run() over the files
 * in the order given, `concurrency` side by side, each file in a process of its own with this process's Node flags.
 * Not `node --test FILES`: the command line sorts its files by name, which started the slowest ones
 * (shutdown.test.ts, the crash tests) last and left them running alone at the end of a pass; scripts/test.ts orders
 * them slowest first (longest processing time first) from test/durations.json.
 *
 *   node --experimental-strip-types --experimental-async-context-frame scripts/test-pass.ts '{"files":[…],…}'
 *
 * Reporters: spec on stdout, plus the modules named (scripts/test-timings-reporter.mjs, …), each also on stdout.
 * Exits 1 when a test failed, as `node --test` does.
 */
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { pathToFileURL } from 'node:url';

interface PassOptions {
  files: string[];
  concurrency: number;
  timeoutMs: number;
  /** Paths of further reporter modules (an async generator as their default export). */
  reporters: string[];
}

const opts = JSON.parse(process.argv[2] ?? '{}') as PassOptions;
const stream = run({
  files: opts.files,
  concurrency: opts.concurrency,
  timeout: opts.timeoutMs,
});
// As the command line sets up several reporters: each reads every event of the run. Each composed reporter and pipe
// listens for the stream's end: more than EventEmitter's default 10, which is no leak.
stream.setMaxListeners(32);
stream.compose(spec).pipe(process.stdout);
for (const path of opts.reporters) {
  const reporter = ((await import(pathToFileURL(path).href)) as { default: Parameters<typeof stream.compose>[0] })
    .default;
  stream.compose(reporter).pipe(process.stdout);
}
// The run's own summary (no `file`) says whether everything passed; a run that ends without one failed.
process.exitCode = 1;
stream.on('test:summary', (data: { file?: string; success: boolean }) => {
  if (data.file === undefined) process.exitCode = data.success ? 0 : 1;
});
