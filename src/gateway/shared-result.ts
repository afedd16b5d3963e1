/**
 * Runs `fn` at most once per `freshMs`, whatever the number of callers: concurrent callers share the call
 * in flight, and callers within `freshMs` after it settled share its outcome (a failure included, so a
 * dependency that is down is not asked again by every caller). Probes use it: a flood of /readyz or
 * /metrics costs one check or one rendering per second, not one per request.
 */
export function sharedResult<T>(
  freshMs: number,
  fn: () => Promise<T>,
  now: () => number = () => performance.now(),
): () => Promise<T> {
  let current: Promise<T> | null = null;
  let settledAt: number | null = null;
  return () => {
    if (current && (settledAt === null || now() - settledAt < freshMs)) return current;
    settledAt = null;
    const call = (async () => fn())();
    current = call;
    const settled = () => {
      if (current === call) settledAt = now();
    };
    call.then(settled, settled);
    return call;
  };
}
