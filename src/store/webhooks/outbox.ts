/**
 * The webhook outbox (migration m015): the events of a change, written in the change's own transaction, one
 * delivery per endpoint that takes the event. A commit writes its events with it and a rollback drops them, so no
 * event is lost to a crash and none reports a change that did not happen. Each delivery takes the next number of
 * its endpoint under the endpoint row's lock: an endpoint's numbers follow the commits, and the delivery loop sends
 * them in that order (webhook.repository.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { isAdminEvent, milestonesCrossed, type WebhookEventType } from '../../domain/webhooks/webhook.types.ts';
import type { DB } from '../database-types.ts';
import type { Dialect } from '../dialect.ts';

/**
 * The endpoints allowed moderation events at `at`: their owner is an admin and the credential that configured the
 * endpoint still has `moderate` (a JWT or the cookie: no token recorded; or an API token that exists, has not expired
 * and has the scope). Checked when an event is queued (emitEvent) and again when a delivery is claimed
 * (webhook.repository.ts), so that what was queued before the role or the scope went is not sent.
 */
export function moderationEndpoints(db: Kysely<DB>, d: Dialect, at: Date) {
  return db
    .selectFrom('webhook_endpoints as e')
    .innerJoin('users as u', 'u.id', 'e.user_id')
    .select('e.id')
    .where('u.role', '=', 'admin')
    .where((w) =>
      w.or([
        w('e.token_id', 'is', null),
        w.exists(
          w
            .selectFrom('api_tokens as t')
            .select('t.id')
            .whereRef('t.id', '=', 'e.token_id')
            .whereRef('t.user_id', '=', 'e.user_id')
            // Stored scopes are space-separated names (null: every scope of the owner, an admin's has `moderate`).
            .where((t) => t.or([t('t.scopes', 'is', null), t('t.scopes', 'like', '%moderate%')]))
            .where((t) => t.or([t('t.expires_at', 'is', null), t('t.expires_at', '>', d.date(at))])),
        ),
      ]),
    );
}

/**
 * Queues `type` for every enabled endpoint that takes it: the upload owner's (`ownerId`) for an upload event, every
 * admin's for a moderation event, when the credential that configured the endpoint still has `moderate` (issue 44:
 * a JWT or the cookie, or an API token that exists, has not expired and has the scope). A user no longer admin, a
 * token revoked or run out: no more moderation events. Nothing is written when no endpoint takes it.
 */
export async function emitEvent(
  db: Kysely<DB>,
  d: Dialect,
  event: { type: WebhookEventType; ownerId: string | null; data: Record<string, unknown>; at: Date },
): Promise<void> {
  let q = db
    .selectFrom('webhook_endpoints as e')
    .select(['e.id', 'e.events'])
    .where('e.enabled', '=', d.bool(true))
    .where('e.events', 'like', `%${event.type}%`);
  if (isAdminEvent(event.type)) {
    q = q.where('e.id', 'in', moderationEndpoints(db, d, event.at));
  } else {
    if (!event.ownerId) return;
    q = q.where('e.user_id', '=', event.ownerId);
  }
  const endpoints = (await q.execute())
    .filter((e) => e.events.split(' ').includes(event.type))
    .map((e) => e.id)
    .sort(); // one lock order for every writer
  if (!endpoints.length) return;
  const payload = JSON.stringify({ type: event.type, timestamp: event.at.toISOString(), data: event.data });
  for (const endpointId of endpoints) {
    const numbered = await db
      .updateTable('webhook_endpoints')
      .set((eb) => ({ next_seq: eb('next_seq', '+', 1) }))
      .where('id', '=', endpointId)
      .returning('next_seq')
      .executeTakeFirst();
    if (!numbered) continue; // deleted meanwhile
    await db
      .insertInto('webhook_deliveries')
      .values({
        id: randomUUID(),
        endpoint_id: endpointId,
        seq: Number(numbered.next_seq),
        event_type: event.type,
        payload,
        status: 'pending',
        attempts: 0,
        next_attempt_at: d.date(event.at),
        created_at: d.date(event.at),
      })
      .execute();
  }
}

/** An upload as the events describe it. */
async function uploadSummary(db: Kysely<DB>, d: Dialect, uploadId: string) {
  const row = await db
    .selectFrom('uploads')
    .select(['id', 'user_id', 'upload_type', 'moderation', 'is_private', 'created_at'])
    .where('id', '=', uploadId)
    .executeTakeFirst();
  if (!row) return null;
  return {
    ownerId: row.user_id,
    upload: {
      id: row.id,
      user_id: row.user_id,
      upload_type: row.upload_type,
      moderation: row.moderation,
      is_private: d.readBool(row.is_private),
      created_at: d.readDate(row.created_at).toISOString(),
      url: `/api/upload/${row.id}`,
    },
  };
}

/** Queues an event about an upload (its state as this transaction sees it), with `extra` data. */
export async function emitUploadEvent(
  db: Kysely<DB>,
  d: Dialect,
  type: WebhookEventType,
  uploadId: string,
  at: Date,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const summary = await uploadSummary(db, d, uploadId);
  if (!summary) return;
  await emitEvent(db, d, { type, ownerId: summary.ownerId, data: { upload: summary.upload, ...extra }, at });
}

/**
 * After a vote moved an upload's upvotes from `before` to `after`: each milestone (10, 100, 1000…) reached for the
 * first time is recorded and announced (`upload.vote_milestone`); one reached before (and lost since) is not again.
 */
export async function reachMilestones(
  db: Kysely<DB>,
  d: Dialect,
  uploadId: string,
  before: number,
  after: number,
  at: Date,
): Promise<void> {
  for (const milestone of milestonesCrossed(before, after)) {
    const fresh = await db
      .insertInto('upload_milestones')
      .values({ upload_id: uploadId, milestone, reached_at: d.date(at) })
      .onConflict((oc) => oc.columns(['upload_id', 'milestone']).doNothing())
      .returning('milestone')
      .execute();
    if (fresh.length)
      await emitUploadEvent(db, d, 'upload.vote_milestone', uploadId, at, { milestone, upvotes: after });
  }
}

/** Why an upload entered the moderation queue (`moderation.item_created`). */
export type QueueReason = 'report' | 'held' | 'person_flag';

/** Queues `moderation.item_created` for the admins' endpoints. */
export function emitQueueItem(
  db: Kysely<DB>,
  d: Dialect,
  uploadId: string,
  reason: QueueReason,
  at: Date,
): Promise<void> {
  return emitUploadEvent(db, d, 'moderation.item_created', uploadId, at, { reason });
}

/** Whether the upload is in the open queue already: open reports, or a person flag (held is the caller's to say). */
export async function inQueue(db: Kysely<DB>, d: Dialect, uploadId: string): Promise<boolean> {
  const row = await db
    .selectFrom('uploads')
    .select(['person_flag', 'open_reports'])
    .where('id', '=', uploadId)
    .executeTakeFirst();
  return !!row && (d.readBool(row.person_flag) || Number(row.open_reports) > 0);
}
