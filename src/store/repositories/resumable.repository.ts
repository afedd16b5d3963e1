import type { ResumableRow, ResumableStatus, ResumableStore } from '../../domain/uploads/resumable.ts';
import { isUuid } from '../../domain/ids.ts';
import type { Database } from '../database.ts';
import { isUniqueViolation } from '../dialect.ts';

type Row = {
  id: string;
  user_id: string;
  length: number;
  received: number;
  fields: string;
  idempotency_key: string | null;
  status: string;
  result_status: number | null;
  result_body: string | null;
  expires_at: unknown;
  lease_until: unknown;
};

/** The rows of tus uploads in progress (m028): offsets, leases, results. */
export class ResumableRepository implements ResumableStore {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  #row(r: Row): ResumableRow {
    const d = this.#db.dialect;
    return {
      id: r.id,
      userId: r.user_id,
      length: Number(r.length),
      received: Number(r.received),
      fields: JSON.parse(r.fields) as ResumableRow['fields'],
      idempotencyKey: r.idempotency_key,
      status: r.status as ResumableStatus,
      result: r.result_status === null ? null : { status: Number(r.result_status), body: r.result_body ?? '' },
      expiresAt: d.readDate(r.expires_at),
      leaseUntil: r.lease_until === null ? null : d.readDate(r.lease_until),
    };
  }

  async insert(row: ResumableRow & { createdAt: Date }) {
    const d = this.#db.dialect;
    try {
      await this.#db
        .db()
        .insertInto('resumable_uploads')
        .values({
          id: row.id,
          user_id: row.userId,
          length: row.length,
          received: row.received,
          fields: JSON.stringify(row.fields),
          idempotency_key: row.idempotencyKey,
          status: row.status,
          result_status: null,
          result_body: null,
          created_at: d.date(row.createdAt),
          expires_at: d.date(row.expiresAt),
          lease_until: null,
        })
        .execute();
      return { ok: true as const };
    } catch (e) {
      if (!isUniqueViolation(e) || !row.idempotencyKey) throw e;
      const existing = await this.findByKey(row.userId, row.idempotencyKey);
      if (!existing) throw e;
      return { ok: false as const, existing };
    }
  }

  async find(id: string): Promise<ResumableRow | null> {
    // An id from a URL: one that is not a UUID names no upload (and a NUL in it is an error on PostgreSQL).
    if (!isUuid(id)) return null;
    const r = await this.#db.db().selectFrom('resumable_uploads').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? this.#row(r) : null;
  }

  async findByKey(userId: string, key: string): Promise<ResumableRow | null> {
    const r = await this.#db
      .db()
      .selectFrom('resumable_uploads')
      .selectAll()
      .where('user_id', '=', userId)
      .where('idempotency_key', '=', key)
      .executeTakeFirst();
    return r ? this.#row(r) : null;
  }

  async countOpen(userId: string, now: Date): Promise<number> {
    const r = await this.#db
      .db()
      .selectFrom('resumable_uploads')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('user_id', '=', userId)
      .where('status', '=', 'receiving')
      .where('expires_at', '>', this.#db.dialect.date(now))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  lease(id: string, status: ResumableStatus, now: Date, until: Date): Promise<boolean> {
    return this.#setLease(id, until, { status, freeAt: now });
  }

  renew(id: string, held: Date, until: Date): Promise<boolean> {
    return this.#setLease(id, until, { held });
  }

  async release(id: string, held: Date): Promise<void> {
    await this.#setLease(id, null, { held });
  }

  /**
   * Sets the lease to `until` where it is free (none, or lapsed at `freeAt`) while the upload is in `status`, or
   * where it still is `held` (ours): whether it did.
   */
  async #setLease(
    id: string,
    until: Date | null,
    only: { status: ResumableStatus; freeAt: Date } | { held: Date },
  ): Promise<boolean> {
    const d = this.#db.dialect;
    const q = this.#db
      .db()
      .updateTable('resumable_uploads')
      .set({ lease_until: until && d.date(until) })
      .where('id', '=', id);
    const r = await (
      'held' in only
        ? q.where('lease_until', '=', d.date(only.held))
        : q
            .where('status', '=', only.status)
            .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', d.date(only.freeAt))]))
    ).executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async advance(id: string, from: number, to: number): Promise<boolean> {
    const r = await this.#db
      .db()
      .updateTable('resumable_uploads')
      .set({ received: to })
      .where('id', '=', id)
      .where('received', '=', from)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async setStatus(id: string, status: ResumableStatus, leaseUntil: Date | null): Promise<void> {
    await this.#db
      .db()
      .updateTable('resumable_uploads')
      .set({ status, lease_until: leaseUntil && this.#db.dialect.date(leaseUntil) })
      .where('id', '=', id)
      .execute();
  }

  async finish(id: string, result: { status: number; body: string }, expiresAt: Date): Promise<void> {
    await this.#db
      .db()
      .updateTable('resumable_uploads')
      .set((eb) => ({
        status: 'done',
        received: eb.ref('length'),
        result_status: result.status,
        result_body: result.body,
        expires_at: this.#db.dialect.date(expiresAt),
        lease_until: null,
      }))
      .where('id', '=', id)
      .execute();
  }

  async delete(id: string): Promise<void> {
    await this.#db.db().deleteFrom('resumable_uploads').where('id', '=', id).execute();
  }

  async expired(now: Date, limit: number): Promise<ResumableRow[]> {
    const d = this.#db.dialect;
    const rows = await this.#db
      .db()
      .selectFrom('resumable_uploads')
      .selectAll()
      .where('expires_at', '<=', d.date(now))
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', d.date(now))]))
      .orderBy('expires_at')
      .limit(limit)
      .execute();
    return rows.map((r) => this.#row(r as Row));
  }

  async existing(ids: string[]): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const rows = await this.#db.db().selectFrom('resumable_uploads').select('id').where('id', 'in', ids).execute();
    return new Set(rows.map((r) => r.id));
  }

  async held(now: Date): Promise<{ open: number; bytes: number }> {
    const r = await this.#db
      .db()
      .selectFrom('resumable_uploads')
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.sum<number>('received').as('bytes')])
      .where('status', '=', 'receiving')
      .where('expires_at', '>', this.#db.dialect.date(now))
      .executeTakeFirstOrThrow();
    return { open: Number(r.n), bytes: Number(r.bytes ?? 0) };
  }
}
