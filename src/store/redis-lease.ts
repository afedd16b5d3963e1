/**
 * A named lease in Redis, held by one process at a time: `tryAcquire` takes it when it is free or expired, and
 * renews it when the caller already holds it. A holder that dies stops renewing, and the lease passes to the
 * next caller once `ttlMs` has run out. Used so that of many gateways sharing one Redis only one runs a periodic
 * job that would otherwise be repeated by each (the object store's sweep lists the whole bucket), and as the lock on
 * one resumable upload's bytes (resumable-locks.ts), let go with `release` when its request ends.
 */
import type { Redis } from 'ioredis';
import type { Lease } from '../domain/service.ts';

/** Renew when held by ARGV[1], else take it when free: 1 when the caller holds it afterwards. */
const ACQUIRE = `
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0`;

/** Deletes the key only while ARGV[1] holds it (a lease that ran out and passed on is not taken away). */
const RELEASE = `
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0`;

export class RedisLease implements Lease {
  readonly #redis: Redis;
  readonly key: string;
  readonly holder: string;
  readonly ttlMs: number;

  constructor(redis: Redis, key: string, holder: string, ttlMs: number) {
    this.#redis = redis;
    this.key = key;
    this.holder = holder;
    this.ttlMs = ttlMs;
  }

  /** Whether this holder has the lease now (taken or renewed for another `ttlMs`). */
  async tryAcquire(): Promise<boolean> {
    return (await this.#redis.eval(ACQUIRE, 1, this.key, this.holder, String(this.ttlMs))) === 1;
  }

  /** Whether to run the job now: the lease is held, or Redis is down (every process runs it, as without Redis). */
  async held(): Promise<boolean> {
    return this.tryAcquire().catch(() => true);
  }

  /** Lets the lease go now, if this holder still has it. */
  async release(): Promise<void> {
    await this.#redis.eval(RELEASE, 1, this.key, this.holder);
  }
}
