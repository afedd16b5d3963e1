/**
 * Webhook endpoints and their deliveries (migration m015; the events are queued by outbox.ts in the transactions of
 * the changes they report).
 *
 * The claim takes the head of each endpoint's queue (its lowest-numbered pending delivery) when it is due and no
 * live lease holds it, and leases it: PostgreSQL locks the rows it takes with `FOR UPDATE SKIP LOCKED`, so
 * concurrent claimers never take the same one; SQLite runs it as one UPDATE … RETURNING of its single writer. While
 * the head is pending (leased, or waiting for its retry), nothing after it is claimed: an endpoint receives its
 * events in order, each after the one before was delivered or given up.
 */
import type { ExpressionBuilder, Kysely, Selectable, UpdateObject } from 'kysely';
import type { ClaimFairness, NewWebhook, WebhookPatch, WebhookStore } from '../../domain/webhooks/ports.ts';
import {
  isAdminEvent,
  WEBHOOK_EVENTS,
  type ClaimedDelivery,
  type DeliveryRecord,
  type WebhookEventType,
  type WebhookRecord,
} from '../../domain/webhooks/webhook.types.ts';
import type { Database } from '../database.ts';
import { moderationEndpoints } from './outbox.ts';
import type { DB, WebhookDeliveriesTable, WebhookEndpointsTable } from '../database-types.ts';

type EndpointRow = Selectable<WebhookEndpointsTable>;
type DeliveryRow = Selectable<WebhookDeliveriesTable>;

const eventsOf = (stored: string): WebhookEventType[] =>
  stored.split(' ').filter((e): e is WebhookEventType => (WEBHOOK_EVENTS as readonly string[]).includes(e));

export class WebhookRepository implements WebhookStore {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async create(w: NewWebhook): Promise<WebhookRecord> {
    const d = this.#db.dialect;
    await this.#db
      .db()
      .insertInto('webhook_endpoints')
      .values({
        id: w.id,
        user_id: w.userId,
        url: w.url,
        description: w.description,
        events: w.events.join(' '),
        secret: w.secret,
        token_id: w.tokenId ?? null,
        enabled: d.bool(true),
        next_seq: 0,
        created_at: d.date(w.at),
        updated_at: d.date(w.at),
      })
      .execute();
    return (await this.find(w.userId, w.id))!;
  }

  async countOf(userId: string): Promise<number> {
    const row = await this.#db
      .db()
      .selectFrom('webhook_endpoints')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('user_id', '=', userId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async list(userId: string): Promise<WebhookRecord[]> {
    const rows = await this.#db
      .db()
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map((r) => this.#record(r));
  }

  async find(userId: string, id: string): Promise<WebhookRecord | null> {
    const row = await this.#own(this.#db.db(), userId, id);
    return row ? this.#record(row) : null;
  }

  update(userId: string, id: string, patch: WebhookPatch, at: Date, tokenId?: string | null) {
    const d = this.#db.dialect;
    return this.#updateOwn(userId, id, {
      ...(patch.url === undefined ? {} : { url: patch.url }),
      ...(patch.description === undefined ? {} : { description: patch.description }),
      ...(patch.events === undefined ? {} : { events: patch.events.join(' ') }),
      ...(patch.enabled === undefined ? {} : { enabled: d.bool(patch.enabled), disabled_reason: null }),
      ...(tokenId === undefined ? {} : { token_id: tokenId }),
      updated_at: d.date(at),
    });
  }

  async delete(userId: string, id: string): Promise<boolean> {
    const gone = await this.#db
      .db()
      .deleteFrom('webhook_endpoints')
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .returning('id')
      .execute();
    return gone.length > 0;
  }

  rotate(userId: string, id: string, secret: string, previousUntil: Date, at: Date) {
    const d = this.#db.dialect;
    return this.#updateOwn(userId, id, (eb) => ({
      previous_secret: eb.ref('secret'),
      previous_secret_until: d.date(previousUntil),
      secret,
      updated_at: d.date(at),
    }));
  }

  /** Updates the user's endpoint; null when it is not theirs. */
  async #updateOwn(
    userId: string,
    id: string,
    set:
      | UpdateObject<DB, 'webhook_endpoints'>
      | ((eb: ExpressionBuilder<DB, 'webhook_endpoints'>) => UpdateObject<DB, 'webhook_endpoints'>),
  ): Promise<WebhookRecord | null> {
    const done = await this.#db
      .db()
      .updateTable('webhook_endpoints')
      .set(set)
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .returningAll()
      .execute();
    return done[0] ? this.#record(done[0]) : null;
  }

  async deliveries(endpointId: string, offset: number, limit: number): Promise<DeliveryRecord[]> {
    const d = this.#db.dialect;
    const rows = await this.#db
      .db()
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('endpoint_id', '=', endpointId)
      .orderBy('seq', 'desc')
      .limit(limit)
      .offset(offset)
      .execute();
    return rows.map((r: DeliveryRow) => ({
      id: r.id,
      eventType: r.event_type as WebhookEventType,
      status: r.status,
      attempts: Number(r.attempts),
      nextAttemptAt: r.status === 'pending' ? d.readDate(r.next_attempt_at) : null,
      lastAttemptAt: r.last_attempt_at === null ? null : d.readDate(r.last_attempt_at),
      lastStatus: r.last_status === null ? null : Number(r.last_status),
      lastError: r.last_error,
      deliveredAt: r.delivered_at === null ? null : d.readDate(r.delivered_at),
      createdAt: d.readDate(r.created_at),
    }));
  }

  async claim(
    owner: string,
    leaseMs: number,
    limit: number,
    at: Date,
    fair: ClaimFairness = { perAccount: limit, busy: new Map() },
  ): Promise<ClaimedDelivery[]> {
    const d = this.#db.dialect;
    const db = this.#db.db();
    const now = d.date(at);
    // The heads due, read first: an idle poll (every WEBHOOK_INTERVAL_MS) writes nothing. On SQLite an UPDATE takes
    // the database's write lock even when it matches no row, and a writer of another connection in the same process
    // then blocks the event loop for up to the busy timeout.
    const due = () =>
      db
        .selectFrom('webhook_deliveries as h')
        .innerJoin('webhook_endpoints as e', 'e.id', 'h.endpoint_id')
        .where('h.status', '=', 'pending')
        .where('h.next_attempt_at', '<=', now)
        .where((w) => w.or([w('h.lease_until', 'is', null), w('h.lease_until', '<', now)]))
        .where('e.enabled', '=', d.bool(true))
        .where((w) =>
          w.not(
            w.exists(
              w
                .selectFrom('webhook_deliveries as p')
                .select('p.id')
                .whereRef('p.endpoint_id', '=', 'h.endpoint_id')
                .where('p.status', '=', 'pending')
                .whereRef('p.seq', '<', 'h.seq'),
            ),
          ),
        );
    if (!(await due().select('h.id').limit(1).executeTakeFirst())) return [];
    // Fair across accounts: each account's heads ranked oldest first, and no account given more than its room
    // (`perAccount` less what this claimer already sends for it). One account's many endpoints cannot take every
    // slot, and the oldest head of every account with room comes before the second of any.
    const ranked = due().select((eb) => [
      'h.id',
      'h.next_attempt_at',
      'h.seq',
      'e.user_id',
      eb.fn
        .agg<number>('row_number')
        .over((ob) => ob.partitionBy('e.user_id').orderBy('h.next_attempt_at').orderBy('h.seq'))
        .as('rank'),
    ]);
    const busy = [...fair.busy].filter(([, n]) => n > 0);
    const heads = db
      .selectFrom(ranked.as('r'))
      .select('r.id')
      .where((w) =>
        w.or([
          w.and([
            w('r.rank', '<=', fair.perAccount),
            ...(busy.length
              ? [
                  w(
                    'r.user_id',
                    'not in',
                    busy.map(([user]) => user),
                  ),
                ]
              : []),
          ]),
          ...busy
            .filter(([, n]) => n < fair.perAccount)
            .map(([user, n]) => w.and([w('r.user_id', '=', user), w('r.rank', '<=', fair.perAccount - n)])),
        ]),
      )
      .orderBy('r.rank')
      .orderBy('r.next_attempt_at')
      .orderBy('r.seq')
      .limit(limit);
    // PostgreSQL: the rows are locked where they are read again (a window cannot be locked), with the conditions
    // that another claimer's commit may have changed, so that they are checked again on the row's newest version.
    const claimable =
      d.name === 'postgres'
        ? db
            .selectFrom('webhook_deliveries as x')
            .select('x.id')
            .where('x.id', 'in', heads)
            .where('x.status', '=', 'pending')
            .where((w) => w.or([w('x.lease_until', 'is', null), w('x.lease_until', '<', now)]))
            .forUpdate()
            .skipLocked()
        : heads;
    let claimed = await db
      .updateTable('webhook_deliveries')
      .set({ lease_owner: owner, lease_until: d.date(new Date(at.getTime() + leaseMs)) })
      .where('id', 'in', claimable)
      .returning(['id', 'endpoint_id', 'event_type', 'payload', 'attempts', 'created_at'])
      .execute();
    if (!claimed.length) return [];
    const withheld = await this.#withhold(db, claimed, at);
    if (withheld.size) claimed = claimed.filter((c) => !withheld.has(c.id));
    if (!claimed.length) return [];
    const endpoints = new Map(
      (
        await db
          .selectFrom('webhook_endpoints')
          .select(['id', 'user_id', 'url', 'secret', 'previous_secret', 'previous_secret_until'])
          .where('id', 'in', [...new Set(claimed.map((c) => c.endpoint_id))])
          .execute()
      ).map((e) => [e.id, e]),
    );
    return claimed.flatMap((c) => {
      const e = endpoints.get(c.endpoint_id);
      if (!e) return []; // deleted meanwhile (its deliveries went with it)
      const previous =
        e.previous_secret && e.previous_secret_until !== null && d.readDate(e.previous_secret_until) > at
          ? [e.previous_secret]
          : [];
      return [
        {
          id: c.id,
          endpointId: c.endpoint_id,
          accountId: e.user_id,
          url: e.url,
          payload: c.payload,
          attempts: Number(c.attempts),
          secrets: [e.secret, ...previous],
          createdAt: d.readDate(c.created_at),
        },
      ];
    });
  }

  /**
   * Moderation events claimed for an endpoint that may no longer have them (its owner is no longer an admin, or the
   * token that configured it was revoked, ran out or lost `moderate` since the event was queued): never sent, closed
   * as failed with the reason. The endpoint stays enabled (its later events are not queued: outbox.ts).
   */
  async #withhold(
    db: Kysely<DB>,
    claimed: readonly { id: string; endpoint_id: string; event_type: string }[],
    at: Date,
  ): Promise<Set<string>> {
    const admin = claimed.filter((c) => isAdminEvent(c.event_type as WebhookEventType));
    if (!admin.length) return new Set();
    const d = this.#db.dialect;
    const allowed = new Set(
      (
        await moderationEndpoints(db, d, at)
          .where('e.id', 'in', [...new Set(admin.map((c) => c.endpoint_id))])
          .execute()
      ).map((e) => e.id),
    );
    const withheld = admin.filter((c) => !allowed.has(c.endpoint_id)).map((c) => c.id);
    if (!withheld.length) return new Set();
    await db
      .updateTable('webhook_deliveries')
      .set({
        status: 'failed',
        last_error: 'withheld: the endpoint is no longer allowed moderation events (admin role or moderate scope gone)',
        lease_owner: null,
        lease_until: null,
      })
      .where('id', 'in', withheld)
      .where('status', '=', 'pending')
      .execute();
    return new Set(withheld);
  }

  async backlog(): Promise<{ pending: number; backingOff: number }> {
    // Only a head is ever attempted: a pending delivery with failed attempts is an endpoint waiting for its retry.
    const row = await this.#db
      .db()
      .selectFrom('webhook_deliveries')
      .select((eb) => [
        eb.fn.countAll().as('pending'),
        eb.fn.sum(eb.case().when('attempts', '>', 0).then(1).else(0).end()).as('backing_off'),
      ])
      .where('status', '=', 'pending')
      .executeTakeFirstOrThrow();
    return { pending: Number(row.pending), backingOff: Number(row.backing_off ?? 0) };
  }

  async delivered(id: string, _owner: string, status: number, at: Date): Promise<void> {
    const d = this.#db.dialect;
    // Whoever holds the lease now: the event reached the receiver, so no other attempt should follow.
    await this.#db
      .db()
      .updateTable('webhook_deliveries')
      .set((eb) => ({
        status: 'delivered',
        attempts: eb('attempts', '+', 1),
        last_status: status,
        last_error: null,
        last_attempt_at: d.date(at),
        delivered_at: d.date(at),
        lease_owner: null,
        lease_until: null,
      }))
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .execute();
  }

  async failed(
    id: string,
    owner: string,
    outcome: { status: number | null; error: string },
    at: Date,
    retryAt: Date | null,
    reason: string,
  ): Promise<void> {
    const d = this.#db.dialect;
    await this.#db.transaction(async (_em, db) => {
      const done = await db
        .updateTable('webhook_deliveries')
        .set((eb) => ({
          attempts: eb('attempts', '+', 1),
          last_status: outcome.status,
          last_error: outcome.error.slice(0, 500),
          last_attempt_at: d.date(at),
          lease_owner: null,
          lease_until: null,
          ...(retryAt ? { next_attempt_at: d.date(retryAt) } : { status: 'failed' as const }),
        }))
        .where('id', '=', id)
        .where('lease_owner', '=', owner)
        .where('status', '=', 'pending')
        .returning('endpoint_id')
        .execute();
      if (retryAt || !done[0]) return;
      await db
        .updateTable('webhook_endpoints')
        .set({ enabled: d.bool(false), disabled_reason: reason.slice(0, 500), updated_at: d.date(at) })
        .where('id', '=', done[0].endpoint_id)
        .execute();
    });
  }

  #own(db: Kysely<DB>, userId: string, id: string) {
    return db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .executeTakeFirst();
  }

  #record(r: EndpointRow): WebhookRecord {
    const d = this.#db.dialect;
    const until = r.previous_secret_until === null ? null : d.readDate(r.previous_secret_until);
    return {
      id: r.id,
      userId: r.user_id,
      url: r.url,
      description: r.description,
      events: eventsOf(r.events),
      enabled: d.readBool(r.enabled),
      disabledReason: r.disabled_reason,
      previousSecretUntil: until,
      createdAt: d.readDate(r.created_at),
      updatedAt: d.readDate(r.updated_at),
    };
  }
}
