/**
 * The resume file of `pixvote upload`: which files a run has finished (uploaded, already uploaded, duplicate),
 * so the next run of the same command skips them without a request, and which it was sending resumably (tus):
 * per file the upload's URL with the file's size, modification time and SHA-256, so that the next run continues
 * that upload from the server's offset when the file is still the same, instead of from byte 0. By default it
 * lives beside the config, `<config dir>/pixvote/resume/<key>.json`, keyed by the server URL, the input paths
 * and the upload options; `--resume FILE` names it instead. Written atomically (a temporary file renamed over it),
 * mode 0600, after each finished file (at most once a second), at once when a resumable upload is created, and when
 * the run ends; removed when a run ends with every file done, so a later run starts afresh.
 */
import { createHash } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { CliError, configPath } from './cli-config.store.ts';
import type { ImageFile } from './image-files.walker.ts';

export interface ResumeEntry {
  size: number;
  mtimeMs: number;
  outcome: 'uploaded' | 'replayed' | 'duplicate';
  id: string;
}

/** A file being sent resumably (tus): where its upload is, and which bytes it is of. */
export interface PartialEntry {
  /** The upload's URL as the server's `Location` gave it (a path on the server). */
  url: string;
  size: number;
  mtimeMs: number;
  sha256: string;
  created_at: string;
}

export interface ResumeOptions {
  server: string;
  paths: readonly string[];
  tags: readonly string[];
  isPrivate: boolean;
}

interface ResumeData {
  version: 1;
  server: string;
  paths: string[];
  tags: string[];
  private: boolean;
  updated_at: string;
  done: Record<string, ResumeEntry>;
  /** Files whose resumable upload was created but not finished (absent from files written before issue 49). */
  partial?: Record<string, PartialEntry>;
}

/** The default resume file of a run: the same server, inputs and options always give the same file. */
export function defaultResumePath(o: ResumeOptions, env: NodeJS.ProcessEnv = process.env): string {
  const inputs = o.paths.map((p) => resolve(p)).sort();
  const key = createHash('sha256')
    .update(JSON.stringify([o.server, inputs, [...o.tags], o.isPrivate]))
    .digest('hex')
    .slice(0, 24);
  return join(dirname(configPath(env)), 'resume', `${key}.json`);
}

export class ResumeFile {
  readonly path: string;
  readonly #data: ResumeData;
  /** Entries read from the file when the run started. */
  readonly loaded: number;
  #writing: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout | null = null;

  private constructor(path: string, data: ResumeData) {
    this.path = path;
    this.#data = data;
    this.loaded = Object.keys(data.done).length;
  }

  static async open(path: string, o: ResumeOptions): Promise<ResumeFile> {
    const fresh: ResumeData = {
      version: 1,
      server: o.server,
      paths: o.paths.map((p) => resolve(p)),
      tags: [...o.tags],
      private: o.isPrivate,
      updated_at: new Date().toISOString(),
      done: {},
    };
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return new ResumeFile(path, fresh);
      throw new CliError(`cannot read the resume file ${path}: ${(e as Error).message}`, 1);
    }
    let data: ResumeData;
    try {
      data = JSON.parse(text) as ResumeData;
    } catch {
      throw new CliError(`the resume file ${path} is not valid JSON; fix or delete it`);
    }
    if (data.version !== 1 || typeof data.done !== 'object' || data.done === null) {
      throw new CliError(`${path} is not a pixvote resume file; pass another --resume FILE or delete it`);
    }
    // A file done with other tags or privacy is not done for this run.
    if (data.private !== o.isPrivate || (data.tags ?? []).join(',') !== o.tags.join(',')) {
      throw new CliError(
        `the resume file ${path} is of a run with other --tags or --private; ` + 'pass another --resume FILE',
      );
    }
    const partial = typeof data.partial === 'object' && data.partial !== null ? data.partial : {};
    return new ResumeFile(path, { ...fresh, done: data.done, partial });
  }

  /** Finished by an earlier run, and unchanged since (same size and modification time). */
  isDone(file: ImageFile): boolean {
    const e = this.#data.done[resolve(file.path)];
    return e !== undefined && e.size === file.size && e.mtimeMs === file.mtimeMs;
  }

  record(file: ImageFile, outcome: ResumeEntry['outcome'], id: string): void {
    this.#data.done[resolve(file.path)] = { size: file.size, mtimeMs: file.mtimeMs, outcome, id };
    this.forget(file);
    this.#timer ??= setTimeout(() => void this.flush().catch(() => {}), 1000).unref();
  }

  /** The resumable upload an earlier run began for these very bytes (same size, time and SHA-256), if any. */
  partialOf(file: ImageFile, sha256: string): PartialEntry | null {
    const e = this.#data.partial?.[resolve(file.path)];
    return e && e.size === file.size && e.mtimeMs === file.mtimeMs && e.sha256 === sha256 ? e : null;
  }

  /**
   * Records the resumable upload of a file, and writes it at once: a run killed right after (kill -9, a lost
   * laptop battery) must still find it, or its bytes would be sent again from 0.
   */
  async begin(file: ImageFile, sha256: string, url: string): Promise<void> {
    (this.#data.partial ??= {})[resolve(file.path)] = {
      url,
      size: file.size,
      mtimeMs: file.mtimeMs,
      sha256,
      created_at: new Date().toISOString(),
    };
    await this.flush();
  }

  /** The file's resumable upload is over (finished, failed for good, or gone on the server). */
  forget(file: ImageFile): void {
    if (this.#data.partial) delete this.#data.partial[resolve(file.path)];
  }

  /** Resumable uploads still open (the next run continues them). */
  get partials(): number {
    return Object.keys(this.#data.partial ?? {}).length;
  }

  get size(): number {
    return Object.keys(this.#data.done).length;
  }

  /** Writes what is recorded now; writes never overlap. */
  flush(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    // A write that failed (a background one included) does not block the next: that one writes everything again.
    this.#writing = this.#writing.catch(() => {}).then(() => this.#write());
    return this.#writing;
  }

  async #write(): Promise<void> {
    this.#data.updated_at = new Date().toISOString();
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    const tmp = `${this.path}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify(this.#data, null, 2) + '\n', { mode: 0o600 });
    await chmod(tmp, 0o600);
    await rename(tmp, this.path);
  }

  /** Every file is done: the next run starts afresh. */
  async remove(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#writing;
    await rm(this.path, { force: true });
  }
}
