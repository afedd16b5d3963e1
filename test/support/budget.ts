/**
 * Wait budgets that follow the machine: a helper that must give up at some point (a wait whose condition may
 * never come, polled) gives up after its budget on a quiet machine, stretched by the load per core when it is above
 * one. On a shared 2-core machine at load 12 a 15 s budget is 90 s: the suite is slower there, not red. A wait for
 * what must come has no budget at all (until).
 */
import { availableParallelism, loadavg } from 'node:os';

/** The load per core now (1-minute load average; 5-minute when higher), at least 1. */
export function loadFactor(): number {
  const [one = 0, five = 0] = loadavg();
  return Math.max(1, Math.max(one, five) / availableParallelism());
}

/** `ms` stretched by the load now (see the header). */
export function scaledBudget(ms: number): number {
  return ms * loadFactor();
}

/** Polls `check` every `everyMs` until it holds; fails naming `what` once `ms` (scaled, re-read each time) is spent. */
export async function pollUntil<T>(check: () => T | Promise<T>, what: string, ms: number, everyMs = 50): Promise<T> {
  const start = Date.now();
  for (;;) {
    const v = await check();
    if (v) return v;
    const spent = Date.now() - start;
    if (spent > scaledBudget(ms))
      throw new Error(`timed out after ${spent} ms (${ms} ms scaled by the load) waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * Resolves once `check` holds, polled every `everyMs`: no budget at all, for a condition that must come (an answer
 * the app owes, a clean-up it runs). On a busy machine it comes later, not never; one that never comes meets the
 * per-file limit of `npm test`, which stretches with the load.
 */
export async function until(check: () => unknown, everyMs = 20): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, everyMs));
}
