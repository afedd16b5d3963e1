/**
 * A node:test reporter scripts/test.ts always adds: it appends one line per test file (or test) that met the
 * runner's timeout (`--test-timeout`) to the file PIXVOTE_TEST_TIMEOUTS names, so the summary can say that the run
 * timed out (and how loaded the machine was) instead of leaving a bare "timed out" among thousands of spec lines.
 */
import { appendFileSync } from 'node:fs';
import { relative } from 'node:path';

const isTimeout = (error) =>
  error?.failureType === 'testTimeoutFailure' ||
  error?.cause?.failureType === 'testTimeoutFailure' ||
  /\btimed out after \d+ ?ms\b/.test(String(error?.message ?? ''));

export default async function* timeouts(source) {
  for await (const event of source) {
    if (event.type !== 'test:fail' || !process.env.PIXVOTE_TEST_TIMEOUTS) continue;
    const { file, name, details } = event.data ?? {};
    if (!isTimeout(details?.error)) continue;
    const where = file ? relative(process.cwd(), file) : '?';
    appendFileSync(process.env.PIXVOTE_TEST_TIMEOUTS, `${where === name ? where : `${where}: ${name}`}\n`);
  }
  yield '';
}
