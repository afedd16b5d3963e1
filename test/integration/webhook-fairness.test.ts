/**
 * Webhook deliveries are isolated per endpoint and fair across accounts (issue 44 item 4), on the real database,
 * SQLite and PostgreSQL, with the real sender (src/net/webhook-post.ts):
 *   - the claim gives every account with room its oldest due head before a second one of any, and no account more
 *     than its room;
 *   - while one account's 24 endpoints accept the connection and never answer, another account's event is
 *     delivered while those requests are all still open (before the batch loop this took three timeouts);
 *   - an endpoint is its own circuit: after a failed attempt it is skipped until the schedule's wait passed, then its
 *     head alone is sent as the probe; the events behind it stay queued and follow in order once it goes through.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { Database } from '../../src/store/database.ts';
import { withStoreDatabase } from '../support/store-db.ts';
import { emitEvent } from '../../src/store/webhooks/outbox.ts';
import { WebhookRepository } from '../../src/store/webhooks/webhook.repository.ts';
import { WebhookDispatcher } from '../../src/domain/webhooks/dispatcher.ts';
import { postWebhook } from '../../src/net/webhook-post.ts';
import { insertUser } from '../support/users.ts';
import { eventually, startReceiver } from '../support/webhook-receiver.ts';

const AT = new Date(Date.UTC(2026, 1, 1));
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

const withDatabase = (fn: (db: Database) => Promise<void>) => withStoreDatabase('webhook-fair', AT, (db) => fn(db));

async function addEndpoints(db: Database, userId: string, urls: string[]): Promise<string[]> {
  const repo = new WebhookRepository(db);
  const ids: string[] = [];
  for (const url of urls) {
    const w = await repo.create({
      id: randomUUID(),
      userId,
      url,
      description: '',
      events: ['upload.processed'],
      secret: SECRET,
      at: AT,
    });
    ids.push(w.id);
  }
  return ids;
}

const emit = (db: Database, ownerId: string, at = AT) =>
  db.transaction((_em, tx) => emitEvent(tx, db.dialect, { type: 'upload.processed', ownerId, data: {}, at }));

test('the claim shares out among accounts: oldest head of each first, none beyond its room', async () => {
  await withDatabase(async (db) => {
    const [a, b, c] = [await insertUser(db, AT), await insertUser(db, AT), await insertUser(db, AT)];
    const urls = (n: number) => Array.from({ length: n }, (_, i) => `https://hooks.example.com/${i}`);
    const endpointsOf = new Map<string, string>();
    for (const [user, n] of [
      [a, 6],
      [b, 1],
      [c, 2],
    ] as const)
      for (const id of await addEndpoints(db, user, urls(n))) endpointsOf.set(id, user);
    await emit(db, a, AT); // a's events are the oldest: a plain "oldest first" would give a every slot
    await emit(db, b, new Date(AT.getTime() + 1));
    await emit(db, c, new Date(AT.getTime() + 2));
    const repo = new WebhookRepository(db);
    const now = new Date(AT.getTime() + 1000);
    const first = await repo.claim('x', 60_000, 3, now, { perAccount: 2, busy: new Map() });
    assert.deepEqual(first.map((d) => d.accountId).sort(), [a, b, c].sort(), 'one head of each account first');
    // a holds 1 of its 2; c holds 1 of its 2: a and c get one more each, however large the limit.
    const busy = new Map([
      [a, 1],
      [c, 1],
    ]);
    const second = await repo.claim('x', 60_000, 10, now, { perAccount: 2, busy });
    assert.deepEqual(second.map((d) => d.accountId).sort(), [a, c].sort());
    const third = await repo.claim('x', 60_000, 10, now, { perAccount: 2, busy: new Map([[a, 2]]) });
    assert.deepEqual(third, [], 'a is at its room; b and c have nothing due');
    for (const d of [...first, ...second]) assert.equal(endpointsOf.get(d.endpointId), d.accountId);
  });
});

/** The account's deliveries: pending, attempted, delivered. */
async function statuses(db: Database, userId: string) {
  const rows = await db
    .db()
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
    .select(['d.status', 'd.attempts'])
    .where('e.user_id', '=', userId)
    .execute();
  return {
    pending: rows.filter((r) => r.status === 'pending').length,
    attempted: rows.filter((r) => r.status === 'pending' && Number(r.attempts) > 0).length,
    delivered: rows.filter((r) => r.status === 'delivered').length,
  };
}

/** A server that accepts every request and never answers; counts the requests open and those the sender gave up. */
async function startHangingServer() {
  const state = { received: 0, closed: 0 };
  const server: Server = createServer((req, res) => {
    state.received++;
    req.resume();
    res.on('close', () => state.closed++); // the sender gave up (the request's own 'close' comes with its end)
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    state,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

test("one account's endpoints all hang: another account's event is delivered while they are still open", async () => {
  const hanging = await startHangingServer();
  let atArrival: { received: number; closed: number } | null = null;
  const receiver = await startReceiver({ beforeAnswer: () => void (atArrival ??= { ...hanging.state }) });
  const stop = new AbortController();
  try {
    await withDatabase(async (db) => {
      const attacker = await insertUser(db, AT);
      const other = await insertUser(db, AT);
      await addEndpoints(
        db,
        attacker,
        Array.from({ length: 24 }, (_, i) => `${hanging.url}/hook-${i}`),
      );
      await addEndpoints(db, other, [`${receiver.url}/other`]);
      // The attacker's two uploads, then the other account's: its delivery is the last one due.
      await emit(db, attacker);
      await emit(db, attacker);
      await emit(db, other, new Date(AT.getTime() + 1));
      const timeoutMs = 30_000; // far longer than the test needs: a hanging request is never given up meanwhile
      const dispatcher = new WebhookDispatcher({
        store: new WebhookRepository(db),
        clock: { now: () => new Date() },
        owner: 'test',
        schedule: [5_000],
        leaseMs: 2 * timeoutMs,
        concurrency: 8,
        perAccount: 4,
        pollMs: 100,
        send: (url, headers, body, signal) =>
          postWebhook(url, headers, body, { timeoutMs, allowPrivate: true, signal }),
      });
      const running = dispatcher.run(stop.signal);
      try {
        await eventually(() => receiver.delivered('/other').length === 1, 120_000, "the other account's delivery");
        await eventually(async () => (await statuses(db, other)).delivered === 1, 10_000, 'the delivery recorded');
      } finally {
        stop.abort();
        await running;
      }
      assert.ok(atArrival, 'delivered');
      assert.equal(atArrival.closed, 0, 'no hanging request had been given up when the other delivery arrived');
      assert.ok(atArrival.received <= 4, `the attacker held ${atArrival.received} slots, its room is 4`);
      // Nothing of the attacker's was lost or counted as an attempt: its deliveries wait, in order, for a next run.
      assert.deepEqual(await statuses(db, attacker), { pending: 48, attempted: 0, delivered: 0 });
    });
  } finally {
    stop.abort();
    await receiver.close();
    await hanging.close();
  }
});

test('a failing endpoint is its own circuit: skipped until its backoff passed, then its head probes', async () => {
  const receiver = await startReceiver();
  try {
    await withDatabase(async (db) => {
      const user = await insertUser(db, AT);
      await addEndpoints(db, user, [`${receiver.url}/c`]);
      for (let i = 0; i < 3; i++) await emit(db, user);
      let now = AT.getTime() + 1000;
      const lags: number[] = [];
      const dispatcher = new WebhookDispatcher({
        store: new WebhookRepository(db),
        clock: { now: () => new Date(now) },
        owner: 'test',
        schedule: [5_000, 60_000],
        leaseMs: 20_000,
        pollMs: 50,
        send: (url, headers, body, signal) =>
          postWebhook(url, headers, body, { timeoutMs: 10_000, allowPrivate: true, signal }),
        events: { delivered: (_d, lagMs) => void lags.push(lagMs) },
      });
      const run = () => dispatcher.run(new AbortController().signal);
      const sent = () => receiver.all.filter((r) => r.path === '/c');
      receiver.down('/c', true);
      assert.equal(await run(), 1, 'the head only: the rest wait behind it');
      now += 4_000;
      assert.equal(await run(), 0, 'open: nothing is sent before the backoff passed');
      now += 2_000;
      assert.equal(await run(), 1, 'half-open: the head alone, as the probe');
      assert.equal(sent().length, 2);
      assert.equal(sent()[1]!.headers['webhook-id'], sent()[0]!.headers['webhook-id']);
      receiver.down('/c', false);
      now += 59_000;
      assert.equal(await run(), 0, 'the second wait is longer');
      now += 2_000;
      assert.equal(await run(), 3, 'closed: the probe went through, and the queue behind it follows in order');
      const ids = receiver.delivered('/c').map((r) => String(r.headers['webhook-id']));
      const log = await new WebhookRepository(db).deliveries(
        (await db.db().selectFrom('webhook_endpoints').select('id').executeTakeFirstOrThrow()).id,
        0,
        10,
      );
      assert.deepEqual(ids, log.map((d) => d.id).reverse());
      assert.deepEqual(
        log.map((d) => [d.status, d.attempts]),
        [
          ['delivered', 1],
          ['delivered', 1],
          ['delivered', 3],
        ],
      );
      assert.deepEqual(lags, [68_000, 68_000, 68_000], 'each lag runs from its event (queued at AT)');
    });
  } finally {
    await receiver.close();
  }
});
