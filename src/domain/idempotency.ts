/**
 * `Idempotency-Key` on upload creation: the same key from the same user within 24 h returns the first
 * response and creates nothing. Concurrent requests with one key: one runs, the others wait for its
 * result. The same key with a different request is refused. State lives in the database, so this holds
 * across every gateway process.
 *
 * The request that runs holds the key by a claim: a token of its own and a short lease, renewed while
 * the work runs. A process that dies stops renewing, so its claim lapses within a lease and a retry
 * takes it over; a live holder keeps it however long the work takes. The holder records its result only
 * while its token still holds the claim (fencing), and stops its work when it cannot keep the claim.
 */
import { randomUUID } from 'node:crypto';
import { errors } from './errors.ts';
import type { Clock } from './clock.ts';

export interface StoredResponse {
  status: number;
  body: string;
}

/** A claim on a key: who holds it (`token`), since when, and until when unless renewed. */
export interface Claim {
  token: string;
  at: Date;
  leaseUntil: Date;
}

export type ClaimResult =
  | { state: 'claimed' }
  | { state: 'done'; requestHash: string; response: StoredResponse }
  /** `token` is null for a claim made before leases existed. */
  | { state: 'pending'; requestHash: string; token: string | null; leaseUntil: Date };

export interface IdempotencyStore {
  /**
   * Inserts a pending record held by `claim` unless one exists (a record older than `expiredBefore` counts as absent).
   */
  claim(userId: string, key: string, requestHash: string, claim: Claim, expiredBefore: Date): Promise<ClaimResult>;
  /** Gives a pending record whose lease ran out before `claim.at` to `claim`, only if `previous` still holds it. */
  takeOver(userId: string, key: string, previous: string | null, claim: Claim): Promise<boolean>;
  /** Extends the lease of a pending record; false when `token` no longer holds it. */
  renew(userId: string, key: string, token: string, leaseUntil: Date): Promise<boolean>;
  /** Stores the response, only while `token` holds the pending record; false when it no longer does. */
  complete(userId: string, key: string, token: string, response: StoredResponse): Promise<boolean>;
  /** Frees the key, only if `token` still holds it (a newer claim is someone else's). */
  release(userId: string, key: string, token: string): Promise<void>;
  /** Whether a live record exists (the request will be answered from it or compared with it). */
  exists(userId: string, key: string, expiredBefore: Date): Promise<boolean>;
  purge(expiredBefore: Date): Promise<number>;
}

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;
/** How long a claim outlives its last renewal: a retry after a crash waits at most this long. */
export const IDEMPOTENCY_LEASE_MS = 10_000;
/** The holder renews this often, so a few failed renewals in a row still keep the claim. */
const RENEW_EVERY_MS = 2_000;
/**
 * The holder gives up this long before its lease runs out unrenewed (database unreachable), so it stops
 * before a waiter may take over — and a little clock difference between hosts does not make two holders.
 */
const GIVE_UP_BEFORE_MS = 3_000;
const POLL_MS = 100;
const KEY_RE = /^[\x21-\x7e]{1,255}$/;

/** Waits `ms`, or less when `signal` aborts (never rejects). */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

const realSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

const claimLost = () =>
  errors.busy(
    'this request lost its hold on the Idempotency-Key (its lease could not be renewed in time); ' +
      'retry with the same key',
    Math.ceil(IDEMPOTENCY_LEASE_MS / 1000),
  );

export function validateIdempotencyKey(key: string): string {
  if (!KEY_RE.test(key))
    throw errors.invalid('Idempotency-Key must be 1 to 255 printable ASCII characters without spaces');
  return key;
}

export class IdempotencyService {
  readonly #store: IdempotencyStore;
  readonly #clock: Clock;
  readonly #sleep: Sleep;

  constructor(deps: { store: IdempotencyStore; clock: Clock; sleep?: Sleep }) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#sleep = deps.sleep ?? realSleep;
  }

  known(userId: string, key: string): Promise<boolean> {
    return this.#store.exists(userId, key, this.#expiredBefore());
  }

  /**
   * Runs `fn` once per (user, key); replays its stored response otherwise. `replayed` tells which happened.
   * `fn` gets a signal that aborts when the client goes (`signal`) or the claim cannot be kept.
   */
  async run(
    userId: string,
    key: string,
    requestHash: string,
    fn: (signal: AbortSignal) => Promise<StoredResponse>,
    signal?: AbortSignal,
  ): Promise<StoredResponse & { replayed: boolean }> {
    for (;;) {
      const claim = this.#newClaim();
      const seen = await this.#store.claim(userId, key, requestHash, claim, this.#expiredBefore());
      if (seen.state !== 'claimed') {
        if (seen.requestHash !== requestHash) {
          throw errors.conflict(
            'Idempotency-Key was already used with a different request; use a new key for a new upload',
          );
        }
        if (seen.state === 'done') return { ...seen.response, replayed: true };
        // Its holder stopped renewing (died): take it over — unless someone else already has, or it renewed.
        const lapsed = seen.leaseUntil.getTime() < claim.at.getTime();
        if (!lapsed || !(await this.#store.takeOver(userId, key, seen.token, claim))) {
          if (signal?.aborted) throw errors.invalid('request cancelled');
          await this.#sleep(POLL_MS, signal);
          continue;
        }
      }
      return { ...(await this.#hold(userId, key, claim, fn, signal)), replayed: false };
    }
  }

  /** Runs `fn` while renewing `claim`; records a success only while the claim is still this one. */
  async #hold(
    userId: string,
    key: string,
    claim: Claim,
    fn: (signal: AbortSignal) => Promise<StoredResponse>,
    signal?: AbortSignal,
  ): Promise<StoredResponse> {
    const lost = new AbortController();
    const finished = new AbortController();
    const renewing = this.#renew(userId, key, claim, lost, finished.signal);
    const stopRenewing = () => {
      finished.abort();
      return renewing;
    };
    let response: StoredResponse;
    try {
      response = await fn(signal ? AbortSignal.any([signal, lost.signal]) : lost.signal);
    } catch (e) {
      await stopRenewing();
      // A failed release leaves the key to lapse within a lease: the request's own error is the answer.
      await this.#store.release(userId, key, claim.token).catch(() => {});
      throw lost.signal.aborted ? lost.signal.reason : e;
    }
    await stopRenewing();
    // Only successes are remembered; an error leaves the key free for a retry. A success that finished
    // after its claim was lost (the work could not be stopped in time) is answered but not recorded:
    // the key belongs to whoever took it over.
    if (response.status < 300) await this.#store.complete(userId, key, claim.token, response);
    else await this.#store.release(userId, key, claim.token);
    return response;
  }

  /**
   * Renews the lease every RENEW_EVERY_MS until `finished`. Aborts `lost` when the claim was taken over,
   * or when no renewal succeeded for so long that a waiter may soon take it over.
   */
  async #renew(userId: string, key: string, claim: Claim, lost: AbortController, finished: AbortSignal): Promise<void> {
    let giveUpAt = claim.leaseUntil.getTime() - GIVE_UP_BEFORE_MS;
    let inFlight: Promise<void> | null = null;
    while (!finished.aborted && !lost.signal.aborted) {
      await this.#sleep(Math.max(0, Math.min(RENEW_EVERY_MS, giveUpAt - this.#clock.now().getTime())), finished);
      if (finished.aborted) break;
      const now = this.#clock.now().getTime();
      if (now >= giveUpAt) {
        lost.abort(claimLost());
        break;
      }
      // One renewal at a time: a database that hangs is caught by the give-up time, not by piling up queries.
      inFlight ??= this.#store.renew(userId, key, claim.token, new Date(now + IDEMPOTENCY_LEASE_MS)).then(
        (held) => {
          if (held) giveUpAt = Math.max(giveUpAt, now + IDEMPOTENCY_LEASE_MS - GIVE_UP_BEFORE_MS);
          else lost.abort(claimLost());
          inFlight = null;
        },
        () => {
          inFlight = null; // unreachable database: try again next time, until the give-up time
        },
      );
    }
    // A renewal still under way is not awaited: once the record is completed or released it matches nothing.
  }

  #newClaim(): Claim {
    const at = this.#clock.now();
    return { token: randomUUID(), at, leaseUntil: new Date(at.getTime() + IDEMPOTENCY_LEASE_MS) };
  }

  purge(): Promise<number> {
    return this.#store.purge(this.#expiredBefore());
  }

  #expiredBefore(): Date {
    return new Date(this.#clock.now().getTime() - IDEMPOTENCY_TTL_MS);
  }
}
