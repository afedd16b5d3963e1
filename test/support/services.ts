/** Whether the PostgreSQL and Redis the tests and benchmarks use answer; each returns why not, or null. */
import pg from 'pg';
import { Redis } from 'ioredis';

export async function postgresUnreachable(url: string): Promise<string | null> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
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
    connectTimeout: 2000,
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
