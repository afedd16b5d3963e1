/**
 * `PROCESSES=N npm start`: a primary that migrates the database once, forks N gateway processes sharing
 * the port (node:cluster), replaces one that dies, aggregates their metrics for `/metrics`, and on
 * SIGTERM/SIGINT lets every process shut down gracefully before exiting. Without Redis it also serves what the
 * processes share over IPC: rate-limit counts and feed cache generations (store/cache/generations.ts).
 * MAX_CONNECTIONS_PER_IP is not shared: each process counts the connections the primary handed it (so one
 * address may hold up to PROCESSES × the cap on this machine; see src/gateway/connection-cap.ts).
 */
import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { Config } from './config.ts';
import { createLogger, flushLogs } from './logger.ts';
import { openConfiguredDatabase } from './open-database.ts';
import { servePrimaryGenerations } from './store/cache/generations.ts';
import { RateLimiterClusterMaster } from 'rate-limiter-flexible';

const METRICS_REQ = 'pixvote:metrics-request';
const METRICS_RES = 'pixvote:metrics-response';

export async function runPrimary(config: Config): Promise<void> {
  const log = createLogger(config.logLevel).child({ role: 'primary' });
  // Migrate once, before any gateway opens the database (no readers of either kind: the primary reads nothing).
  const db = await openConfiguredDatabase({ ...config, sqliteReaders: 0, pgReaders: 0 }, log);
  await db.close();
  if (!config.redisUrl) {
    // Without Redis the primary is what the processes share: rate-limit counts and feed cache generations.
    new RateLimiterClusterMaster();
    servePrimaryGenerations(cluster, log);
    log.info(
      'PROCESSES > 1 without REDIS_URL: rate limits and feed cache invalidations go through this primary; ' +
        'set REDIS_URL to share them across machines',
    );
  }

  const aggregator = new AggregatorRegistry();
  let stopping = false;
  cluster.on('message', (worker: Worker, msg: { type?: string; id?: number }) => {
    if (msg?.type !== METRICS_REQ) return;
    aggregator.clusterMetrics().then(
      (text) => worker.send({ type: METRICS_RES, id: msg.id, text, contentType: aggregator.contentType }),
      (err: Error) => worker.send({ type: METRICS_RES, id: msg.id, error: err.message }),
    );
  });
  // Each of the PROCESSES slots is kept filled: a process that dies is replaced after a backoff that grows
  // while its slot keeps dying, and a slot that dies CRASH_LOOP.deaths times within CRASH_LOOP.windowMs is
  // a crash loop: the primary stops the others and exits 1, so a supervisor sees the failure.
  const restarts = new RestartPolicy({ ...CRASH_LOOP, firstDelayMs: config.processRestartDelayMs });
  const slotOf = new Map<Worker, number>();
  const fork = (slot: number) => slotOf.set(cluster.fork({ PIXVOTE_PROCESS_SLOT: String(slot) }), slot);
  cluster.on('exit', (worker, code, signal) => {
    const slot = slotOf.get(worker) ?? 0;
    slotOf.delete(worker);
    if (stopping) return;
    const decision = restarts.died(slot, Date.now());
    if (decision.crashLoop) {
      log.fatal(
        { slot, workerPid: worker.process.pid, code, signal, deaths: decision.deaths, windowMs: CRASH_LOOP.windowMs },
        'gateway processes keep dying: crash loop, giving up',
      );
      stop('crash-loop', 1);
      return;
    }
    log.error(
      { slot, workerPid: worker.process.pid, code, signal, restartInMs: decision.delayMs },
      'gateway process died; starting another',
    );
    // A ref'd timer: with every process dead it is what keeps the primary alive until the replacement.
    setTimeout(() => stopping || fork(slot), decision.delayMs);
  });
  for (let i = 0; i < config.processes; i++) fork(i);
  log.info({ processes: config.processes, workersEach: config.workers }, 'cluster started');

  function stop(reason: string, exitCode = 0) {
    if (stopping) return;
    stopping = true;
    log.info({ reason }, 'stopping every gateway process gracefully');
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
    const check = setInterval(() => {
      if (Object.keys(cluster.workers ?? {}).length === 0) {
        clearInterval(check);
        void flushLogs(log).then(() => process.exit(exitCode));
      }
    }, 100);
    setTimeout(() => process.exit(1), config.shutdownGraceMs + 10_000).unref();
  }
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

/**
 * 5 deaths of one slot within 60 s is a crash loop; replacements wait 1 s, 2 s, 4 s … up to 15 s (the first wait:
 * PROCESS_RESTART_DELAY_MS, which the tests shorten).
 */
export const CRASH_LOOP = { deaths: 5, windowMs: 60_000, firstDelayMs: 1000, maxDelayMs: 15_000 };

/** When to replace a dead gateway process, and when to give up: per slot, over a sliding window. */
export class RestartPolicy {
  private readonly deaths = new Map<number, number[]>();
  private readonly opts: typeof CRASH_LOOP;
  constructor(opts: typeof CRASH_LOOP) {
    this.opts = opts;
  }

  died(slot: number, now: number): { crashLoop: boolean; deaths: number; delayMs: number } {
    const recent = (this.deaths.get(slot) ?? []).filter((t) => now - t < this.opts.windowMs);
    recent.push(now);
    this.deaths.set(slot, recent);
    const delayMs = Math.min(this.opts.maxDelayMs, this.opts.firstDelayMs * 2 ** (recent.length - 1));
    return { crashLoop: recent.length >= this.opts.deaths, deaths: recent.length, delayMs };
  }
}

/** In a cluster worker: lets the primary collect this registry, and asks it for the whole cluster's metrics. */
export function clusterMetrics(registry: Registry): () => Promise<{ text: string; contentType: string }> {
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one registers prom-client's listener that answers the primary's collection requests.
  new AggregatorRegistry();
  let next = 0;
  const pending = new Map<number, (r: { text?: string; contentType?: string; error?: string }) => void>();
  process.on('message', (msg: { type?: string; id?: number }) => {
    if (msg?.type === METRICS_RES && msg.id !== undefined) pending.get(msg.id)?.(msg as never);
  });
  return () =>
    new Promise((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error('the cluster primary did not answer for metrics'));
      }, 6000);
      pending.set(id, (r) => {
        clearTimeout(timer);
        pending.delete(id);
        if (r.error || r.text === undefined) reject(new Error(r.error ?? 'no metrics'));
        else resolve({ text: r.text, contentType: r.contentType ?? registry.contentType });
      });
      // A closed channel (the primary is gone) fails this scrape instead of crashing the process.
      process.send?.(
        { type: METRICS_REQ, id },
        undefined,
        undefined,
        (err: Error | null) => err && pending.get(id)?.({ error: err.message }),
      );
    });
}
