/**
 * What the background loops (webhook deliveries, moderation jobs, blocklist holds, vote rings, housekeeping) log
 * when a dependency they need is down: one line when it goes (naming it, and the loop that met it first), one line
 * when it is back (with how long it was out), and nothing in between, however many runs fail meanwhile. An
 * expected failure (refused, timed out, busy: the dependency's `isDown` says) is logged without a stack; any other
 * failure is still logged, with its stack, as each loop says. Recovery is seen by probing the dependency (its
 * /readyz check) every `probeMs` while it is down, not by the next run of some loop that may not run for minutes.
 *
 * Beside the layers (like logger.ts): the composition root builds one and hands each loop `onError(what)`.
 */

/** The part of a logger this needs (pino's signature). */
export interface OutageLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface Dependency {
  /** As the log names it: `database`, `redis`, `media store`. */
  name: string;
  /** Whether `err` says this dependency is unavailable (an expected condition, not a bug). */
  isDown(err: unknown): boolean;
  /** Resolves when it answers again (its readiness check). */
  check(): Promise<unknown>;
}

interface Outage {
  since: number;
  timer: NodeJS.Timeout | null;
}

export class OutageTracker {
  readonly #log: OutageLogger;
  readonly #dependencies: readonly Dependency[];
  readonly #probeMs: number;
  readonly #now: () => number;
  readonly #down = new Map<Dependency, Outage>();
  #closed = false;

  constructor(opts: { log: OutageLogger; dependencies: Dependency[]; probeMs?: number; now?: () => number }) {
    this.#log = opts.log;
    this.#dependencies = opts.dependencies;
    this.#probeMs = opts.probeMs ?? 1_000;
    this.#now = opts.now ?? Date.now;
  }

  /**
   * A loop's error handler: `what` (e.g. "webhook deliveries failed; retried") is the line for an unexpected
   * failure, logged with its stack; a dependency's outage is logged once, as the class says.
   */
  onError(what: string): (err: unknown, context?: object) => void {
    return (err, context) => {
      const dependency = this.#dependencies.find((d) => d.isDown(err));
      if (!dependency) {
        this.#log.warn({ err, ...context }, what);
        return;
      }
      if (this.#down.has(dependency) || this.#closed) return;
      this.#down.set(dependency, { since: this.#now(), timer: null });
      this.#log.warn(
        { dependency: dependency.name, failed: what, reason: reasonOf(err) },
        `${dependency.name} unavailable; background jobs wait for it`,
      );
      this.#probe(dependency);
    };
  }

  /** The dependencies down now (for tests and metrics). */
  down(): string[] {
    return [...this.#down.keys()].map((d) => d.name);
  }

  /** Stops probing (shutdown); nothing more is logged. */
  close(): void {
    this.#closed = true;
    for (const outage of this.#down.values()) if (outage.timer) clearTimeout(outage.timer);
    this.#down.clear();
  }

  /** Checks `dependency` every probeMs (one check at a time) until it answers; then logs that it is back. */
  #probe(dependency: Dependency): void {
    const outage = this.#down.get(dependency);
    if (!outage) return;
    outage.timer = setTimeout(() => {
      outage.timer = null;
      dependency.check().then(
        () => {
          if (this.#down.get(dependency) !== outage) return;
          this.#down.delete(dependency);
          const seconds = (this.#now() - outage.since) / 1000;
          this.#log.info(
            { dependency: dependency.name, outageSeconds: Number(seconds.toFixed(1)) },
            `${dependency.name} is back after ${seconds.toFixed(1)} s`,
          );
        },
        () => this.#probe(dependency),
      );
    }, this.#probeMs).unref();
  }
}

/** The error's own words, without its stack (the first of its causes that has a code or a message). */
function reasonOf(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown } | null;
  const message = typeof e?.message === 'string' ? e.message.split('\n')[0]! : String(err);
  return typeof e?.code === 'string' && !message.includes(e.code) ? `${message} (${e.code})` : message;
}
