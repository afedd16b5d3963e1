/** Webhooks (API.md "Clients at volume"): endpoints, their secrets and their delivery log. */
import { z } from 'zod';
import { ADMIN_EVENTS, MAX_WEBHOOKS_PER_USER, WEBHOOK_EVENTS } from '../../domain/webhooks/webhook.types.ts';
import { Success, boundedText } from './common.schemas.ts';
import { PageQuery } from './moderation.schemas.ts';

const EVENT_LIST = WEBHOOK_EVENTS.join(', ');
const MAX_URL = 2048;
const MAX_DESCRIPTION = 500;

const EXAMPLE_ID = '6f1c2a9e-3b7d-4c55-9e21-8a4b0d7f3c12';
const EXAMPLE_URL = 'https://hooks.example.com/pixvote';

export const WebhookEventName = z
  .enum(WEBHOOK_EVENTS, { error: `events must be event names (${EVENT_LIST})` })
  .describe(`An event type; ${ADMIN_EVENTS.map((e) => `\`${e}\``).join(' and ')} are for admins only.`)
  .meta({ examples: ['upload.processed'] });

const url = z
  .string({ error: 'url must be a string' })
  .trim()
  .min(1, { error: 'url must not be empty' })
  .max(MAX_URL, { error: `url must be at most ${MAX_URL} characters` })
  .describe(
    'Where deliveries are POSTed: http or https, no user name or password, and (as for `image_url`) only public ' +
      'addresses unless the server sets `FETCH_ALLOW_PRIVATE`. Redirects are not followed.',
  )
  .meta({ examples: [EXAMPLE_URL] });
const events = z
  .array(WebhookEventName, { error: `events must be an array of event names (${EVENT_LIST})` })
  .min(1, { error: `events must name at least one event (${EVENT_LIST})` })
  .max(WEBHOOK_EVENTS.length * 2, { error: 'events must name each event at most once' })
  .describe(
    "The events sent to it: `upload.*` about the caller's own uploads; admins also `report.created` and " +
      '`moderation.item_created` (403 `forbidden` to others).',
  )
  .meta({ examples: [['upload.processed', 'upload.removed']] });
const description = boundedText('description', { max: MAX_DESCRIPTION })
  .describe('A note for its owner.')
  .meta({ examples: ['CI notifier'] });

export const WebhookCreateBody = z
  .object({ url, events, description: description.optional() })
  .meta({ examples: [{ url: EXAMPLE_URL, events: ['upload.processed', 'upload.vote_milestone'] }] });

export const WebhookUpdateBody = z
  .object({
    url: url.optional(),
    events: events.optional(),
    description: description.optional(),
    enabled: z
      .boolean({ error: 'enabled must be true or false' })
      .optional()
      .describe(
        '`false` pauses deliveries (events that happen meanwhile are not queued); `true` resumes them, and is how ' +
          'an endpoint the service disabled after persistent failure is enabled again.',
      )
      .meta({ examples: [true] }),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    error: 'send at least one of url, events, description, enabled',
  })
  .meta({ examples: [{ enabled: true }, { events: ['upload.held', 'upload.removed'] }] });

export const WebhookIdParam = z.object({
  id: z
    .string()
    .describe('The webhook id (a UUID).')
    .meta({ examples: [EXAMPLE_ID] }),
});

export const DeliveriesQuery = PageQuery;

export const WebhookView = z.object({
  id: z.uuid(),
  url: z.string(),
  events: z.array(WebhookEventName),
  description: z.string(),
  enabled: z.boolean(),
  disabled_reason: z
    .string()
    .nullable()
    .describe('Why the service disabled it (a delivery failed for good); null when enabled or paused by its owner.'),
  previous_secret_expires_at: z.iso
    .datetime()
    .nullable()
    .describe('After a rotation: until when the previous secret still signs next to the new one; else null.'),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});
const secret = z
  .string()
  .regex(/^whsec_[A-Za-z0-9+/=]+$/)
  .describe('The signing secret (`whsec_` + base64, Standard Webhooks), shown only in this response.');
export const WebhookCreated = WebhookView.extend({ secret });
export const WebhookRotated = WebhookView.extend({ secret });
export const WebhookList = z.object({ webhooks: z.array(WebhookView).max(MAX_WEBHOOKS_PER_USER) });
export const WebhookDeleted = Success.extend({ id: z.uuid() });

export const DeliveryView = z.object({
  id: z.string().describe('The `webhook-id` header of its requests (the same on every retry).'),
  type: WebhookEventName,
  status: z
    .enum(['pending', 'delivered', 'failed'])
    .describe('`pending`: to be sent (or retried); `delivered`: a 2xx answer; `failed`: given up.'),
  attempts: z.int().nonnegative(),
  next_attempt_at: z.iso.datetime().nullable().describe('When the next attempt is due (pending only).'),
  last_attempt_at: z.iso.datetime().nullable(),
  last_status: z.int().nullable().describe("The last attempt's HTTP status; null when it got no answer."),
  last_error: z.string().nullable(),
  delivered_at: z.iso.datetime().nullable(),
  created_at: z.iso.datetime(),
});
export const DeliveryPage = z.object({
  deliveries: z.array(DeliveryView),
  page: z.int().positive(),
  limit: z.int().positive(),
  has_more: z.boolean(),
});

/** The body of every delivery (the document's `webhooks`). */
export const WebhookPayload = z.object({
  type: WebhookEventName,
  timestamp: z.iso.datetime(),
  data: z
    .looseObject({})
    .describe(
      '`upload.*`: `{"upload": {"id", "user_id", "upload_type", "moderation", "is_private", "created_at", "url"}}` ' +
        '(`upload.vote_milestone` adds `milestone` and `upvotes`; `moderation.item_created` adds `reason`: ' +
        "`report`, `held` or `person_flag`; a vote ring's is " +
        '`{"reason": "vote_ring", "vote_ring": {"id", "accounts"}}`); ' +
        '`report.created`: `{"report": {"id", "upload_id", "reason", "note", ' +
        '"created_at"}}`.',
    ),
});
