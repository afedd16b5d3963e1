/**
 * What webhooks need from the database (src/store/webhooks/webhook.repository.ts). The events themselves are written
 * by the store, in the transaction of the change each reports (src/store/webhooks/outbox.ts): this port manages the
 * endpoints and runs the deliveries.
 */
import type { ClaimedDelivery, DeliveryRecord, WebhookEventType, WebhookRecord } from './webhook.types.ts';

export interface NewWebhook {
  id: string;
  userId: string;
  url: string;
  description: string;
  events: WebhookEventType[];
  secret: string;
  /** The API token it is made with (its scopes bound the moderation events it gets); null/absent: a JWT or cookie. */
  tokenId?: string | null;
  at: Date;
}

export interface WebhookPatch {
  url?: string;
  description?: string;
  events?: WebhookEventType[];
  enabled?: boolean;
}

/** How a claim shares out among accounts (the owners of the endpoints). */
export interface ClaimFairness {
  /** At most this many deliveries of one account held by the claimer at a time. */
  perAccount: number;
  /** What the claimer holds already, by account (counted against `perAccount`). */
  busy: ReadonlyMap<string, number>;
}

export interface WebhookStore {
  create(w: NewWebhook): Promise<WebhookRecord>;
  countOf(userId: string): Promise<number>;
  list(userId: string): Promise<WebhookRecord[]>;
  /** The user's endpoint; null when there is none of that id, or it is someone else's. */
  find(userId: string, id: string): Promise<WebhookRecord | null>;
  /**
   * Re-enabling also clears why it was disabled; `tokenId`, when given, becomes the endpoint's credential (as
   * `NewWebhook`'s). Null when it is not the user's.
   */
  update(
    userId: string,
    id: string,
    patch: WebhookPatch,
    at: Date,
    tokenId?: string | null,
  ): Promise<WebhookRecord | null>;
  delete(userId: string, id: string): Promise<boolean>;
  /** The new secret signs from now on; the current one keeps signing next to it until `previousUntil`. */
  rotate(userId: string, id: string, secret: string, previousUntil: Date, at: Date): Promise<WebhookRecord | null>;
  /** The endpoint's delivery log, newest first. */
  deliveries(endpointId: string, offset: number, limit: number): Promise<DeliveryRecord[]>;

  /**
   * Claims up to `limit` due deliveries, each the head of its endpoint's queue (no earlier one of the endpoint still
   * pending) on an enabled endpoint, that no live lease holds, for `leaseMs`. Concurrent claimers (processes) never
   * get the same delivery (PostgreSQL: `FOR UPDATE SKIP LOCKED`; SQLite: one statement of the single writer).
   * With `fair`, no account gets more than its room, and every account's oldest head comes before any second one.
   */
  claim(owner: string, leaseMs: number, limit: number, at: Date, fair?: ClaimFairness): Promise<ClaimedDelivery[]>;
  /** The outbox as a whole: deliveries pending, and endpoints waiting for a retry of their head (open circuits). */
  backlog(): Promise<{ pending: number; backingOff: number }>;
  /** Records a 2xx answer: delivered (the endpoint's next event becomes due). */
  delivered(id: string, owner: string, status: number, at: Date): Promise<void>;
  /**
   * Records a failed attempt: retried at `retryAt`, or with null given up (`failed`), and then the endpoint is
   * disabled with `reason` until its owner enables it again.
   */
  failed(
    id: string,
    owner: string,
    outcome: { status: number | null; error: string },
    at: Date,
    retryAt: Date | null,
    reason: string,
  ): Promise<void>;
}
