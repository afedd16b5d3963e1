/**
 * `PROCESSES=N npm start`: a primary that migrates the database once, forks N gateway processes sharing
 * the port (node:cluster), replaces one that dies, aggregates their metrics for `/metrics`, and on
 * SIGTERM/SIGINT lets every process shut down gracefully before exiting.
 */
import cluster, { type Worker } from 'node:cluster';
import { join } from 'node:path';
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { Config } from './config.ts';
import { createLogger, flushLogs } from './logger.ts';
import { openDatabase } from './store/database.ts';
import { FEED_BUMP_TIMEOUT_MS, FEED_IPC } from './store/cache/feed-cache.ts';
import { RateLimiterClusterMaster } from 'rate-limiter-flexible';

const METRICS_REQ = 'pixvote:metrics-request';
const METRICS_RES = 'pixvote:metrics-response';

export async function runPrimary(config: Config): Promise<void> {
  const log = createLogger(config.logLevel).child({ role: 'primary' });
  // Migrate once, before any gateway opens the database.
  const db = await openDatabase({ databaseUrl: config.databaseUrl, sqlitePath: join(config.dataDir, 'app.db') });
  await db.close();
  if (!config.redisUrl) {
    // Without Redis the primary is what the processes share: rate-limit counts and feed cache generations.
    new RateLimiterClusterMaster();
    shareFeedGenerations(log);
    log.info('PROCESSES > 1 without REDIS_URL: rate limits and feed cache invalidations go through this primary; set REDIS_URL to share them across machines');
  }

  const aggregator = new AggregatorRegistry();
  let stopping = false;
  const fork = () => cluster.fork();
  cluster.on('message', (worker: Worker, msg: { type?: string; id?: number }) => {
    if (msg?.type !== METRICS_REQ) return;
    aggregator.clusterMetrics().then(
      (text) => worker.send({ type: METRICS_RES, id: msg.id, text, contentType: aggregator.contentType }),
      (err: Error) => worker.send({ type: METRICS_RES, id: msg.id, error: err.message }),
    );
  });
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    log.error({ pid: worker.process.pid, code, signal }, 'gateway process died; starting another');
    // (Not once a shutdown has begun: the new process would never be told to stop.)
    setTimeout(() => stopping || fork(), 1000).unref();
  });
  for (let i = 0; i < config.processes; i++) fork();
  log.info({ processes: config.processes, workersEach: config.workers }, 'cluster started');

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping every gateway process gracefully');
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
    const check = setInterval(() => {
      if (Object.keys(cluster.workers ?? {}).length === 0) {
        clearInterval(check);
        void flushLogs(log).then(() => process.exit(0));
      }
    }, 100);
    setTimeout(() => process.exit(1), config.shutdownGraceMs + 10_000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

/**
 * The feed cache generation of every gateway process (without Redis): a write's process asks for a new
 * one; every process that joined gets it, applies it and confirms; the write's process hears back once all
 * have (a process that exits is not waited for; after FEED_BUMP_TIMEOUT_MS it hears back anyway).
 */
function shareFeedGenerations(log: ReturnType<typeof createLogger>): void {
  let generation = 0;
  let nextRound = 0;
  const joined = new Set<Worker>();
  const rounds = new Map<number, { waitingFor: Set<Worker>; finish: () => void }>();
  const send = (w: Worker, msg: object) => {
    if (!w.isConnected()) return;
    try {
      w.send(msg);
    } catch {
      // The process is going away: its 'exit' settles what waits for it.
    }
  };
  const settle = (round: { waitingFor: Set<Worker>; finish: () => void }, w: Worker) => {
    round.waitingFor.delete(w);
    if (round.waitingFor.size === 0) round.finish();
  };
  cluster.on('message', (worker: Worker, msg: { type?: string; id?: number }) => {
    if (msg?.type === FEED_IPC.join) {
      joined.add(worker);
      send(worker, { type: FEED_IPC.generation, generation, id: -1 });
    } else if (msg?.type === FEED_IPC.bump) {
      generation++;
      const round = nextRound++;
      const waitingFor = new Set([...joined].filter((w) => w.isConnected()));
      const timer = setTimeout(() => {
        log.warn({ pids: [...waitingFor].map((w) => w.process.pid) }, 'feed cache invalidation: a process did not confirm in time');
        finish();
      }, FEED_BUMP_TIMEOUT_MS);
      const finish = () => {
        if (!rounds.delete(round)) return;
        clearTimeout(timer);
        send(worker, { type: FEED_IPC.bumped, id: msg.id });
      };
      rounds.set(round, { waitingFor, finish });
      for (const w of waitingFor) send(w, { type: FEED_IPC.generation, generation, id: round });
      if (waitingFor.size === 0) finish();
    } else if (msg?.type === FEED_IPC.applied && msg.id !== undefined) {
      const round = rounds.get(msg.id);
      if (round) settle(round, worker);
    }
  });
  cluster.on('exit', (worker) => {
    joined.delete(worker);
    for (const round of [...rounds.values()]) settle(round, worker);
  });
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
      process.send?.({ type: METRICS_REQ, id }, undefined, undefined, (err: Error | null) => err && pending.get(id)?.({ error: err.message }));
    });
}
