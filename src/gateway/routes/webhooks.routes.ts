/**
 * Webhooks (API.md "Clients at volume"): a user's endpoints, scope `manage`. Another user's webhook, or an id that
 * is not a UUID, is 404.
 */
import { errors } from '../../domain/errors.ts';
import { isUuid } from '../../domain/ids.ts';
import type { WebhookService } from '../../domain/webhooks/webhook.service.ts';
import type { DeliveryRecord, WebhookRecord } from '../../domain/webhooks/webhook.types.ts';
import {
  DeliveriesQuery,
  DeliveryPage,
  WebhookCreateBody,
  WebhookCreated,
  WebhookDeleted,
  WebhookIdParam,
  WebhookList,
  WebhookRotated,
  WebhookUpdateBody,
} from '../schemas/webhook.schemas.ts';
import { WebhookView } from '../schemas/webhook.schemas.ts';
import { routes } from './route.ts';

const DELIVERY =
  'Deliveries follow Standard Webhooks v1: a POST of `{"type", "timestamp", "data"}` with `webhook-id`, ' +
  '`webhook-timestamp` and `webhook-signature` (`v1,<base64 HMAC-SHA256 of id.timestamp.body>` with the secret ' +
  'after `whsec_`, base64-decoded). At least once, in order per endpoint (the next event after the one before was ' +
  'delivered or given up), retried with backoff (`WEBHOOK_RETRY_SCHEDULE`, 27.5 hours by default); a receiver ' +
  'deduplicates by `webhook-id`. When every attempt failed the endpoint is disabled until its owner enables it.';

const ADMIN_EVENTS_RULE =
  'The moderation events (`report.created`, `moderation.item_created`) are for admins (else 403 `forbidden`) and ' +
  'need the scope `moderate` of an API token that registers or changes an endpoint taking them (else 403 ' +
  '`insufficient_scope` naming it). The endpoint keeps that token: its moderation events stop when the token is ' +
  'revoked or expires, or its owner is no longer an admin.';

const known = (id: string): string => {
  if (!isUuid(id)) throw errors.notFound(`no webhook ${String(id)} of yours`);
  return id;
};

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function webhookView(w: WebhookRecord, now = new Date()) {
  return {
    id: w.id,
    url: w.url,
    events: w.events,
    description: w.description,
    enabled: w.enabled,
    disabled_reason: w.disabledReason,
    previous_secret_expires_at:
      w.previousSecretUntil && w.previousSecretUntil > now ? iso(w.previousSecretUntil) : null,
    created_at: w.createdAt.toISOString(),
    updated_at: w.updatedAt.toISOString(),
  };
}

const deliveryView = (d: DeliveryRecord) => ({
  id: d.id,
  type: d.eventType,
  status: d.status,
  attempts: d.attempts,
  next_attempt_at: iso(d.nextAttemptAt),
  last_attempt_at: iso(d.lastAttemptAt),
  last_status: d.lastStatus,
  last_error: d.lastError,
  delivered_at: iso(d.deliveredAt),
  created_at: d.createdAt.toISOString(),
});

const EXAMPLE = {
  id: '6f1c2a9e-3b7d-4c55-9e21-8a4b0d7f3c12',
  url: 'https://hooks.example.com/pixvote',
  events: ['upload.processed', 'upload.vote_milestone'],
  description: '',
  enabled: true,
  disabled_reason: null,
  previous_secret_expires_at: null,
  created_at: '2026-11-20T12:00:00.000Z',
  updated_at: '2026-11-20T12:00:00.000Z',
};
const EXAMPLE_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

export const webhookRoutes = routes<{ webhooks: WebhookService }>((route) => [
  route({
    method: 'post',
    path: '/api/webhooks',
    operationId: 'createWebhook',
    tag: 'webhooks',
    summary: 'Register a webhook endpoint',
    description: `The secret (\`whsec_…\`) is shown only in this response. ${ADMIN_EVENTS_RULE} ${DELIVERY}`,
    auth: 'required',
    scope: 'manage',
    limit: 'general',
    body: { json: WebhookCreateBody },
    responses: {
      201: {
        description: 'The new endpoint, with its secret.',
        json: WebhookCreated,
        examples: { created: { summary: 'A new endpoint', value: { ...EXAMPLE, secret: EXAMPLE_SECRET } } },
      },
    },
    errors: ['invalid_request', 'forbidden'],
    handler:
      (deps) =>
      async (ctx, { user, body }) => {
        const created = await deps.webhooks.create(user, body);
        ctx.status = 201;
        ctx.body = { ...webhookView(created), secret: created.secret };
      },
  }),
  route({
    method: 'get',
    path: '/api/webhooks',
    operationId: 'listWebhooks',
    tag: 'webhooks',
    summary: "List the caller's webhook endpoints",
    auth: 'required',
    scope: 'manage',
    limit: 'general',
    responses: {
      200: { description: 'The endpoints, without their secrets.', json: WebhookList, cacheControl: ['no-store'] },
    },
    handler:
      (deps) =>
      async (ctx, { user }) => {
        ctx.set('Cache-Control', 'no-store');
        const now = new Date();
        ctx.body = { webhooks: (await deps.webhooks.list(user)).map((w) => webhookView(w, now)) };
      },
  }),
  route({
    method: 'patch',
    path: '/api/webhooks/:id',
    operationId: 'updateWebhook',
    tag: 'webhooks',
    summary: 'Change a webhook endpoint, or enable or disable it',
    description:
      'Only the fields sent change. `enabled: true` re-enables an endpoint the service disabled after persistent ' +
      `failure: its queued events are delivered from the one that failed on. ${ADMIN_EVENTS_RULE}`,
    auth: 'required',
    scope: 'manage',
    limit: 'general',
    params: WebhookIdParam,
    body: { json: WebhookUpdateBody },
    responses: { 200: { description: 'The endpoint as it is now.', json: WebhookView } },
    errors: ['invalid_request', 'forbidden', 'not_found'],
    handler:
      (deps) =>
      async (ctx, { user, params, body }) => {
        ctx.body = webhookView(await deps.webhooks.update(user, known(params.id), body));
      },
  }),
  route({
    method: 'delete',
    path: '/api/webhooks/:id',
    operationId: 'deleteWebhook',
    tag: 'webhooks',
    summary: 'Delete a webhook endpoint',
    description: 'Its queued deliveries and its delivery log go with it.',
    auth: 'required',
    scope: 'manage',
    limit: 'general',
    params: WebhookIdParam,
    responses: { 200: { description: 'Deleted.', json: WebhookDeleted } },
    errors: ['not_found'],
    handler:
      (deps) =>
      async (ctx, { user, params }) => {
        await deps.webhooks.delete(user, known(params.id));
        ctx.body = { success: true, id: params.id };
      },
  }),
  route({
    method: 'post',
    path: '/api/webhooks/:id/rotate-secret',
    operationId: 'rotateWebhookSecret',
    tag: 'webhooks',
    summary: "Rotate a webhook endpoint's secret",
    description:
      'The new secret (shown only here) signs every delivery from now on; the previous one signs next to it for 24 ' +
      'hours (two `v1,` signatures separated by a space), so the receiver can switch without losing a delivery.',
    auth: 'required',
    scope: 'manage',
    limit: 'general',
    params: WebhookIdParam,
    responses: {
      200: {
        description: 'The endpoint with its new secret.',
        json: WebhookRotated,
        examples: {
          rotated: {
            summary: 'Rotated',
            value: {
              ...EXAMPLE,
              previous_secret_expires_at: '2026-11-21T12:00:00.000Z',
              secret: EXAMPLE_SECRET,
            },
          },
        },
      },
    },
    errors: ['not_found'],
    handler:
      (deps) =>
      async (ctx, { user, params }) => {
        const rotated = await deps.webhooks.rotateSecret(user, known(params.id));
        ctx.set('Cache-Control', 'no-store');
        ctx.body = { ...webhookView(rotated), secret: rotated.secret };
      },
  }),
  route({
    method: 'get',
    path: '/api/webhooks/:id/deliveries',
    operationId: 'listWebhookDeliveries',
    tag: 'webhooks',
    summary: "A webhook endpoint's delivery log",
    description: 'Newest first: each event sent (or to send) to the endpoint, its attempts and their outcome.',
    auth: 'required',
    scope: 'manage',
    limit: 'general',
    params: WebhookIdParam,
    query: DeliveriesQuery,
    responses: { 200: { description: 'One page of deliveries.', json: DeliveryPage, cacheControl: ['no-store'] } },
    errors: ['invalid_request', 'not_found'],
    handler:
      (deps) =>
      async (ctx, { user, params, query }) => {
        const rows = await deps.webhooks.deliveries(
          user,
          known(params.id),
          (query.page - 1) * query.limit,
          query.limit + 1,
        );
        ctx.set('Cache-Control', 'no-store');
        ctx.body = {
          deliveries: rows.slice(0, query.limit).map(deliveryView),
          page: query.page,
          limit: query.limit,
          has_more: rows.length > query.limit,
        };
      },
  }),
]);
