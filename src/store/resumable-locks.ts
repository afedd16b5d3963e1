/**
 * The lock on a resumable upload's bytes when REDIS_URL is set: a Redis key per upload (RedisLease: SET NX PX with
 * a random holder, renewed while the PATCH streams, deleted by its holder when it ends), shared by every gateway on
 * that Redis. The database lease does the same job (leaseLocks: a conditional UPDATE of `lease_until`), correct
 * across processes too; Redis's is the cheaper one — a PATCH then writes the row once (its new offset) instead of
 * three times (lease, offset, release), and on SQLite every write waits for the one writer. When Redis does not
 * answer, the database lease is taken instead, so uploads go on through an outage. (A PATCH that took the Redis lock
 * just before Redis went down and one that then takes the database lease could both write; the offset is recorded
 * only where it is still the one each began at, so one of them is acknowledged.)
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { ResumableLock, ResumableLocks } from '../domain/uploads/resumable.ts';
import { RedisLease } from './redis-lease.ts';

export function redisResumableLocks(redis: Redis, prefix: string, fallback: ResumableLocks): ResumableLocks {
  return {
    async acquire(id, ttlMs): Promise<ResumableLock | null> {
      const lease = new RedisLease(redis, `${prefix}resumable-lock:${id}`, randomUUID(), ttlMs);
      let held: boolean;
      try {
        held = await lease.tryAcquire();
      } catch {
        return fallback.acquire(id, ttlMs);
      }
      if (!held) return null;
      return {
        renew: async () => {
          await lease.tryAcquire();
        },
        // Left to expire when Redis does not answer.
        release: () => lease.release().catch(() => {}),
      };
    },
  };
}
