/**
 * The media worker pool: the domain's ImageProcessor port over Piscina. Image bytes are moved to the
 * worker (transferList), never copied; a full queue or a pool that is shutting down answers 503 busy;
 * a request whose client went away cancels its task between pipeline stages.
 */
import { setFlagsFromString } from 'node:v8';
import { Piscina } from 'piscina';
import { setupSharpProcess } from './sharp-setup.ts';
import { AppError, errors } from '../domain/errors.ts';
import { MessageChannel } from 'node:worker_threads';
import type { ImageProcessor, ProcessHooks } from '../domain/uploads/ports.ts';
import type { ImageTask, ProcessedImage } from '../domain/uploads/processed-image.ts';
import type { C2paSettings } from './pipeline/c2pa-reader.ts';
import type { DetectorSettings, ProcessImageResult, StoppedAfterHash } from './pipeline/types.ts';

export interface PoolOptions {
  workers: number;
  /** Tasks that may wait for a thread; one more is refused with 503 busy. */
  maxQueue: number;
  modelDir: string;
  /** Load the person detector in every thread at start (HUMAN_POLICY ≠ off). */
  preloadDetector: boolean;
  /** The detector's input size, closer look and runtime; its defaults when absent. */
  detector?: DetectorSettings;
  /** C2PA_READER and C2PA_TRUST_ANCHORS' PEM text; absent: `auto`, no trust list. */
  c2pa?: C2paSettings;
  /** Called with the queue wait and run time (ms) and stage timings of each finished task. */
  onTaskDone?: (t: { waitMs: number; runMs: number; stages: ProcessedImage['timings']; outcome: string }) => void;
}

export interface PoolStats {
  threads: number;
  queueSize: number;
  maxQueue: number;
  /** Share (0..1) of the threads' time spent running tasks over the last 10 s (BusyMeter). */
  utilization: number;
  /** Thread-seconds spent running tasks since start (for a rate over any window). */
  busySeconds: number;
  completed: number;
}

/** The window `utilization` looks back over: a sampled gauge that says how busy the threads are now. */
export const UTILIZATION_WINDOW_MS = 10_000;

/**
 * How busy the threads are, measured as it happens: the thread-time spent on tasks is the integral over time
 * of the tasks in flight (at most one per thread; the rest wait in the queue), updated when a task is
 * submitted and when it settles. A task still running counts for the time it has run so far.
 *
 * Piscina's own `utilization` is not usable: in Piscina 5.3 it divides the run-time histogram's mean, which
 * its summary already gives in milliseconds, by 1000 once more (seconds) and then by a capacity in
 * milliseconds, so it reads 1000× too low; and it counts completed tasks only, averaged since the pool
 * started, so it hardly moves on a server that has run for days and misses the tasks running now.
 */
export class BusyMeter {
  readonly #threads: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  readonly #startedAt: number;
  #inFlight = 0;
  #busyMs = 0;
  #at: number;
  /** At each change: the time, the busy thread-time so far, and the threads busy from then on. */
  readonly #marks: Array<{ at: number; busyMs: number; busy: number }>;

  constructor(threads: number, windowMs = UTILIZATION_WINDOW_MS, now: () => number = () => performance.now()) {
    this.#threads = Math.max(1, threads);
    this.#windowMs = windowMs;
    this.#now = now;
    this.#at = this.#startedAt = now();
    this.#marks = [{ at: this.#at, busyMs: 0, busy: 0 }];
  }

  taskStarted(): void {
    this.#change(1);
  }

  taskSettled(): void {
    this.#change(-1);
  }

  /** Thread-seconds spent on tasks since the meter started. */
  busySeconds(): number {
    this.#advance(this.#now());
    return this.#busyMs / 1000;
  }

  /** Share (0..1) of the threads' time spent on tasks over the last window (since the start, when younger). */
  utilization(): number {
    const now = this.#now();
    this.#advance(now);
    const from = Math.max(this.#startedAt, now - this.#windowMs);
    if (now <= from) return 0;
    let mark = this.#marks[0]!;
    for (const m of this.#marks) {
      if (m.at > from) break;
      mark = m;
    }
    const busyAtFrom = mark.busyMs + mark.busy * (from - mark.at);
    return Math.min(1, Math.max(0, (this.#busyMs - busyAtFrom) / ((now - from) * this.#threads)));
  }

  #busy(): number {
    return Math.min(this.#inFlight, this.#threads);
  }

  #advance(now: number): void {
    this.#busyMs += this.#busy() * (now - this.#at);
    this.#at = now;
  }

  #change(delta: 1 | -1): void {
    const now = this.#now();
    this.#advance(now);
    this.#inFlight = Math.max(0, this.#inFlight + delta);
    this.#marks.push({ at: now, busyMs: this.#busyMs, busy: this.#busy() });
    // Kept: the marks inside the window, and the last one before it (where the window's start falls).
    while (this.#marks.length > 1 && this.#marks[1]!.at <= now - this.#windowMs) this.#marks.shift();
  }
}

/**
 * V8 flags for the workers of a pool that runs the person detector (TensorFlow.js on wasm: many short-lived
 * objects per model run). With V8's default initial old space, a detector worker ran a full mark-compact about
 * once per image (started by V8's incremental-marking task with the heap at 19 of 43 MB): ~20 ms of GC threads'
 * CPU per image, a quarter of what detection costs. An initial old space of 128 MB puts the limits above what a
 * worker keeps (~20 MB): two mark-compacts per worker in 96 images, and resident memory did not grow in the same
 * runs (bench/README.md, "The cost that was not in the detect stage"). The flag sizes heaps made after it is set,
 * so it reaches the workers and leaves the gateway's own heap as it is.
 */
export const WORKER_GC_FLAGS = '--initial-old-space-size=128';

const isStopped = (r: ProcessImageResult): r is StoppedAfterHash => !r.ok && 'stopped' in r;

// `.ts` when run from src/, `.js` when run from the compiled dist/.
const WORKER_FILE = new URL(
  `./media.worker${import.meta.url.slice(import.meta.url.lastIndexOf('.'))}`,
  import.meta.url,
);

export class MediaPool implements ImageProcessor {
  readonly #piscina: Piscina;
  readonly #opts: PoolOptions;
  readonly #busy: BusyMeter;
  #closing = false;
  /** What the last ping said; undefined before the first. */
  #backend: string | null | undefined = undefined;
  #model: string | null = null;

  /** Locks libvips down to the four accepted loaders for the whole process, then starts the threads. */
  static async start(opts: PoolOptions): Promise<MediaPool> {
    await setupSharpProcess();
    return new MediaPool(opts);
  }

  private constructor(opts: PoolOptions) {
    this.#opts = opts;
    this.#busy = new BusyMeter(opts.workers);
    // V8 flags are per process and must be set before the workers' isolates exist: see WORKER_GC_FLAGS.
    if (opts.preloadDetector) setFlagsFromString(WORKER_GC_FLAGS);
    this.#piscina = new Piscina({
      filename: WORKER_FILE.href,
      minThreads: opts.workers,
      maxThreads: opts.workers,
      maxQueue: opts.maxQueue,
      idleTimeout: 2 ** 31 - 1,
      workerData: {
        modelDir: opts.modelDir,
        preloadDetector: opts.preloadDetector,
        detector: opts.detector,
        c2pa: opts.c2pa,
      },
      // Native memory (libvips, wasm) is outside V8's heap; this only bounds the JS side of a runaway task.
      resourceLimits: { maxOldGenerationSizeMb: 512 },
    });
  }

  async process(task: ImageTask, signal?: AbortSignal, hooks: ProcessHooks = {}): Promise<ProcessedImage | null> {
    if (this.#closing) throw errors.busy('the server is shutting down; retry against another instance', 5);
    if (this.#piscina.queueSize >= this.#opts.maxQueue) {
      throw errors.busy(`media workers are saturated (${this.#opts.maxQueue} tasks queued); retry shortly`, 2);
    }
    // Cooperative cancellation: the worker checks this flag between stages; aborting a running Piscina
    // task would kill its thread (and its loaded detector).
    const cancel = new Int32Array(new SharedArrayBuffer(4));
    // The hook's question and answer travel on a port of their own; a hook that fails stops the task and
    // its error is what `process` throws.
    const { afterHash } = hooks;
    const channel = afterHash ? new MessageChannel() : null;
    let hookError: { error: unknown } | null = null;
    channel?.port1.on('message', (m: { phash: string; pdq?: { hash: string; quality: number } }) => {
      Promise.resolve()
        .then(() => afterHash!(m.phash, m.pdq))
        .then(
          (stop) => channel.port1.postMessage({ stop }),
          (error: unknown) => {
            hookError = { error };
            channel.port1.postMessage({ stop: true });
          },
        );
    });
    const onAbort = () => {
      Atomics.store(cancel, 0, 1);
      // A worker waiting for the hook's answer goes on at once (closed port), to the cancel check.
      channel?.port1.close();
    };
    if (signal?.aborted) onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const submitted = performance.timeOrigin + performance.now();
    let result: ProcessImageResult & { startedAt?: number };
    this.#busy.taskStarted();
    try {
      result = (await this.#piscina.run(
        { ...task, cancel, ...(channel ? { afterHash: channel.port2 } : {}) },
        { name: 'processImage', transferList: channel ? [task.bytes, channel.port2] : [task.bytes] },
      )) as typeof result;
    } catch (e) {
      if (/queue is at limit/i.test((e as Error).message)) {
        throw errors.busy(`media workers are saturated (${this.#opts.maxQueue} tasks queued); retry shortly`, 2);
      }
      if (this.#closing) throw errors.busy('the server is shutting down; retry against another instance', 5);
      // A crashed thread fails only its own task; Piscina replaces the thread. The error goes up as it is:
      // the client gets a plain 500, and the log gets what actually happened.
      throw e;
    } finally {
      this.#busy.taskSettled();
      signal?.removeEventListener('abort', onAbort);
      channel?.port1.close();
    }
    const finished = performance.timeOrigin + performance.now();
    const startedAt = result.startedAt ?? submitted;
    this.#opts.onTaskDone?.({
      waitMs: Math.max(0, startedAt - submitted),
      runMs: finished - startedAt,
      stages: result.ok || isStopped(result) ? result.timings : {},
      outcome: result.ok ? 'ok' : isStopped(result) ? 'stopped' : result.cancelled ? 'cancelled' : result.code,
    });
    if (result.ok) return result;
    if (isStopped(result)) {
      if (hookError) throw (hookError as { error: unknown }).error;
      return null;
    }
    // A cancelled task's 503 carries Retry-After like every other busy answer.
    throw result.code === 'busy' ? errors.busy(result.message) : new AppError(result.code, result.message);
  }

  stats(): PoolStats {
    return {
      threads: this.#piscina.threads.length,
      queueSize: this.#piscina.queueSize,
      maxQueue: this.#opts.maxQueue,
      utilization: this.#busy.utilization(),
      busySeconds: this.#busy.busySeconds(),
      completed: this.#piscina.completed,
    };
  }

  /** The live worker threads (for operators' introspection and fault-injection tests). */
  threads(): readonly import('node:worker_threads').Worker[] {
    return this.#piscina.threads;
  }

  /**
   * Answers when a worker thread can run a task (readiness). With tasks queued, the threads are evidently
   * running them: the ping would only wait behind (and take a queue slot from) uploads, so it is skipped.
   */
  async ping(): Promise<{ threads: number; detectorBackend: string | null; detectorModel: string | null }> {
    if (this.#closing) throw new Error('shutting down');
    const threads = this.#piscina.threads.length;
    if (this.#piscina.queueSize > 0 && threads > 0 && this.#backend !== undefined)
      return { threads, detectorBackend: this.#backend, detectorModel: this.#model };
    this.#busy.taskStarted();
    const pinged = this.#piscina.run({}, { name: 'ping' }).finally(() => this.#busy.taskSettled());
    const r = (await pinged) as { detectorBackend: string | null; detectorModel: string | null };
    this.#backend = r.detectorBackend;
    this.#model = r.detectorModel;
    return {
      threads: this.#piscina.threads.length,
      detectorBackend: r.detectorBackend,
      detectorModel: r.detectorModel,
    };
  }

  /** Stops accepting tasks; waits for running and queued ones to finish. */
  async close(): Promise<void> {
    this.#closing = true;
    await this.#piscina.close();
  }
}
