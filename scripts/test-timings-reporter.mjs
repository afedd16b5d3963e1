/**
 * A node:test reporter scripts/test.ts adds when PIXVOTE_TEST_TIMINGS names a file: per test file, the sum of its
 * top-level tests' durations, slowest first, appended to that file (one block per pass). Where CI's time goes,
 * without reading thousands of spec lines. (Files run side by side, so the sums add up to more than the wall time;
 * a file's module loading and its setup outside any test are not counted.)
 */
import { appendFileSync } from 'node:fs';
import { relative } from 'node:path';

export default async function* timings(source) {
  const files = new Map();
  for await (const event of source) {
    const { file, nesting, details } = event.data ?? {};
    if (!file || nesting !== 0 || (event.type !== 'test:pass' && event.type !== 'test:fail')) continue;
    const f = files.get(file) ?? { tests: 0, ms: 0 };
    f.tests += 1;
    f.ms += details?.duration_ms ?? 0;
    files.set(file, f);
  }
  const rows = [...files]
    .map(([file, f]) => ({ file: relative(process.cwd(), file), ...f }))
    .sort((a, b) => b.ms - a.ms);
  const total = rows.reduce((s, r) => s + r.ms, 0) / 1000;
  const lines = rows.map((r) => `${(r.ms / 1000).toFixed(1).padStart(8)}  ${String(r.tests).padStart(5)}  ${r.file}`);
  appendFileSync(
    process.env.PIXVOTE_TEST_TIMINGS,
    `\n${process.env.PIXVOTE_TEST_DB ?? '?'} pass: ${rows.length} files, ${total.toFixed(0)} s of tests\n` +
      `  tests s  tests  file\n${lines.join('\n')}\n`,
  );
  yield '';
}
