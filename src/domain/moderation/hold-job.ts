/**
 * The background job that holds stored uploads matching new blocklist entries: runs at once when kicked (one run
 * at a time per process; a kick during a run makes it run again after), and on a timer, so that entries queued
 * before a crash or by another process are taken up. Its to-do list is durable (the store's), so a restart loses
 * nothing: it resumes where it stopped.
 */
export class RepeatingJob {
  readonly #run: () => Promise<unknown>;
  readonly #onError: (err: unknown) => void;
  #running: Promise<void> | null = null;
  #again = false;
  #timer: NodeJS.Timeout | null = null;

  constructor(run: () => Promise<unknown>, onError: (err: unknown) => void) {
    this.#run = run;
    this.#onError = onError;
  }

  kick(): void {
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        try {
          await this.#run();
        } catch (err) {
          this.#onError(err);
        }
      } while (this.#again);
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

  /** Stops the timer and waits for a run in progress (a rerun asked for is dropped). */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#again = false;
    await this.#running;
  }
}
