import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp } from '../support/app.ts';
import { registerUser } from '../support/users.ts';
import { IdempotencyRepository } from '../../src/store/repositories/idempotency.repository.ts';

test('an abandoned Idempotency-Key is taken over once: a second, late takeover leaves the new claim alone', async () => {
  const app = await startApp();
  try {
    const user = await registerUser(app.api);
    const store = new IdempotencyRepository(app.composed.db);
    const old = new Date(Date.now() - 10 * 60_000);
    const expiredBefore = new Date(Date.now() - 24 * 3600_000);
    assert.equal((await store.claim(user.id, 'k1', 'h', old, expiredBefore)).state, 'claimed');
    // Two waiters both saw the abandoned claim (since = old). The first takes it over…
    const seen = await store.claim(user.id, 'k1', 'h', new Date(), expiredBefore);
    assert.equal(seen.state, 'pending');
    await store.release(user.id, 'k1', old);
    const fresh = new Date();
    assert.equal((await store.claim(user.id, 'k1', 'h', fresh, expiredBefore)).state, 'claimed');
    // …the second, late, releases what it saw: the first's new claim must survive.
    await store.release(user.id, 'k1', old);
    const after = await store.claim(user.id, 'k1', 'h', new Date(), expiredBefore);
    assert.equal(after.state, 'pending', 'still held by the first waiter');
    // The holder's own release frees it.
    await store.release(user.id, 'k1', fresh);
    assert.equal((await store.claim(user.id, 'k1', 'h', new Date(), expiredBefore)).state, 'claimed');
  } finally {
    await app.close();
  }
});
