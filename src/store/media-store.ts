/**
 * Image variants on disk under DATA_DIR (a shared volume when several gateways run):
 *
 *   media/ab/<key>.<variant>.webp      stored variants, sharded by the key's first two characters
 *   staging/<instance>/<key>/          written by a worker before the database commit
 *   tmp/<instance>/<request>/          multipart uploads while they stream in
 *
 * Staged files are renamed into place only after the upload row is committed. Each process stages
 * under its own instance directory, with a heartbeat file; when a process dies, the next sweep (at any
 * process's start-up, and periodically) moves in the staged files whose row exists and removes the
 * rest — so every row has its files and every file has its row.
 */
import { hostname } from 'node:os';
import { constants } from 'node:fs';
import { access, mkdir, open, readdir, rename, rm, stat, utimes, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { ByteRange, MediaFiles, MediaStore, VariantRead } from '../domain/uploads/ports.ts';
import { VARIANT_MAX_SIDE, type VariantName } from '../domain/uploads/processed-image.ts';

export const VARIANTS = Object.keys(VARIANT_MAX_SIDE) as VariantName[];
const KEY_RE = /^[0-9a-f-]{36}$/;
const HEARTBEAT_MS = 10_000;
/** An instance whose heartbeat is this old is dead, whatever its pid says (another host, or a reused pid). */
const DEAD_AFTER_MS = 60_000;
const ALIVE = '.alive';

/** What a sweep asks of the rows: the upload repository's answers, and the removal of files under their lock. */
export interface MediaReferences {
  isReferenced(key: string): Promise<boolean>;
  /** The keys among these that a row references. */
  referencedAmong(keys: string[]): Promise<Set<string>>;
  /** Removes a key's stored files unless a row references it (under the files' lock); true when it removed them. */
  release(key: string): Promise<unknown>;
}

/** What a sweep did: staged media moved in, staged or temp work of dead processes removed, orphans released. */
export interface SweepCounts {
  committed: number;
  discarded: number;
  /** Object storage only: stored objects no row referenced, released. */
  orphans?: number;
}

/**
 * Where the media are kept — local disk (FileMediaStore) or object storage (S3MediaStore) — as the composition root
 * opens, checks, sweeps and closes it.
 */
export interface StoredMedia extends MediaStore, MediaFiles {
  init(): Promise<void>;
  close(): Promise<void>;
  /** /readyz: resolves (with details) while the store is usable, rejects when it is not. */
  check(): Promise<Record<string, unknown> | void>;
  /** Recovery after crashes, at start-up and `periodic`ally (housekeeping); see each store. */
  sweep(refs: MediaReferences, opts?: { periodic?: boolean }): Promise<SweepCounts>;
}

/** A process's name in DATA_DIR's staging and temp directories: `<host>~<pid>~<start>` (no host name has a tilde). */
export const processInstance = (): string => `${hostname()}~${process.pid}~${Date.now()}`;

/** A process's temporary directory under DATA_DIR (FileMediaStore's `processTmpDir`). */
export const processTmpDirOf = (dataDir: string, instance: string): string => join(dataDir, 'tmp', instance);

/** Rejects unless the directory is there, readable and writable. */
export const usable = (dir: string): Promise<void> => access(dir, constants.R_OK | constants.W_OK);

export class FileMediaStore implements StoredMedia {
  readonly root: string;
  readonly stagingRoot: string;
  readonly tmpRoot: string;
  /** This process's temporary directory (DATA_DIR/tmp/<instance>): removed by close(), swept once it has died. */
  readonly processTmpDir: string;
  /** This process (processInstance()). */
  readonly instance: string;
  #heartbeat: NodeJS.Timeout | null = null;

  constructor(dataDir: string, instance = processInstance()) {
    this.instance = instance;
    this.root = join(dataDir, 'media');
    this.stagingRoot = join(dataDir, 'staging');
    this.tmpRoot = join(dataDir, 'tmp');
    this.processTmpDir = processTmpDirOf(dataDir, instance);
  }

  async init(): Promise<void> {
    await mkdir(this.root, { recursive: true });
    for (const root of [this.stagingRoot, this.tmpRoot]) {
      await mkdir(join(root, this.instance), { recursive: true });
      await writeFile(join(root, this.instance, ALIVE), '');
    }
    this.#heartbeat = setInterval(() => {
      const now = new Date();
      for (const root of [this.stagingRoot, this.tmpRoot])
        void utimes(join(root, this.instance, ALIVE), now, now).catch(() => {});
    }, HEARTBEAT_MS).unref();
  }

  /**
   * Uploads are staged, then moved into the media directory: both must be there and writable.
   */
  async check(): Promise<void> {
    await Promise.all([usable(this.root), usable(this.stagingRoot)]);
  }

  /**
   * Stops the heartbeat and removes this instance's directories — staging only when nothing is staged: an
   * upload still finishing past the shutdown grace may have committed its row, and the next sweep (this
   * instance is dead by then) moves such files in.
   */
  async close(): Promise<void> {
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    const staged = (await readdir(join(this.stagingRoot, this.instance)).catch(() => [] as string[])).filter(
      (f) => f !== ALIVE,
    );
    if (staged.length === 0) await rm(join(this.stagingRoot, this.instance), { recursive: true, force: true });
    await rm(this.processTmpDir, { recursive: true, force: true });
  }

  /** Path of a stored variant. */
  variantPath(key: string, variant: VariantName): string {
    return join(this.root, key.slice(0, 2), `${key}.${variant}.webp`);
  }

  stagingDir(key: string, instance = this.instance): string {
    return join(this.stagingRoot, instance, key);
  }

  async stage(key: string): Promise<string> {
    const dir = this.stagingDir(key);
    await mkdir(dir, { recursive: true });
    return dir;
  }

  /** Nothing to do before the row: the files move into place after it (commit). */
  async persist(): Promise<boolean> {
    return false;
  }

  async commit(key: string, instance = this.instance): Promise<void> {
    const dir = this.stagingDir(key, instance);
    await mkdir(join(this.root, key.slice(0, 2)), { recursive: true });
    for (const v of VARIANTS) {
      try {
        await rename(join(dir, `${key}.${v}.webp`), this.variantPath(key, v));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
        // Already moved (an earlier, interrupted commit, or a sweep racing this one) — or lost: then say so.
        if (!(await stat(this.variantPath(key, v)).catch(() => null)))
          throw new Error(`media ${key}: ${v} is neither staged nor stored`, { cause: e });
      }
    }
    await rm(dir, { recursive: true, force: true });
  }

  async discard(key: string): Promise<void> {
    await rm(this.stagingDir(key), { recursive: true, force: true });
  }

  async remove(key: string): Promise<void> {
    await Promise.all(VARIANTS.map((v) => rm(this.variantPath(key, v), { force: true })));
  }

  async has(key: string): Promise<boolean> {
    const found = await Promise.all(
      VARIANTS.map((v) =>
        stat(this.variantPath(key, v)).then(
          () => true,
          () => false,
        ),
      ),
    );
    return found.every(Boolean);
  }

  /** A fresh directory for one request's multipart temp file; removed by the caller in a finally. */
  async tempDir(name: string): Promise<string> {
    const dir = join(this.processTmpDir, name);
    await mkdir(dir, { recursive: true });
    return dir;
  }

  /**
   * Recovery. Staged media of any instance (this one included) whose row exists is moved into place
   * (always safe: commits are idempotent). Everything else left by dead instances — staged media without a row,
   * temp files — is removed. Live instances' unreferenced work is theirs and is left alone.
   *
   * `release` removes stored files unless a row references them (under the files' lock): files moved in for
   * a row that was deleted meanwhile (its delete found nothing to remove yet) go through it, so none is left
   * without a row (without `release`: removed unless referenced, without the lock). Every sweep of the disk store is
   * the same: at start-up or `periodic`.
   */
  async sweep(
    refs: Pick<MediaReferences, 'isReferenced'> & Partial<Pick<MediaReferences, 'release'>>,
  ): Promise<{ committed: number; discarded: number }> {
    const isReferenced = (key: string) => refs.isReferenced(key);
    const release = async (key: string) =>
      refs.release ? refs.release(key) : (await isReferenced(key)) || this.remove(key);
    let committed = 0;
    let discarded = 0;
    for (const instance of await readdir(this.stagingRoot).catch(() => [] as string[])) {
      // This process's own staged files are moved in too when their row exists (a commit that failed
      // after the row was written), never discarded: the rest is work in progress.
      const dead = instance !== this.instance && (await this.#isDead(this.stagingRoot, instance));
      for (const key of await readdir(join(this.stagingRoot, instance)).catch(() => [] as string[])) {
        if (key === ALIVE) continue;
        if (KEY_RE.test(key) && (await isReferenced(key))) {
          await this.commit(key, instance);
          if (!(await isReferenced(key))) await release(key);
          committed++;
        } else if (dead) {
          await rm(join(this.stagingRoot, instance, key), { recursive: true, force: true });
          discarded++;
        }
      }
      if (dead) await rm(join(this.stagingRoot, instance), { recursive: true, force: true });
    }
    for (const instance of await readdir(this.tmpRoot).catch(() => [] as string[])) {
      if (instance !== this.instance && (await this.#isDead(this.tmpRoot, instance))) {
        await rm(join(this.tmpRoot, instance), { recursive: true, force: true });
      }
    }
    return { committed, discarded };
  }

  async #isDead(root: string, instance: string): Promise<boolean> {
    const beat = (await stat(join(root, instance, ALIVE)).catch(() => null))?.mtimeMs ?? 0;
    if (Date.now() - beat > DEAD_AFTER_MS) return true;
    const [host, pid] = instance.split('~');
    if (host !== hostname() || !pid) return false;
    try {
      process.kill(Number(pid), 0);
      return false;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'ESRCH';
    }
  }

  async stat(key: string, variant: VariantName): Promise<{ size: number } | null> {
    const st = await stat(this.variantPath(key, variant)).catch(() => null);
    return st ? { size: st.size } : null;
  }

  /**
   * A stored variant, opened, then sized: sizing what is open (not a path stat'ed before opening it) means a
   * file removed meanwhile is a clean miss, never a response cut off mid-way. The stream closes the file.
   */
  async read(key: string, variant: VariantName, range?: ByteRange): Promise<VariantRead | null> {
    const file = await this.open(key, variant);
    if (!file) return null;
    const { handle, size } = file;
    if (!range) return { size, body: handle.createReadStream(), range: null };
    const r = resolveRange(range, size);
    if (!r) {
      await handle.close();
      return { size, unsatisfiable: true };
    }
    return { size, body: handle.createReadStream({ start: r.start, end: r.end }), range: r };
  }

  /** A stored variant, opened, with its size; null when missing. The caller closes the handle. */
  async open(key: string, variant: VariantName): Promise<{ handle: FileHandle; size: number } | null> {
    let handle: FileHandle;
    try {
      handle = await open(this.variantPath(key, variant), 'r');
    } catch {
      return null;
    }
    try {
      return { handle, size: (await handle.stat()).size };
    } catch (e) {
      await handle.close();
      throw e;
    }
  }
}

/** The inclusive byte span a range names within `size` bytes; null when it lies outside them (416). */
export function resolveRange(range: ByteRange, size: number): { start: number; end: number } | null {
  if ('suffix' in range) {
    if (range.suffix <= 0 || size === 0) return null;
    return { start: Math.max(0, size - range.suffix), end: size - 1 };
  }
  if (range.start >= size) return null;
  return { start: range.start, end: Math.min(range.end ?? size - 1, size - 1) };
}
