/**
 * Webhooks (API.md "Clients at volume"): a user's endpoints, the events they take, and the deliveries of those
 * events, signed as Standard Webhooks v1 says.
 */

/** Events on the caller's own uploads: every user may take them. */
export const UPLOAD_EVENTS = [
  'upload.processed',
  'upload.held',
  'upload.removed',
  'upload.restored',
  'upload.vote_milestone',
] as const;
/** Events of the moderation queue: admins only. */
export const ADMIN_EVENTS = ['report.created', 'moderation.item_created'] as const;
export const WEBHOOK_EVENTS = [...UPLOAD_EVENTS, ...ADMIN_EVENTS] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number];
export type AdminEventType = (typeof ADMIN_EVENTS)[number];

export const isAdminEvent = (t: WebhookEventType): t is AdminEventType =>
  (ADMIN_EVENTS as readonly string[]).includes(t);

/** Upvote counts that make an `upload.vote_milestone` (each announced once per upload). */
export const VOTE_MILESTONES = [10, 100, 1_000, 10_000, 100_000, 1_000_000] as const;

/** The milestones passed going from `before` to `after` upvotes (none when the count goes down). */
export const milestonesCrossed = (before: number, after: number): number[] =>
  VOTE_MILESTONES.filter((m) => before < m && after >= m);

/** A user may own at most this many endpoints. */
export const MAX_WEBHOOKS_PER_USER = 25;

/** How long the secret before a rotation keeps signing next to the new one. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 3600 * 1000;

export interface WebhookRecord {
  id: string;
  userId: string;
  url: string;
  description: string;
  events: WebhookEventType[];
  enabled: boolean;
  /** Why the service disabled it (persistent failure); null while enabled or when its owner disabled it. */
  disabledReason: string | null;
  /** Until when the secret before the last rotation still signs; null: no such secret. */
  previousSecretUntil: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One event sent (or to send) to one endpoint: a line of its delivery log. */
export interface DeliveryRecord {
  id: string;
  eventType: WebhookEventType;
  status: DeliveryStatus;
  attempts: number;
  /** When the next attempt is due (pending only). */
  nextAttemptAt: Date | null;
  lastAttemptAt: Date | null;
  lastStatus: number | null;
  lastError: string | null;
  deliveredAt: Date | null;
  createdAt: Date;
}

/** A delivery claimed for sending: what to send, where, and the secrets that sign it. */
export interface ClaimedDelivery {
  id: string;
  endpointId: string;
  /** The endpoint's owner: deliveries are shared out fairly among accounts. */
  accountId: string;
  url: string;
  payload: string;
  attempts: number;
  /** The current secret, then the previous one while it still signs. */
  secrets: string[];
  /** When the event was queued (its delivery lag runs from here). */
  createdAt: Date;
}
