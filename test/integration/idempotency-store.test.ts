import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp } from '../support/app.ts';
import { registerUser } from '../support/users.ts';
import { IdempotencyRepository } from '../../src/store/repositories/idempotency.repository.ts';

const LEASE = 10_000;
const claimAt = (token: string, at: number) => ({ token, at: new Date(at), leaseUntil: new Date(at + LEASE) });

test(
  'an Idempotency-Key claim is fenced by its token: a lapsed lease is taken over once, ' +
    'and the old holder can then neither renew, complete nor release it',
  async () => {
    const app = await startApp();
    try {
      const user = await registerUser(app.api);
      const store = new IdempotencyRepository(app.composed.db);
      const t0 = Date.now();
      const expiredBefore = new Date(t0 - 24 * 3600_000);
      assert.equal((await store.claim(user.id, 'k1', 'h', claimAt('old', t0), expiredBefore)).state, 'claimed');
      const seen = await store.claim(user.id, 'k1', 'h', claimAt('x', t0 + 1000), expiredBefore);
      assert.equal(seen.state, 'pending');
      assert.ok(seen.state === 'pending' && seen.token === 'old' && seen.leaseUntil.getTime() === t0 + LEASE);

      // Within the lease nobody takes over; the holder renews.
      assert.equal(await store.takeOver(user.id, 'k1', 'old', claimAt('early', t0 + LEASE - 1)), false);
      assert.equal(await store.renew(user.id, 'k1', 'old', new Date(t0 + 2 * LEASE)), true);
      assert.equal(
        await store.takeOver(user.id, 'k1', 'old', claimAt('early', t0 + LEASE + 1)),
        false,
        'a renewed lease is not taken over',
      );

      // It lapses: of two waiters that saw it, one takes it over.
      const late = t0 + 2 * LEASE + 1;
      const won = await Promise.all([
        store.takeOver(user.id, 'k1', 'old', claimAt('w1', late)),
        store.takeOver(user.id, 'k1', 'old', claimAt('w2', late)),
      ]);
      assert.deepEqual(won.filter(Boolean).length, 1, `exactly one takeover: ${won}`);
      const winner = won[0] ? 'w1' : 'w2';

      // The old holder is fenced out.
      assert.equal(await store.renew(user.id, 'k1', 'old', new Date(late + LEASE)), false);
      assert.equal(await store.complete(user.id, 'k1', 'old', { status: 201, body: 'old' }), false);
      await store.release(user.id, 'k1', 'old');
      const now = await store.claim(user.id, 'k1', 'h', claimAt('y', late + 10), expiredBefore);
      assert.ok(now.state === 'pending' && now.token === winner, 'the new claim survived the old holder');

      // The new holder records its answer.
      assert.equal(await store.complete(user.id, 'k1', winner, { status: 201, body: 'new' }), true);
      const done = await store.claim(user.id, 'k1', 'h', claimAt('z', late + 20), expiredBefore);
      assert.deepEqual(done, { state: 'done', requestHash: 'h', response: { status: 201, body: 'new' } });
      // Its own release frees a pending key (and only a pending one).
      await store.release(user.id, 'k1', winner);
      assert.equal((await store.claim(user.id, 'k1', 'h', claimAt('z', late + 30), expiredBefore)).state, 'done');
      assert.equal((await store.claim(user.id, 'k2', 'h', claimAt('a', late), expiredBefore)).state, 'claimed');
      await store.release(user.id, 'k2', 'a');
      assert.equal((await store.claim(user.id, 'k2', 'h', claimAt('b', late), expiredBefore)).state, 'claimed');
    } finally {
      await app.close();
    }
  },
);

test(
  'a claim written before leases existed (no token, no lease) lapses two minutes after it was made, ' +
    'as it always did',
  async () => {
    const app = await startApp();
    try {
      const user = await registerUser(app.api);
      const store = new IdempotencyRepository(app.composed.db);
      const db = app.composed.db;
      const made = Date.now() - 60_000;
      await db
        .db()
        .insertInto('idempotency_keys')
        .values({
          user_id: user.id,
          key: 'legacy',
          request_hash: 'h',
          status: null,
          body: null,
          created_at: db.dialect.date(new Date(made)),
        })
        .execute();
      const seen = await store.claim(user.id, 'legacy', 'h', claimAt('n', Date.now()), new Date(0));
      assert.ok(seen.state === 'pending' && seen.token === null && seen.leaseUntil.getTime() === made + 120_000);
      assert.equal(await store.takeOver(user.id, 'legacy', null, claimAt('n', made + 119_000)), false);
      assert.equal(await store.takeOver(user.id, 'legacy', null, claimAt('n', made + 121_000)), true);
      assert.equal(await store.complete(user.id, 'legacy', 'n', { status: 201, body: 'b' }), true);
    } finally {
      await app.close();
    }
  },
);
