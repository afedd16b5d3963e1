import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { Upload } from './upload.entity.ts';
import { User } from './user.entity.ts';

/** A user's webhook endpoint (migration m015). */
export const WebhookEndpoint = defineEntity({
  name: 'WebhookEndpoint',
  tableName: 'webhook_endpoints',
  properties: {
    id: p.uuid().primary(),
    user: () => p.manyToOne(User).deleteRule('cascade'),
    url: p.text(),
    description: p.string().length(500).default(''),
    /** The event types it takes, space-separated. */
    events: p.string().length(255),
    /** `whsec_<base64>`: shown once, kept to sign. */
    secret: p.string().length(64),
    /** The secret before the last rotation: it signs too until `previousSecretUntil`. */
    previousSecret: p.string().length(64).nullable(),
    previousSecretUntil: p.datetime(3).nullable(),
    enabled: p.boolean().default(true),
    /** Why it was disabled (a delivery given up); null while enabled or when its owner disabled it. */
    disabledReason: p.text().nullable(),
    /** The number of its last delivery: the next event takes the next one, under this row's lock. */
    nextSeq: p.integer().default(0),
    /**
     * The API token that created or last changed it (migration m022): moderation events go only while that token
     * exists, has not expired and has `moderate`; null: made with a JWT or the cookie (every scope).
     */
    tokenId: p.uuid().nullable(),
    createdAt: p.datetime(3),
    updatedAt: p.datetime(3),
  },
});
export type IWebhookEndpoint = InferEntity<typeof WebhookEndpoint>;

/** The outbox and delivery log (migration m015): one row per event and endpoint. */
export const WebhookDelivery = defineEntity({
  name: 'WebhookDelivery',
  tableName: 'webhook_deliveries',
  properties: {
    id: p.uuid().primary(),
    endpoint: () => p.manyToOne(WebhookEndpoint).deleteRule('cascade'),
    /** Its place in the endpoint's order. */
    seq: p.integer(),
    eventType: p.string().length(32),
    /** The body sent, exactly: `{"type","timestamp","data"}`. */
    payload: p.text(),
    status: p.string().length(10).$type<'pending' | 'delivered' | 'failed'>().default('pending'),
    attempts: p.integer().default(0),
    nextAttemptAt: p.datetime(3),
    leaseOwner: p.string().length(64).nullable(),
    leaseUntil: p.datetime(3).nullable(),
    /** The HTTP status of the last attempt; null when it got no answer. */
    lastStatus: p.integer().nullable(),
    lastError: p.text().nullable(),
    lastAttemptAt: p.datetime(3).nullable(),
    deliveredAt: p.datetime(3).nullable(),
    createdAt: p.datetime(3),
  },
});
export type IWebhookDelivery = InferEntity<typeof WebhookDelivery>;

/** The vote milestones an upload reached (migration m015): each is announced once. */
export const UploadMilestone = defineEntity({
  name: 'UploadMilestone',
  tableName: 'upload_milestones',
  properties: {
    upload: () => p.manyToOne(Upload).primary().deleteRule('cascade'),
    milestone: p.integer().primary(),
    reachedAt: p.datetime(3),
  },
});
export type IUploadMilestone = InferEntity<typeof UploadMilestone>;
