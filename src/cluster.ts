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

const METRICS_REQ = 'pixvote:metrics-request';
const METRICS_RES = 'pixvote:metrics-response';

export async function runPrimary(config: Config): Promise<void> {
  const log = createLogger(config.logLevel).child({ role: 'primary' });
  // Migrate once, before any gateway opens the database.
  const db = await openDatabase({ databaseUrl: config.databaseUrl, sqlitePath: join(config.dataDir, 'app.db') });
  await db.close();
  if (!config.redisUrl) {
    log.warn('PROCESSES > 1 without REDIS_URL: each process keeps its own rate limits and feed cache; set REDIS_URL to share them');
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
    setTimeout(fork, 1000).unref();
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
      process.send?.({ type: METRICS_REQ, id });
    });
}
