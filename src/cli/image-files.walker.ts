/**
 * The files an upload run covers: named files and everything under named folders whose extension is an
 * image the service accepts. Hidden entries are skipped, and so are symlinked folders (no cycles); a file
 * reached twice is listed once.
 */
import { readdir, realpath, stat } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';

export const IMAGE_EXTENSIONS = new Set(['.jpg', '.jpeg', '.png', '.gif', '.webp']);

export interface ImageFile {
  path: string;
  size: number;
  mtimeMs: number;
}

export interface WalkResult {
  files: ImageFile[];
  /** Named files that are not images by their extension. */
  skipped: string[];
  /** Paths that could not be read (missing, no permission). */
  unreadable: { path: string; reason: string }[];
}

export const isImageName = (name: string) => IMAGE_EXTENSIONS.has(extname(name).toLowerCase());

export async function walkImages(paths: readonly string[]): Promise<WalkResult> {
  const result: WalkResult = { files: [], skipped: [], unreadable: [] };
  const seen = new Set<string>();
  const addFile = async (path: string, s: { size: number; mtimeMs: number }) => {
    const real = await realpath(path);
    if (seen.has(real)) return;
    seen.add(real);
    result.files.push({ path, size: s.size, mtimeMs: s.mtimeMs });
  };
  const walkDir = async (dir: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (e) {
      result.unreadable.push({ path: dir, reason: (e as NodeJS.ErrnoException).code ?? String(e) });
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (e.name.startsWith('.')) continue;
      const p = join(dir, e.name);
      if (e.isDirectory()) await walkDir(p);
      else if ((e.isFile() || e.isSymbolicLink()) && isImageName(e.name)) {
        const s = await stat(p).catch(() => null);
        if (s?.isFile()) await addFile(p, s);
      }
    }
  };
  for (const path of paths) {
    const s = await stat(path).catch((e: NodeJS.ErrnoException) => e);
    if (s instanceof Error) {
      result.unreadable.push({
        path,
        reason: s.code === 'ENOENT' ? 'no such file or directory' : (s.code ?? s.message),
      });
    } else if (s.isDirectory()) await walkDir(path);
    else if (!isImageName(basename(path))) result.skipped.push(path);
    else await addFile(path, s);
  }
  return result;
}
