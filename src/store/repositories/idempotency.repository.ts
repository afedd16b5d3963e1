import type { ClaimResult, IdempotencyStore, StoredResponse } from '../../domain/idempotency.ts';
import type { Database } from '../database.ts';
import { isUniqueViolation } from '../dialect.ts';

export class IdempotencyRepository implements IdempotencyStore {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  async claim(userId: string, key: string, requestHash: string, now: Date, expiredBefore: Date): Promise<ClaimResult> {
    const d = this.#db.dialect;
    const db = this.#db.db();
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await db.insertInto('idempotency_keys').values({ user_id: userId, key, request_hash: requestHash, status: null, body: null, created_at: d.date(now) }).execute();
        return { state: 'claimed' };
      } catch (e) {
        if (!isUniqueViolation(e)) throw e;
      }
      const row = await db.selectFrom('idempotency_keys').selectAll().where('user_id', '=', userId).where('key', '=', key).executeTakeFirst();
      if (!row) continue; // released meanwhile: try to claim again
      const since = d.readDate(row.created_at);
      if (since < expiredBefore) {
        await db.deleteFrom('idempotency_keys').where('user_id', '=', userId).where('key', '=', key).where('created_at', '=', row.created_at).execute();
        continue;
      }
      if (row.status === null) return { state: 'pending', requestHash: row.request_hash, since };
      return { state: 'done', requestHash: row.request_hash, response: { status: Number(row.status), body: row.body } };
    }
    throw new Error('idempotency key claim did not settle');
  }

  async complete(userId: string, key: string, response: StoredResponse): Promise<void> {
    await this.#db.db().updateTable('idempotency_keys').set({ status: response.status, body: response.body }).where('user_id', '=', userId).where('key', '=', key).execute();
  }

  async release(userId: string, key: string, since: Date): Promise<void> {
    await this.#db
      .db()
      .deleteFrom('idempotency_keys')
      .where('user_id', '=', userId)
      .where('key', '=', key)
      .where('created_at', '=', this.#db.dialect.date(since))
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
    const r = await this.#db.db().deleteFrom('idempotency_keys').where('created_at', '<', this.#db.dialect.date(expiredBefore)).executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
