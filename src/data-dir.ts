/**
 * Where DATA_DIR is, for the server and the operator commands alike: a relative DATA_DIR (the default `./data`
 * included) is taken from the checkout's (the package's) folder, not from the current directory. So `npm start`,
 * which runs in that folder, `node src/main.ts` and `pixvote admin …` run from any folder all find the same data.
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout (or installed package) folder: src/.. here, dist/.. once compiled. */
export const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** DATA_DIR as an absolute path: unset or empty is `./data`; relative paths are from PACKAGE_ROOT. */
export function resolveDataDir(value: string | undefined): string {
  return resolve(PACKAGE_ROOT, value || './data');
}
