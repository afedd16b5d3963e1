/**
 * `Idempotency-Key` on upload creation: the same key from the same user within 24 h returns the first
 * response and creates nothing. Concurrent requests with one key: one runs, the others wait for its
 * result. The same key with a different request is refused. State lives in the database, so this holds
 * across every gateway process.
 */
import { errors } from './errors.ts';
import type { Clock } from './clock.ts';

export interface StoredResponse {
  status: number;
  body: string;
}

export type ClaimResult =
  | { state: 'claimed' }
  | { state: 'done'; requestHash: string; response: StoredResponse }
  | { state: 'pending'; requestHash: string; since: Date };

export interface IdempotencyStore {
  /** Inserts a pending record unless one exists (a record older than `expiredBefore` counts as absent). */
  claim(userId: string, key: string, requestHash: string, now: Date, expiredBefore: Date): Promise<ClaimResult>;
  complete(userId: string, key: string, response: StoredResponse): Promise<void>;
  /** Frees the key, only if it still holds the claim made at `since` (a newer claim is someone else's). */
  release(userId: string, key: string, since: Date): Promise<void>;
  /** Whether a live record exists (the request will be answered from it or compared with it). */
  exists(userId: string, key: string, expiredBefore: Date): Promise<boolean>;
  purge(expiredBefore: Date): Promise<number>;
}

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;
/** A pending record this old belongs to a request that died with its process: another may take over. */
const ABANDONED_AFTER_MS = 2 * 60 * 1000;
const POLL_MS = 100;
const KEY_RE = /^[\x21-\x7e]{1,255}$/;

export function validateIdempotencyKey(key: string): string {
  if (!KEY_RE.test(key)) throw errors.invalid('Idempotency-Key must be 1 to 255 printable ASCII characters without spaces');
  return key;
}

export class IdempotencyService {
  readonly #store: IdempotencyStore;
  readonly #clock: Clock;

  constructor(deps: { store: IdempotencyStore; clock: Clock }) {
    this.#store = deps.store;
    this.#clock = deps.clock;
  }

  known(userId: string, key: string): Promise<boolean> {
    return this.#store.exists(userId, key, this.#expiredBefore());
  }

  /** Runs `fn` once per (user, key); replays its stored response otherwise. `replayed` tells which happened. */
  async run(userId: string, key: string, requestHash: string, fn: () => Promise<StoredResponse>, signal?: AbortSignal): Promise<StoredResponse & { replayed: boolean }> {
    for (;;) {
      const now = this.#clock.now();
      const claim = await this.#store.claim(userId, key, requestHash, now, this.#expiredBefore());
      if (claim.state === 'claimed') {
        try {
          const response = await fn();
          // Only successes are remembered; an error leaves the key free for a retry.
          if (response.status < 300) await this.#store.complete(userId, key, response);
          else await this.#store.release(userId, key, now);
          return { ...response, replayed: false };
        } catch (e) {
          await this.#store.release(userId, key, now);
          throw e;
        }
      }
      if (claim.requestHash !== requestHash) {
        throw errors.conflict('Idempotency-Key was already used with a different request; use a new key for a new upload');
      }
      if (claim.state === 'done') return { ...claim.response, replayed: true };
      if (now.getTime() - claim.since.getTime() > ABANDONED_AFTER_MS) {
        // Abandoned: take it over — unless another waiter already has (then its claim stays).
        await this.#store.release(userId, key, claim.since);
        continue;
      }
      if (signal?.aborted) throw errors.invalid('request cancelled');
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  purge(): Promise<number> {
    return this.#store.purge(this.#expiredBefore());
  }

  #expiredBefore(): Date {
    return new Date(this.#clock.now().getTime() - IDEMPOTENCY_TTL_MS);
  }
}
