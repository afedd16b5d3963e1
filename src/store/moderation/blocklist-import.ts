/**
 * Where a blocklist import's steps run on SQLite: on a thread with a connection of its own
 * (blocklist-import.worker.ts). node:sqlite runs statements on the calling thread, and an import writes ~40 index
 * entries per PDQ entry (its row, 16 chunk rows in two indexes, its queue row and modlog line): on the main
 * connection a step of 10 entries took 10–25 ms of the event loop, mostly the commit's page writes, and kept
 * /healthz p50 at 26 ms through the import (bench/README.md, Blocklist import). The thread ends when idle: an
 * import is rare, and an idle thread must not keep a process alive.
 */
import { Piscina } from 'piscina';
import type { Moderator, NewBlocklistEntry } from '../../domain/moderation/moderation.types.ts';

/**
 * The `blocklist_hold` job that counts an addition's entries. An import writes its entries in several transactions
 * (BlocklistRepository.add): the first one that adds an entry queues the job (`added` 0 so far), each later one adds
 * its entries to the job's total, so the job is listed (GET /api/admin/jobs) from the import's first step on.
 */
export interface HoldJobRef {
  id: string;
  /** Entries the addition's earlier, committed transactions added to it. */
  added: number;
}

export interface AddOptions {
  source: 'moderation' | 'import';
  moderator: Moderator;
  at: Date;
  job?: HoldJobRef;
}

/** One step for the import thread. */
export interface ImportStepTask {
  path: string;
  entries: NewBlocklistEntry[];
  opts: AddOptions;
}

// `.ts` when run from src/, `.js` when run from the compiled dist/.
const WORKER_FILE = new URL(
  `./blocklist-import.worker${import.meta.url.slice(import.meta.url.lastIndexOf('.'))}`,
  import.meta.url,
);

/** How long the thread outlives its last step (the CLI's next request of an import comes well within it). */
const IDLE_MS = 30_000;

let pool: Piscina | undefined;

/** Runs one import step on the import thread, against the SQLite file at `path`; the ids it added. */
export function importStepOnThread(path: string, entries: NewBlocklistEntry[], opts: AddOptions): Promise<string[]> {
  pool ??= new Piscina({ filename: WORKER_FILE.href, minThreads: 0, maxThreads: 1, idleTimeout: IDLE_MS });
  const task: ImportStepTask = { path, entries, opts };
  return pool.run(task) as Promise<string[]>;
}
