/**
 * Medians and spreads. Every figure a benchmark prints is a median over repeated runs with its spread, and
 * every comparison is a ratio against a yardstick measured in the same rounds, so that a shared, noisy
 * machine slows both sides alike.
 */

export interface Summary {
  median: number;
  min: number;
  max: number;
  /** Interquartile range. */
  p25: number;
  p75: number;
  n: number;
}

/** Linear-interpolated quantile, q in [0, 1]. */
export function quantile(values: readonly number[], q: number): number {
  if (!values.length) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (at - lo);
}

export const median = (values: readonly number[]): number => quantile(values, 0.5);

export function summarize(values: readonly number[]): Summary {
  return {
    median: median(values),
    min: values.length ? Math.min(...values) : Number.NaN,
    max: values.length ? Math.max(...values) : Number.NaN,
    p25: quantile(values, 0.25),
    p75: quantile(values, 0.75),
    n: values.length,
  };
}

/** Element-wise a[i] / b[i]: one ratio per round, each from measurements taken back to back. */
export function ratios(a: readonly number[], b: readonly number[]): number[] {
  if (a.length !== b.length)
    throw new Error(`Expected as many numerators as denominators but received ${a.length} and ${b.length}`);
  return a.map((x, i) => x / b[i]!);
}

/**
 * Runs every measurement once per round, rotating the order each round, so a slow spell of a shared machine
 * lands on all of them alike. Returns the samples of each, in round order.
 */
export async function interleave<K extends string>(
  rounds: number,
  measure: Record<K, () => Promise<number>>,
): Promise<Record<K, number[]>> {
  const keys = Object.keys(measure) as K[];
  const out = Object.fromEntries(keys.map((k) => [k, [] as number[]])) as Record<K, number[]>;
  for (let r = 0; r < rounds; r++) {
    const order = keys.map((_, i) => keys[(i + r) % keys.length]!);
    for (const k of order) out[k].push(await measure[k]());
  }
  return out;
}

/** CPU time (user + system, all threads of this process) and wall time of `fn`, in ms. */
export async function cpuAndWall<T>(fn: () => Promise<T> | T): Promise<{ value: T; cpuMs: number; wallMs: number }> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  const value = await fn();
  const wallMs = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return { value, cpuMs: (used.user + used.system) / 1000, wallMs };
}

/** Runs `fn` over `items` with at most `limit` in flight; resolves to the results in item order. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!, i);
    }
  });
  await Promise.all(lanes);
  return results;
}
