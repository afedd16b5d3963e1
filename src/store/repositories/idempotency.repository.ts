import type { Claim, ClaimResult, IdempotencyStore, StoredResponse } from '../../domain/idempotency.ts';
import type { Database } from '../database.ts';
import { isUniqueViolation } from '../dialect.ts';

/** A claim written before leases existed (m006) has no lease: it counted as abandoned after this long. */
const LEGACY_LEASE_MS = 2 * 60 * 1000;

export class IdempotencyRepository implements IdempotencyStore {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  async claim(
    userId: string,
    key: string,
    requestHash: string,
    claim: Claim,
    expiredBefore: Date,
  ): Promise<ClaimResult> {
    const d = this.#db.dialect;
    const db = this.#db.db();
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await db
          .insertInto('idempotency_keys')
          .values({
            user_id: userId,
            key,
            request_hash: requestHash,
            status: null,
            body: null,
            created_at: d.date(claim.at),
            claim_token: claim.token,
            lease_until: d.date(claim.leaseUntil),
          })
          .execute();
        return { state: 'claimed' };
      } catch (e) {
        if (!isUniqueViolation(e)) throw e;
      }
      const row = await db
        .selectFrom('idempotency_keys')
        .selectAll()
        .where('user_id', '=', userId)
        .where('key', '=', key)
        .executeTakeFirst();
      if (!row) continue; // released meanwhile: try to claim again
      const since = d.readDate(row.created_at);
      if (since < expiredBefore) {
        await db
          .deleteFrom('idempotency_keys')
          .where('user_id', '=', userId)
          .where('key', '=', key)
          .where('created_at', '=', row.created_at)
          .execute();
        continue;
      }
      if (row.status === null) {
        const leaseUntil =
          row.lease_until === null ? new Date(since.getTime() + LEGACY_LEASE_MS) : d.readDate(row.lease_until);
        return { state: 'pending', requestHash: row.request_hash, token: row.claim_token, leaseUntil };
      }
      // `complete` writes the status and the body together: a record with a status has its body.
      return {
        state: 'done',
        requestHash: row.request_hash,
        response: { status: Number(row.status), body: row.body ?? '' },
      };
    }
    throw new Error('idempotency key claim did not settle');
  }

  async takeOver(userId: string, key: string, previous: string | null, claim: Claim): Promise<boolean> {
    const d = this.#db.dialect;
    // One statement: of several waiters only one matches, and a holder that renewed meanwhile is not taken over.
    const r = await this.#pending(userId, key, previous)
      .where((eb) =>
        eb.or([
          eb('lease_until', '<', d.date(claim.at)),
          eb.and([
            eb('lease_until', 'is', null),
            eb('created_at', '<', d.date(new Date(claim.at.getTime() - LEGACY_LEASE_MS))),
          ]),
        ]),
      )
      .set({ claim_token: claim.token, lease_until: d.date(claim.leaseUntil), created_at: d.date(claim.at) })
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async renew(userId: string, key: string, token: string, leaseUntil: Date): Promise<boolean> {
    const r = await this.#pending(userId, key, token)
      .set({ lease_until: this.#db.dialect.date(leaseUntil) })
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async complete(userId: string, key: string, token: string, response: StoredResponse): Promise<boolean> {
    const r = await this.#pending(userId, key, token)
      .set({ status: response.status, body: response.body })
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async release(userId: string, key: string, token: string): Promise<void> {
    await this.#db
      .db()
      .deleteFrom('idempotency_keys')
      .where('user_id', '=', userId)
      .where('key', '=', key)
      .where('claim_token', '=', token)
      .where('status', 'is', null)
      .execute();
  }

  async exists(userId: string, key: string, expiredBefore: Date): Promise<boolean> {
    const row = await this.#db
      .db()
      .selectFrom('idempotency_keys')
      .select('created_at')
      .where('user_id', '=', userId)
      .where('key', '=', key)
      .executeTakeFirst();
    return Boolean(row) && this.#db.dialect.readDate(row!.created_at) >= expiredBefore;
  }

  async purge(expiredBefore: Date): Promise<number> {
    const r = await this.#db
      .db()
      .deleteFrom('idempotency_keys')
      .where('created_at', '<', this.#db.dialect.date(expiredBefore))
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  /** An update of the record while `token` holds it and it is still pending (the fencing condition). */
  #pending(userId: string, key: string, token: string | null) {
    return this.#db
      .db()
      .updateTable('idempotency_keys')
      .where('user_id', '=', userId)
      .where('key', '=', key)
      .where('claim_token', token === null ? 'is' : '=', token)
      .where('status', 'is', null);
  }
}
