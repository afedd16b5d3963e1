/** Why a file cannot be created at a path, found by looking at the path: for start-up messages that name DATA_DIR. */
import { accessSync, constants as fsConstants, existsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * What stops creating or writing `file`: a file where a directory should be, a directory this user may not write,
 * a read-only file system; null when nothing is found wrong (then the caller's own error says it).
 */
export function pathProblem(file: string): string | null {
  // The nearest existing ancestor decides (missing directories in between would be created).
  let dir = dirname(file);
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  try {
    if (!statSync(dir).isDirectory()) return `${dir} is a file, not a directory (ENOTDIR)`;
    accessSync(dir, fsConstants.W_OK | fsConstants.X_OK);
    if (existsSync(file)) accessSync(file, fsConstants.R_OK | fsConstants.W_OK);
  } catch (err) {
    const { code, path } = err as NodeJS.ErrnoException;
    const uid = process.getuid?.() ?? '?';
    if ((code === 'EACCES' || code === 'EPERM') && path && path !== dir)
      return `${path} cannot be read and written by this user (uid ${uid}, ${code})`;
    if (code === 'EACCES' || code === 'EPERM') return `${dir} is not writable by this user (uid ${uid}, ${code})`;
    if (code === 'EROFS') return `${path ?? dir} is on a read-only file system (EROFS)`;
    return reasonOf(err);
  }
  return null;
}

/** An error's message, with its code when the message does not already say it. */
export function reasonOf(e: unknown): string {
  const { code, message } = (e ?? {}) as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' && message ? message : String(e);
  return typeof code === 'string' && !text.includes(code) ? `${text} (${code})` : text;
}
