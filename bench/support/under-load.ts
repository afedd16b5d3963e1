/** Latency of one request type while the server is kept busy by others: the two halves of such a benchmark. */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface SequentialOptions {
  /** Requests timed (fewer when `capMs` is reached first). */
  count: number;
  /** Pause after each, so the requests are spread over the load rather than squeezed into its first moment. */
  gapMs: number;
  capMs: number;
}

/** Times `send` one call after another; every call must answer 200. Returns the latencies, ms. */
export async function timeSequentially(
  what: string,
  send: () => Promise<{ status: number }>,
  opts: SequentialOptions,
): Promise<number[]> {
  const ms: number[] = [];
  const until = performance.now() + opts.capMs;
  while (ms.length < opts.count && performance.now() < until) {
    const t = performance.now();
    const res = await send();
    if (res.status !== 200) throw new Error(`${what}: HTTP ${res.status}`);
    ms.push(performance.now() - t);
    await sleep(opts.gapMs);
  }
  return ms;
}

/**
 * Runs `fn` while `lanes` loops call `step(lane, i)` back to back (i counts each lane's calls); once every lane
 * has had `settleMs` to get its first request in flight. The lanes stop, and are awaited, when `fn` ends;
 * a step that throws fails the whole.
 */
export async function whileLoaded<T>(
  lanes: number,
  step: (lane: number, i: number) => Promise<void>,
  fn: () => Promise<T>,
  settleMs = 300,
): Promise<T> {
  let stop = false;
  const lane = async (n: number) => {
    for (let i = 0; !stop; i++) await step(n, i);
  };
  const running = Promise.all(Array.from({ length: lanes }, (_, n) => lane(n)));
  try {
    await sleep(settleMs);
    return await fn();
  } finally {
    stop = true;
    await running;
  }
}
