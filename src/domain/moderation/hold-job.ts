/**
 * A background job over a durable to-do list (the blocklist holds, the moderation jobs' runner): runs at once when
 * kicked (one run at a time per process; a kick during a run makes it run again after), and on a timer, so that
 * work queued before a crash or by another process is taken up. The to-do list is the store's, so a restart loses
 * nothing: it resumes where it stopped. A run gets a signal that `stop()` aborts, to end between two steps.
 * As a service, `start()` sets its timer (`schedule.everyMs`; 0 or unset: none) and kicks it at once when
 * `schedule.atStart` (work queued before a restart, by another process, or left by one that died).
 */
import type { Service } from '../service.ts';

export class RepeatingJob implements Service {
  readonly #run: (signal: AbortSignal) => Promise<unknown>;
  #stopping = new AbortController();
  readonly #onError: (err: unknown) => void;
  #running: Promise<void> | null = null;
  #again = false;
  #timer: NodeJS.Timeout | null = null;
  readonly #schedule: { everyMs?: number; atStart?: boolean };

  constructor(
    run: (signal: AbortSignal) => Promise<unknown>,
    onError: (err: unknown) => void,
    schedule: { everyMs?: number; atStart?: boolean } = {},
  ) {
    this.#run = run;
    this.#onError = onError;
    this.#schedule = schedule;
  }

  start(): void {
    const { everyMs = 0, atStart = false } = this.#schedule;
    if (everyMs > 0) this.every(everyMs);
    if (atStart) this.kick();
  }

  kick(): void {
    if (this.#running) {
      this.#again = true;
      return;
    }
    const { signal } = this.#stopping;
    this.#running = (async () => {
      do {
        this.#again = false;
        try {
          await this.#run(signal);
        } catch (err) {
          this.#onError(err);
        }
      } while (this.#again && !signal.aborted);
      this.#running = null;
    })();
  }

  /** Kicks it every `ms` (unref'd: it keeps no process alive). */
  every(ms: number): this {
    this.#timer = setInterval(() => this.kick(), ms).unref();
    return this;
  }

  /** Resolves once no run is in progress or asked for. */
  async idle(): Promise<void> {
    await this.#running;
  }

  /**
   * Stops the timer, aborts a run in progress (its signal: it ends at its next step) and waits for it; a rerun asked
   * for is dropped. A later kick runs it again, with a fresh signal.
   */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#again = false;
    this.#stopping.abort();
    await this.#running;
    this.#stopping = new AbortController();
  }
}
