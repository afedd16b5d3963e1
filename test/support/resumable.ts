/**
 * What the resumable-upload tests read beside HTTP: whether a request holds an upload's lock now — its Redis key
 * when the app has Redis (src/store/resumable-locks.ts), else the database lease on its row.
 */
import type { TestApp } from './app.ts';

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
