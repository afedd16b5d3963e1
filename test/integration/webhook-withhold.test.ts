/**
 * Moderation events queued while an endpoint was allowed them are not sent once it is not (issue 44 item 3): the
 * claim checks the endpoint's credential again, on the real database (SQLite and PostgreSQL). Each case queues a
 * `report.created` for an admin's endpoint configured with a `moderate` token, takes the role or the scope away,
 * then claims: the delivery is closed as failed ("withheld"), never handed to the sender, and the endpoint stays
 * enabled. The control endpoint, configured with a JWT (no token recorded), is claimed as usual.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Database } from '../../src/store/database.ts';
import { withStoreDatabase } from '../support/store-db.ts';
import { emitEvent } from '../../src/store/webhooks/outbox.ts';
import { WebhookRepository } from '../../src/store/webhooks/webhook.repository.ts';
import { insertUser } from '../support/users.ts';

const AT = new Date(Date.UTC(2026, 1, 1));
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

const withDatabase = (fn: (db: Database) => Promise<void>) => withStoreDatabase('webhook-withhold', AT, (db) => fn(db));

/** An admin with a `manage moderate` token, an endpoint made with that token and one made with a JWT. */
async function setUp(db: Database) {
  const admin = await insertUser(db, AT);
  await db.db().updateTable('users').set({ role: 'admin' }).where('id', '=', admin).execute();
  const tokenId = randomUUID();
  await db
    .db()
    .insertInto('api_tokens')
    .values({
      id: tokenId,
      user_id: admin,
      name: 'hooks',
      token_hash: randomUUID().replace(/-/g, '').padEnd(64, '0'),
      scopes: 'manage moderate',
      expires_at: null,
      created_at: db.dialect.date(AT),
    })
    .execute();
  const repo = new WebhookRepository(db);
  const endpoint = async (url: string, token: string | null) =>
    (
      await repo.create({
        id: randomUUID(),
        userId: admin,
        url,
        description: '',
        events: ['report.created'],
        secret: SECRET,
        tokenId: token,
        at: AT,
      })
    ).id;
  const byToken = await endpoint('https://hooks.example.com/token', tokenId);
  const byJwt = await endpoint('https://hooks.example.com/jwt', null);
  await db.transaction((_em, tx) =>
    emitEvent(tx, db.dialect, {
      type: 'report.created',
      ownerId: null,
      data: { report: { note: 'a reporter note' } },
      at: AT,
    }),
  );
  return { admin, tokenId, byToken, byJwt, repo };
}

async function claimAll(repo: WebhookRepository) {
  return repo.claim('tester', 60_000, 10, new Date(AT.getTime() + 1000));
}

async function deliveryOf(db: Database, endpointId: string) {
  return db
    .db()
    .selectFrom('webhook_deliveries')
    .select(['status', 'last_error'])
    .where('endpoint_id', '=', endpointId)
    .executeTakeFirstOrThrow();
}

const cases: [string, (db: Database, s: Awaited<ReturnType<typeof setUp>>) => Promise<unknown>][] = [
  ['the token is revoked', (db, s) => db.db().deleteFrom('api_tokens').where('id', '=', s.tokenId).execute()],
  [
    'the token ran out',
    (db, s) =>
      db
        .db()
        .updateTable('api_tokens')
        .set({ expires_at: db.dialect.date(new Date(AT.getTime() + 500)) })
        .where('id', '=', s.tokenId)
        .execute(),
  ],
  [
    'the token lost `moderate`',
    (db, s) => db.db().updateTable('api_tokens').set({ scopes: 'manage' }).where('id', '=', s.tokenId).execute(),
  ],
  [
    'the owner is no longer an admin',
    (db, s) => db.db().updateTable('users').set({ role: 'user' }).where('id', '=', s.admin).execute(),
  ],
];

for (const [what, revoke] of cases) {
  test(`a moderation event queued before ${what} is withheld, not sent`, async () => {
    await withDatabase(async (db) => {
      const s = await setUp(db);
      assert.equal((await deliveryOf(db, s.byToken)).status, 'pending', 'queued while allowed');
      await revoke(db, s);
      const claimed = await claimAll(s.repo);
      const sentTo = claimed.map((c) => c.endpointId);
      assert.ok(!sentTo.includes(s.byToken), 'not handed to the sender');
      const withheld = await deliveryOf(db, s.byToken);
      assert.equal(withheld.status, 'failed');
      assert.match(withheld.last_error ?? '', /^withheld: /);
      const endpoint = await db
        .db()
        .selectFrom('webhook_endpoints')
        .select('enabled')
        .where('id', '=', s.byToken)
        .executeTakeFirstOrThrow();
      assert.equal(db.dialect.readBool(endpoint.enabled), true, 'the endpoint stays enabled');
      if (what === 'the owner is no longer an admin') {
        assert.deepEqual(sentTo, [], "the JWT's endpoint is the same admin's: withheld too");
        assert.equal((await deliveryOf(db, s.byJwt)).status, 'failed');
      } else {
        assert.deepEqual(sentTo, [s.byJwt], "the JWT's endpoint is sent as usual");
      }
    });
  });
}

test('a moderation event whose credential still holds is claimed as usual', async () => {
  await withDatabase(async (db) => {
    const s = await setUp(db);
    const claimed = await claimAll(s.repo);
    assert.deepEqual(claimed.map((c) => c.endpointId).sort(), [s.byToken, s.byJwt].sort());
  });
});
