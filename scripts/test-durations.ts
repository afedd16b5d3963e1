/**
 * Refreshes test/durations.json, the order in which `npm test` starts each pass's files (slowest first), from the
 * report of a timed run:
 *
 *   PIXVOTE_TEST_TIMINGS=/tmp/timings.txt PIXVOTE_SKIP_LINT=1 npm test
 *   npx node --experimental-strip-types scripts/test-durations.ts /tmp/timings.txt
 *
 * Each pass's block of that report (scripts/test.ts writes it) gives a file's seconds, its process from start to
 * exit; a later block of the same pass replaces an earlier one. Passes the report does not name keep their figures;
 * files that no longer exist are left out.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const report = process.argv[2];
if (!report) {
  console.error('usage: scripts/test-durations.ts FILE (the report of PIXVOTE_TEST_TIMINGS=FILE npm test)');
  process.exit(2);
}
const out = join(import.meta.dirname, '../test/durations.json');
const durations = (existsSync(out) ? JSON.parse(readFileSync(out, 'utf8')) : {}) as Record<
  string,
  Record<string, number>
>;
let pass: Record<string, number> | null = null;
for (const line of readFileSync(report, 'utf8').split('\n')) {
  const head = /^(\w+) pass: /.exec(line);
  if (head) {
    pass = durations[head[1]!] = {};
    continue;
  }
  // Seconds, then (since the report has one) CPU seconds, then tests, then the file or step.
  const row = /^\s*([\d.]+)\s+(?:[\d.]+\s+)?\d+\s+(\S+\.test\.ts|lint:\w+|format:\w+)$/.exec(line);
  // Files since removed (or run only that once) are left out; the lint steps are npm scripts.
  const known = (name: string) => !name.endsWith('.test.ts') || existsSync(join(import.meta.dirname, '..', name));
  if (row && pass && known(row[2]!)) pass[row[2]!] = Number(row[1]);
}
writeFileSync(out, `${JSON.stringify(durations, null, 2)}\n`);
console.log(
  `${out}: ${Object.entries(durations)
    .map(([p, files]) => `${p} ${Object.keys(files).length} files`)
    .join(', ')}`,
);
