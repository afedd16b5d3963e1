/**
 * The webhook outbox's claim (src/store/webhooks/webhook.repository.ts) on the real database, SQLite and PostgreSQL,
 * through two connections as two processes would hold them:
 *   - two claimers running at once never get the same delivery, and every delivery is claimed;
 *   - an endpoint's deliveries are claimed in their order, each only after the one before was delivered or given
 *     up (a leased or retrying head holds back the rest);
 *   - a lease that ran out (its process died mid-delivery) lets another claimer take the delivery again;
 *   - an event is queued only in its change's transaction: a rollback leaves nothing to deliver.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { emitEvent } from '../../src/store/webhooks/outbox.ts';
import { WebhookRepository } from '../../src/store/webhooks/webhook.repository.ts';
import { JobRepository } from '../../src/store/moderation/job.repository.ts';
import { similarityIndexFor } from '../../src/store/similarity/similarity-index.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres } from '../support/env.ts';
import { insertUser } from '../support/users.ts';

const AT = new Date(Date.UTC(2026, 1, 1));
const LEASE = 60_000;

async function withTwoConnections(fn: (a: Database, b: Database) => Promise<void>) {
  const dir = await mkdtemp(join(tmpdir(), 'pixvote-webhooks-'));
  const pg = onPostgres ? await createTestDatabase() : null;
  const opts = { databaseUrl: pg?.url ?? null, sqlitePath: join(dir, 'app.db') };
  const a = await openDatabase(opts);
  const b = await openDatabase(opts);
  try {
    await fn(a, b);
  } finally {
    await a.close();
    await b.close();
    await pg?.drop();
    await rm(dir, { recursive: true, force: true });
  }
}

const addUser = (db: Database) => insertUser(db, AT);

async function addEndpoints(db: Database, userId: string, n: number): Promise<string[]> {
  const repo = new WebhookRepository(db);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const w = await repo.create({
      id: randomUUID(),
      userId,
      url: `https://hooks.example.com/${i}`,
      description: '',
      events: ['upload.processed'],
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      at: AT,
    });
    ids.push(w.id);
  }
  return ids;
}

/** `n` events for the user's endpoints, each in its own transaction, as changes write them. */
async function emit(db: Database, userId: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await db.transaction((_em, tx) =>
      emitEvent(tx, db.dialect, { type: 'upload.processed', ownerId: userId, data: { i }, at: AT }),
    );
  }
}

async function seqOf(db: Database): Promise<Map<string, { endpoint: string; seq: number }>> {
  const rows = await db.db().selectFrom('webhook_deliveries').select(['id', 'endpoint_id', 'seq']).execute();
  return new Map(rows.map((r) => [r.id, { endpoint: r.endpoint_id, seq: Number(r.seq) }]));
}

test('two claimers at once never get the same delivery; each endpoint is claimed in order', async () => {
  await withTwoConnections(async (a, b) => {
    const user = await addUser(a);
    await addEndpoints(a, user, 6);
    await emit(a, user, 8); // 48 deliveries, 8 per endpoint
    const claimed: Array<{ owner: string; id: string }> = [];
    const run = async (db: Database, owner: string) => {
      const repo = new WebhookRepository(db);
      let idle = 0;
      while (idle < 3) {
        const got = await repo.claim(owner, LEASE, 4, new Date(AT.getTime() + 1000));
        if (!got.length) {
          idle++;
          await new Promise((r) => setTimeout(r, 5));
          continue;
        }
        idle = 0;
        for (const d of got) {
          claimed.push({ owner, id: d.id });
          await repo.delivered(d.id, owner, 200, AT);
        }
      }
    };
    await Promise.all([run(a, 'a'), run(b, 'b'), run(a, 'a2'), run(b, 'b2')]);
    const ids = claimed.map((c) => c.id);
    assert.equal(new Set(ids).size, ids.length, 'no delivery claimed twice');
    assert.equal(ids.length, 48, 'every delivery claimed');
    assert.ok(new Set(claimed.map((c) => c.owner)).size > 1, 'both connections took part');
    const seqs = await seqOf(a);
    const perEndpoint = new Map<string, number[]>();
    for (const id of ids) {
      const s = seqs.get(id)!;
      perEndpoint.set(s.endpoint, [...(perEndpoint.get(s.endpoint) ?? []), s.seq]);
    }
    for (const [endpoint, order] of perEndpoint) {
      assert.deepEqual(order, [1, 2, 3, 4, 5, 6, 7, 8], `endpoint ${endpoint}: claimed in order`);
    }
  });
});

test('a leased or retrying head holds back its endpoint; a lease that ran out is claimed again', async () => {
  await withTwoConnections(async (a, b) => {
    const user = await addUser(a);
    await addEndpoints(a, user, 1);
    await emit(a, user, 2);
    const ra = new WebhookRepository(a);
    const rb = new WebhookRepository(b);
    const t = (ms: number) => new Date(AT.getTime() + ms);
    const [head] = await ra.claim('a', LEASE, 10, t(0));
    assert.ok(head);
    assert.deepEqual(await rb.claim('b', LEASE, 10, t(1000)), [], 'the head is leased; the next one waits');
    // Process a "dies": its lease runs out and b takes the same delivery.
    const again = await rb.claim('b', LEASE, 10, t(LEASE + 1));
    assert.deepEqual(
      again.map((d) => d.id),
      [head.id],
    );
    // b's attempt fails: retried in 5 s; until then nothing of the endpoint is claimed.
    await rb.failed(head.id, 'b', { status: 500, error: 'answered HTTP 500' }, t(LEASE + 2), t(LEASE + 5002), 'x');
    // a's late answer for a lease it lost changes nothing.
    await ra.failed(head.id, 'a', { status: 500, error: 'late' }, t(LEASE + 3), null, 'x');
    assert.deepEqual(await ra.claim('a', LEASE, 10, t(LEASE + 4000)), []);
    const retried = await ra.claim('a', LEASE, 10, t(LEASE + 6000));
    assert.deepEqual(
      retried.map((d) => [d.id, d.attempts]),
      [[head.id, 1]],
    );
    await ra.delivered(head.id, 'a', 204, t(LEASE + 6001));
    const next = await rb.claim('b', LEASE, 10, t(LEASE + 6002));
    assert.equal(next.length, 1);
    assert.notEqual(next[0]!.id, head.id);
    const endpoints = await ra.list(user);
    assert.equal(endpoints[0]!.enabled, true);
  });
});

test('a delivery given up disables its endpoint; the rest wait until it is enabled again', async () => {
  await withTwoConnections(async (a) => {
    const user = await addUser(a);
    const [endpoint] = await addEndpoints(a, user, 1);
    await emit(a, user, 2);
    const repo = new WebhookRepository(a);
    const [head] = await repo.claim('a', LEASE, 10, AT);
    await repo.failed(head!.id, 'a', { status: null, error: 'timeout' }, AT, null, 'disabled after 8 failed attempts');
    const [w] = await repo.list(user);
    assert.equal(w!.enabled, false);
    assert.equal(w!.disabledReason, 'disabled after 8 failed attempts');
    assert.deepEqual(await repo.claim('a', LEASE, 10, AT), []);
    // A new event is not queued for a disabled endpoint.
    await emit(a, user, 1);
    await repo.update(user, endpoint!, { enabled: true }, AT);
    const log = await repo.deliveries(endpoint!, 0, 10);
    assert.deepEqual(
      log.map((d) => d.status),
      ['pending', 'failed'],
    );
    const next = await repo.claim('a', LEASE, 10, AT);
    assert.equal(next.length, 1);
    assert.equal(next[0]!.id, log[0]!.id);
  });
});

test('an event is queued in its change’s transaction: a rollback leaves nothing', async () => {
  await withTwoConnections(async (a) => {
    const user = await addUser(a);
    await addEndpoints(a, user, 1);
    await assert.rejects(
      a.transaction(async (_em, tx) => {
        await emitEvent(tx, a.dialect, { type: 'upload.processed', ownerId: user, data: {}, at: AT });
        throw new Error('the change failed');
      }),
      /the change failed/,
    );
    assert.deepEqual(await new WebhookRepository(a).claim('a', LEASE, 10, AT), []);
  });
});

test(
  'an idle poll writes nothing: while another connection holds the write lock, claiming deliveries or jobs finds none',
  { skip: onPostgres && 'SQLite: an UPDATE takes the database write lock even when it matches no row' },
  async () => {
    await withTwoConnections(async (a, b) => {
      const userId = await addUser(a);
      // b holds the write lock while a polls. Without a read first, a's UPDATE would wait on b for the busy timeout,
      // blocking its thread (node:sqlite is synchronous), and then fail with SQLITE_BUSY.
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const lockTaken = new Promise<void>((r) => (locked = r));
      const holder = b.transaction(async (_em, tx) => {
        await tx.updateTable('users').set({ ban_reason: 'busy' }).where('id', '=', userId).execute();
        locked();
        await released;
      });
      await lockTaken;
      try {
        assert.deepEqual(await new WebhookRepository(a).claim('poller', LEASE, 10, AT), []);
        const jobs = new JobRepository(a, similarityIndexFor(a.dialect, 'multi-index-hashing'));
        assert.equal(await jobs.claim('poller', LEASE, AT), null);
      } finally {
        release();
        await holder;
      }
    });
  },
);
