/**
 * What scripts/test.ts (the runner) and scripts/test-batch.mjs (a batch of test files in one process) share: the
 * lines a batch writes around each file's output, and how either reads the CPU of the processes it reaped.
 */
import { readFileSync } from 'node:fs';

/** Written before a file's output, followed by its path. */
export const FILE_START = '\u0001pixvote-test-file-start ';
/** Written after it, followed by `{ file, ok, seconds, cpuS }` as JSON. */
export const FILE_END = '\u0001pixvote-test-file-end ';

/** CPU seconds (user + system) of the children this process has reaped: cutime + cstime of /proc/self/stat. */
export function childrenCpuS(): number {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return 0; // no /proc
  }
}
