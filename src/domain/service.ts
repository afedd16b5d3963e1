/**
 * What runs on its own once the object graph is wired — start-up steps, sweeps, timers, job runners. The composition
 * root keeps one list of them: it starts each in turn (awaiting it) and, at shutdown, stops them in reverse order.
 */
export interface Service {
  start(): Promise<void> | void;
  stop(): Promise<void> | void;
}

/**
 * A named lease one process holds at a time (store/redis-lease.ts): of many processes sharing it only the holder runs
 * a job that each would otherwise repeat.
 */
export interface Lease {
  /**
   * Whether this process should run the job now: it holds the lease (taken or renewed), or the lease cannot be asked
   * (its store is down: then every process runs it, a repeated run being only wasted work).
   */
  held(): Promise<boolean>;
}

/** A step run once at start (start-up fails when it rejects), with nothing to stop. */
export function atStart(run: () => Promise<unknown>): Service {
  return { start: async () => void (await run()), stop() {} };
}

/**
 * Runs `task` every `ms` once started (the timer is unref'd: it keeps no process alive); a failed run is passed to
 * `onError` and the next one comes at the next interval. `stop()` clears the timer, without waiting for a run.
 */
export function periodic(ms: number, task: () => Promise<unknown>, onError: (err: unknown) => void): Service {
  let timer: NodeJS.Timeout | null = null;
  return {
    start() {
      timer = setInterval(() => void task().catch(onError), ms).unref();
    },
    stop() {
      if (timer) clearInterval(timer);
    },
  };
}
