/** Checking downloaded files against pinned digests, and writing them so no reader sees half a file. */
import { createHash } from 'node:crypto';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';

export function sha256Hex(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** True when `file` exists and has this sha256 (and this size, when given). */
export async function hasSha256(file: string, sha256: string, bytes?: number): Promise<boolean> {
  try {
    const data = await readFile(file);
    return (bytes === undefined || data.length === bytes) && sha256Hex(data) === sha256;
  } catch {
    return false;
  }
}

/**
 * Writes through a temp file and a rename. Several processes (parallel test files, worker threads)
 * may fetch the same file at once; each writes its own temp file and the last rename wins whole.
 */
export async function writeFileAtomically(file: string, data: Uint8Array): Promise<void> {
  const temp = `${file}.${process.pid}.${Date.now()}.${Math.random().toString(36).slice(2)}.tmp`;
  try {
    await writeFile(temp, data);
    await rename(temp, file);
  } finally {
    await rm(temp, { force: true });
  }
}
