/**
 * Whether the PostgreSQL and Redis the tests and benchmarks use answer; each returns why not, or null. A refused
 * connection answers at once; the connect budgets only stretch with the load (a busy machine accepts slowly).
 */
import pg from 'pg';
import { Redis } from 'ioredis';
import { scaledBudget } from './budget.ts';

export async function postgresUnreachable(url: string): Promise<string | null> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: scaledBudget(3000) });
  try {
    await c.connect();
    await c.query('select 1');
    return null;
  } catch (e) {
    return `PostgreSQL at ${url} did not answer (${(e as Error).message})`;
  } finally {
    await c.end().catch(() => {});
  }
}

export async function redisUnreachable(url: string): Promise<string | null> {
  const r = new Redis(url, {
    lazyConnect: true,
    connectTimeout: scaledBudget(2000),
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  r.on('error', () => {});
  try {
    await r.connect();
    await r.ping();
    return null;
  } catch (e) {
    return `Redis at ${url} did not answer (${(e as Error).message})`;
  } finally {
    r.disconnect();
  }
}
