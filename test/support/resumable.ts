/**
 * What the resumable-upload tests share: whether a request holds an upload's lock now (its Redis key when the app
 * has Redis, src/store/resumable-locks.ts, else the database lease on its row), a PATCH held open, and a gateway
 * process killed mid-PATCH.
 */
import { request as httpRequest, type ClientRequest } from 'node:http';
import type { TestApp } from './app.ts';
import { pollUntil } from './budget.ts';
import { spawnServer, type ServerProcess } from './process.ts';

export const resumableLockKey = (app: TestApp, id: string) => `${app.config.redisPrefix}resumable-lock:${id}`;

export async function resumableLocked(app: TestApp, id: string): Promise<boolean> {
  const { redis, db } = app.composed;
  if (redis) return (await redis.exists(resumableLockKey(app, id))) === 1;
  const row = await db
    .db()
    .selectFrom('resumable_uploads')
    .select('lease_until')
    .where('id', '=', id)
    .executeTakeFirst();
  return row?.lease_until != null;
}

/**
 * A PATCH of `length` bytes at `offset` whose body the test writes itself (`req.write`, `req.end`): to hold a
 * request open mid-chunk, or cut it.
 */
export function openPatch(baseUrl: string, url: string, token: string, offset: number, length: number): ClientRequest {
  return httpRequest(baseUrl + url, {
    method: 'PATCH',
    headers: {
      'tus-resumable': '1.0.0',
      authorization: `Bearer ${token}`,
      'content-type': 'application/offset+octet-stream',
      'content-length': String(length),
      'upload-offset': String(offset),
    },
  });
}

/**
 * A gateway process beside `app` on its database and Redis (and prefix), with `env` (DATA_DIR, the media store):
 * another machine, as far as the upload is concerned.
 */
export function spawnGateway(app: TestApp, env: Record<string, string>): Promise<ServerProcess> {
  return spawnServer({
    ...(app.config.databaseUrl ? { DATABASE_URL: app.config.databaseUrl } : {}),
    // The same Redis and prefix: the lock on an upload's bytes is shared there.
    ...(app.config.redisUrl ? { REDIS_URL: app.config.redisUrl, REDIS_PREFIX: app.config.redisPrefix } : {}),
    WORKERS: '1',
    HUMAN_POLICY: 'off',
    RATE_LIMIT_GENERAL: '100000/15m',
    RATE_LIMIT_UPLOAD: '1000/1h',
    ...env,
  });
}

/**
 * Kills `child` with SIGKILL while a PATCH through it holds the upload's lock with half of `chunk` received (the
 * rest never sent): the crash mid-transfer. `app` reads the lock (same database and Redis).
 */
export async function killMidPatch(
  child: ServerProcess,
  app: TestApp,
  p: { url: string; token: string; offset: number; chunk: Uint8Array },
): Promise<void> {
  const req = openPatch(child.url, p.url, p.token, p.offset, p.chunk.length);
  req.on('error', () => {});
  req.write(p.chunk.subarray(0, p.chunk.length >> 1));
  const id = p.url.split('/').pop()!;
  await pollUntil(() => resumableLocked(app, id), 'the child’s PATCH holds the lock', 30_000);
  child.kill('SIGKILL');
  await child.exited;
  req.destroy();
}
