/**
 * The delivery loop every gateway process runs (API.md: at least once, in order per endpoint, retried with backoff
 * for at least 24 hours). It claims due deliveries with a lease (the store makes sure two processes never take the
 * same one, and that an endpoint's next event waits for the one before), signs and sends each, and records the
 * outcome: delivered, retried after the schedule's next wait, or given up (the endpoint is then disabled until its
 * owner enables it again). A process killed mid-delivery leaves its lease to expire: the delivery is sent again,
 * with the same `webhook-id`, so a receiver that deduplicates by it sees each event once.
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
  /** Deliveries claimed (and sent concurrently, each to another endpoint) at a time. */
  batch?: number;
  onError?: (err: unknown, delivery: ClaimedDelivery) => void;
}

export class WebhookDispatcher {
  readonly #deps: DispatcherDeps;

  constructor(deps: DispatcherDeps) {
    this.#deps = deps;
  }

  /** Sends what is due, batch after batch, until nothing is (or `signal` aborts); resolves with how many it sent. */
  async run(signal: AbortSignal): Promise<number> {
    const { store, clock, owner, leaseMs, batch = 8 } = this.#deps;
    let sent = 0;
    while (!signal.aborted) {
      const claimed = await store.claim(owner, leaseMs, batch, clock.now());
      if (!claimed.length) break;
      await Promise.all(claimed.map((d) => this.#deliver(d, signal)));
      sent += claimed.length;
    }
    return sent;
  }

  async #deliver(d: ClaimedDelivery, signal: AbortSignal): Promise<void> {
    const { store, clock, owner, schedule, send } = this.#deps;
    let outcome: { status: number | null; error: string };
    try {
      const { status } = await send(d.url, webhookHeaders(d.secrets, d.id, clock.now(), d.payload), d.payload, signal);
      if (status >= 200 && status < 300) {
        await store.delivered(d.id, owner, status, clock.now());
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
    } catch (err) {
      this.#deps.onError?.(err, d);
    }
  }
}
