/**
 * The delivery loop every gateway process runs (API.md: at least once, in order per endpoint, retried with backoff
 * for at least 24 hours). It claims due deliveries with a lease (the store makes sure two processes never take the
 * same one, and that an endpoint's next event waits for the one before), signs and sends each, and records the
 * outcome: delivered, retried after the schedule's next wait, or given up (the endpoint is then disabled until its
 * owner enables it again). A process killed mid-delivery leaves its lease to expire: the delivery is sent again,
 * with the same `webhook-id`, so a receiver that deduplicates by it sees each event once.
 *
 * Isolation: each send is on its own, in one of `concurrency` slots, and a freed slot is claimed again at once (no
 * batch waits for its slowest). Of the slots one account's endpoints hold at most `perAccount`, and every account's
 * oldest due head is claimed before a second one of any: an account whose endpoints all hang costs itself its slots
 * and its timeouts, and another account's delivery is sent at the next poll. Each endpoint is its own circuit: a
 * failed attempt (refused, timed out, non-2xx) holds its queue back until the schedule's next wait has passed, and
 * then the head alone is sent as a probe; the events behind it stay queued, in order, and go once it is delivered.
 */
import type { Clock } from '../clock.ts';
import type { WebhookStore } from './ports.ts';
import { webhookHeaders } from './signing.ts';
import type { ClaimedDelivery } from './webhook.types.ts';

/** Sends one signed request (src/net/webhook-post.ts): the HTTP status, or throws with a short reason. */
export type WebhookSender = (
  url: string,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal,
) => Promise<{ status: number }>;

/** Standard Webhooks' suggested schedule: waits after the 1st, 2nd… failed attempt (27 h 35 m in all). */
export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3600_000,
  5 * 3600_000,
  10 * 3600_000,
  10 * 3600_000,
];

/**
 * Sends a process keeps in flight, and of those at most DEFAULT_PER_ACCOUNT to one account's endpoints: an account
 * whose 25 endpoints all hang holds 4 slots for a timeout each, and every other account's deliveries go on
 * (bench/README.md, "Webhook isolation").
 */
export const DEFAULT_CONCURRENCY = 64;
export const DEFAULT_PER_ACCOUNT = 4;

/** What the loop reports, for the metrics. */
export interface DispatchEvents {
  /** A 2xx answer: `lagMs` after its event was queued. */
  delivered?(d: ClaimedDelivery, lagMs: number): void;
  /** A failed attempt: retried later, or (`gaveUp`) not again. */
  failed?(d: ClaimedDelivery, gaveUp: boolean): void;
  /** Sends in flight in this process, after each change. */
  sending?(n: number): void;
}

export interface DispatcherDeps {
  store: WebhookStore;
  send: WebhookSender;
  clock: Clock;
  /** This process's name on the leases it takes. */
  owner: string;
  /** Waits between attempts; after the last one fails the delivery is given up and its endpoint disabled. */
  schedule: readonly number[];
  /** How long a claim holds a delivery: longer than a send may take (its timeout), with a margin. */
  leaseMs: number;
  /** Sends in flight at a time, each to another endpoint (default DEFAULT_CONCURRENCY). */
  concurrency?: number;
  /** Of those, at most this many to the endpoints of one account (default DEFAULT_PER_ACCOUNT). */
  perAccount?: number;
  /** While sends are in flight, how often the loop looks for new due deliveries too (default 1 s). */
  pollMs?: number;
  onError?: (err: unknown, delivery: ClaimedDelivery) => void;
  events?: DispatchEvents;
}

export class WebhookDispatcher {
  readonly #deps: DispatcherDeps;
  #sending = 0;

  constructor(deps: DispatcherDeps) {
    this.#deps = deps;
  }

  /** Sends in flight now (in this process). */
  get inFlight(): number {
    return this.#sending;
  }

  /**
   * Sends what is due, claiming again whenever a slot frees or `pollMs` passed, until nothing is due or in flight
   * (or `signal` aborts); resolves with how many it sent. A claim that fails ends the run after the sends in flight.
   */
  async run(signal: AbortSignal): Promise<number> {
    const {
      store,
      clock,
      owner,
      leaseMs,
      concurrency = DEFAULT_CONCURRENCY,
      perAccount = DEFAULT_PER_ACCOUNT,
    } = this.#deps;
    const { pollMs = 1_000 } = this.#deps;
    const sending = new Set<Promise<void>>();
    const busy = new Map<string, number>();
    let sent = 0;
    // One poll timer at a time, however many sends end before it fires.
    let tick: Promise<void> | null = null;
    try {
      while (!signal.aborted) {
        const room = concurrency - sending.size;
        const claimed = room > 0 ? await store.claim(owner, leaseMs, room, clock.now(), { perAccount, busy }) : [];
        for (const d of claimed) {
          busy.set(d.accountId, (busy.get(d.accountId) ?? 0) + 1);
          this.#deps.events?.sending?.(++this.#sending);
          const done: Promise<void> = this.#deliver(d, signal).finally(() => {
            this.#deps.events?.sending?.(--this.#sending);
            sending.delete(done);
            const n = busy.get(d.accountId)! - 1;
            if (n > 0) busy.set(d.accountId, n);
            else busy.delete(d.accountId);
          });
          sending.add(done);
        }
        sent += claimed.length;
        if (!sending.size) break;
        tick ??= pause(pollMs, signal).then(() => void (tick = null));
        await Promise.race([...sending, tick]);
      }
    } finally {
      await Promise.all(sending);
    }
    return sent;
  }

  async #deliver(d: ClaimedDelivery, signal: AbortSignal): Promise<void> {
    const { store, clock, owner, schedule, send, events } = this.#deps;
    let outcome: { status: number | null; error: string };
    try {
      const { status } = await send(d.url, webhookHeaders(d.secrets, d.id, clock.now(), d.payload), d.payload, signal);
      if (status >= 200 && status < 300) {
        const at = clock.now();
        await store.delivered(d.id, owner, status, at);
        events?.delivered?.(d, at.getTime() - d.createdAt.getTime());
        return;
      }
      outcome = { status, error: `answered HTTP ${status}` };
    } catch (err) {
      if (signal.aborted) return; // shutting down: the lease expires and another attempt follows, not counted
      outcome = { status: null, error: err instanceof Error ? err.message : String(err) };
    }
    const at = clock.now();
    const attempts = d.attempts + 1;
    const wait = schedule[attempts - 1];
    const retryAt = wait === undefined ? null : new Date(at.getTime() + wait);
    try {
      await store.failed(
        d.id,
        owner,
        outcome,
        at,
        retryAt,
        `disabled after ${attempts} failed attempts to deliver ${d.id} (last: ${outcome.error})`,
      );
      events?.failed?.(d, retryAt === null);
    } catch (err) {
      this.#deps.onError?.(err, d);
    }
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
