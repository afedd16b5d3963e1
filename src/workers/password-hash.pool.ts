/**
 * The domain's ScryptKdf port on a small thread pool of its own. Node's async scrypt runs on libuv's threadpool
 * (4 threads by default), the same threads that read files and resolve host names: a burst of logins there stalled
 * image GETs for seconds. Here at most `threads` hashes run at once, each on a dedicated thread with scryptSync;
 * `maxQueue` more may wait, and one more is refused with 503 busy and Retry-After instead of queueing without bound.
 */
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { errors } from '../domain/errors.ts';
import type { ScryptJob, ScryptKdf } from '../domain/auth/passwords.ts';
import type { ScryptTask } from './password-hash.worker.ts';

export interface PasswordHashPoolOptions {
  /** Hashes computed at once. Default: 1 on one or two cores (the event loop keeps a core), else 2. */
  threads?: number;
  /** Hashes that may wait for a thread. Default 32 per thread (about 10 s of waiting at the production cost). */
  maxQueue?: number;
}

// `.ts` when run from src/, `.js` when run from the compiled dist/.
const WORKER_FILE = new URL(
  `./password-hash.worker${import.meta.url.slice(import.meta.url.lastIndexOf('.'))}`,
  import.meta.url,
);

export const defaultHashThreads = () => Math.min(2, Math.max(1, availableParallelism() - 1));

export class PasswordHashPool implements ScryptKdf {
  readonly #piscina: Piscina;
  readonly #maxQueue: number;

  constructor(opts: PasswordHashPoolOptions = {}) {
    const threads = opts.threads ?? defaultHashThreads();
    this.#maxQueue = opts.maxQueue ?? 32 * threads;
    this.#piscina = new Piscina({
      filename: WORKER_FILE.href,
      minThreads: threads,
      maxThreads: threads,
      maxQueue: this.#maxQueue,
      idleTimeout: 2 ** 31 - 1,
    });
  }

  async derive(password: string, salt: Buffer, keylen: number, job: ScryptJob): Promise<Buffer> {
    const task: ScryptTask = { password, salt, keylen, N: job.N, r: job.r, p: job.p, maxmem: job.maxmem };
    let key: Uint8Array;
    try {
      key = (await this.#piscina.run(task)) as Uint8Array;
    } catch (e) {
      if (/queue is at limit/i.test((e as Error).message)) {
        throw errors.busy(`password hashing is saturated (${this.#maxQueue} logins waiting); retry shortly`, 2);
      }
      throw e;
    }
    return Buffer.from(key.buffer, key.byteOffset, key.byteLength);
  }

  stats(): { threads: number; queueSize: number; completed: number } {
    return {
      threads: this.#piscina.threads.length,
      queueSize: this.#piscina.queueSize,
      completed: this.#piscina.completed,
    };
  }

  /** Finishes running and queued hashes, then stops the threads. */
  async close(): Promise<void> {
    await this.#piscina.close();
  }
}
