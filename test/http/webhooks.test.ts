/**
 * Signed webhooks (API.md "Clients at volume"; issue 31 part 3): endpoints, scopes, the events, order, retries,
 * disabling after persistent failure, secret rotation and the delivery log. Every delivery a test reads is verified
 * with the Standard Webhooks library from npm (`standardwebhooks`), not with the service's own signing code.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, registerUser, TRUST_EVERY_REPORTER, type TestUser } from '../support/users.ts';
import { setAdmin } from '../../src/domain/auth/admin-roles.ts';
import { UserRepository } from '../../src/store/repositories/user.repository.ts';
import { reportUpload, uploadLink } from '../support/uploads.ts';
import { eventually, startReceiver, verified, type Receiver } from '../support/webhook-receiver.ts';
import { pixvote } from '../support/cli.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let app: TestApp;
let receiver: Receiver;
before(async () => {
  receiver = await startReceiver();
  app = await startApp({
    FETCH_ALLOW_PRIVATE: 'true',
    WEBHOOK_INTERVAL_MS: '100',
    WEBHOOK_TIMEOUT_MS: '2000',
    // Four attempts, 300 ms apart: a persistent failure is given up within a couple of seconds.
    WEBHOOK_RETRY_SCHEDULE: '300ms,300ms,300ms',
    REPORT_HOLD_THRESHOLD: '0',
    ...TRUST_EVERY_REPORTER,
  });
});
after(async () => {
  await app?.close();
  await receiver?.close();
});

let paths = 0;
/** Registers an endpoint at a fresh path of the receiver; returns its id, secret and path. */
async function endpoint(user: TestUser, events: string[], token = user.token) {
  const path = `/hook-${++paths}`;
  const r = await app.api.post('/api/webhooks', { url: receiver.url + path, events }, { token });
  assert.equal(r.status, 201, r.text);
  return { id: r.body.id as string, secret: r.body.secret as string, path };
}

/** The payloads delivered to `path`, each verified with standardwebhooks. */
const payloads = (path: string, secret: string) => receiver.delivered(path).map((r) => verified(secret, r));

const waitFor = (path: string, n: number) =>
  eventually(() => receiver.delivered(path).length >= n, 15_000, `${n} deliveries to ${path}`);

describe('registering endpoints', () => {
  let alice: TestUser;
  before(async () => {
    alice = await registerUser(app.api);
  });

  test('201 with a whsec_ secret shown once; the list shows it without', async () => {
    const r = await app.api.post(
      '/api/webhooks',
      { url: `${receiver.url}/x`, events: ['upload.processed'], description: 'mine' },
      { token: alice.token },
    );
    assert.equal(r.status, 201, r.text);
    assert.match(r.body.secret, /^whsec_[A-Za-z0-9+/=]{32,}$/);
    assert.deepEqual(r.body.events, ['upload.processed']);
    assert.equal(r.body.enabled, true);
    assert.equal(r.body.description, 'mine');
    const list = await app.api.get('/api/webhooks', { token: alice.token });
    assert.equal(list.status, 200);
    const mine = list.body.webhooks.find((w: { id: string }) => w.id === r.body.id);
    assert.ok(mine);
    assert.equal('secret' in mine, false);
  });

  test('validation errors are 400 invalid_request naming the field', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ events: ['upload.processed'] }, /url/],
      [{ url: `${receiver.url}/x`, events: ['upload.nope'] }, /events/],
      [{ url: `${receiver.url}/x`, events: [] }, /events/],
      [{ url: 'ftp://example.com/x', events: ['upload.held'] }, /url/],
      [{ url: 'https://user:pw@example.com/x', events: ['upload.held'] }, /url/],
      [{ url: `${receiver.url}/x`, events: ['upload.held'], description: 'x'.repeat(501) }, /description/],
    ];
    for (const [body, field] of cases) {
      const r = await app.api.post('/api/webhooks', body, { token: alice.token });
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      assert.equal(r.body.error, 'invalid_request');
      assert.match(r.body.message, field);
    }
    const { id } = await endpoint(alice, ['upload.held']);
    const patch = await app.api.patch(`/api/webhooks/${id}`, { enabled: 'yes' }, { token: alice.token });
    assert.equal(patch.status, 400);
    assert.match(patch.body.message, /enabled/);
  });

  test('moderation events are for admins: 403 to a user, 201 to an admin', async () => {
    const r = await app.api.post(
      '/api/webhooks',
      { url: `${receiver.url}/x`, events: ['report.created'] },
      { token: alice.token },
    );
    assert.equal(r.status, 403, r.text);
    assert.equal(r.body.error, 'forbidden');
    assert.match(r.body.message, /report\.created/);
    const admin = await registerAdmin(app);
    await endpoint(admin, ['report.created', 'moderation.item_created']);
  });

  test('scope `manage`: a token without it gets 403 insufficient_scope; one with it manages', async () => {
    const upload = await app.api.post(
      '/api/auth/tokens/generate',
      { name: 'up', scopes: ['upload'] },
      { token: alice.token },
    );
    const manage = await app.api.post(
      '/api/auth/tokens/generate',
      { name: 'mg', scopes: ['manage'] },
      { token: alice.token },
    );
    for (const r of [
      await app.api.post(
        '/api/webhooks',
        { url: `${receiver.url}/x`, events: ['upload.held'] },
        { token: upload.body.token },
      ),
      await app.api.get('/api/webhooks', { token: upload.body.token }),
    ]) {
      assert.equal(r.status, 403, r.text);
      assert.equal(r.body.error, 'insufficient_scope');
      assert.match(r.body.message, /"manage"/);
    }
    const { id } = await endpoint(alice, ['upload.held'], manage.body.token);
    assert.equal((await app.api.get(`/api/webhooks/${id}/deliveries`, { token: manage.body.token })).status, 200);
    assert.equal((await app.api.post('/api/webhooks', {}, {})).status, 401);
  });

  test("someone else's webhook (or an id that is none) is 404 on every route", async () => {
    const { id } = await endpoint(alice, ['upload.held']);
    const bob = await registerUser(app.api);
    for (const target of [id, 'not-a-uuid', crypto.randomUUID()]) {
      for (const r of [
        await app.api.patch(`/api/webhooks/${target}`, { enabled: false }, { token: bob.token }),
        await app.api.del(`/api/webhooks/${target}`, { token: bob.token }),
        await app.api.post(`/api/webhooks/${target}/rotate-secret`, undefined, { token: bob.token }),
        await app.api.get(`/api/webhooks/${target}/deliveries`, { token: bob.token }),
      ]) {
        assert.equal(r.status, 404, r.text);
        assert.equal(r.body.error, 'not_found');
      }
    }
    const gone = await app.api.del(`/api/webhooks/${id}`, { token: alice.token });
    assert.equal(gone.status, 200);
    assert.deepEqual(gone.body, { success: true, id });
    assert.equal((await app.api.del(`/api/webhooks/${id}`, { token: alice.token })).status, 404);
  });
});

describe('events', () => {
  test("upload.* on the owner's own uploads only, signed, in the contract's body", async () => {
    const owner = await registerUser(app.api);
    const hook = await endpoint(owner, ['upload.processed', 'upload.held', 'upload.removed', 'upload.restored']);
    const other = await registerUser(app.api);
    await uploadLink(app.api, other);
    const id = await uploadLink(app.api, owner);
    const admin = await registerAdmin(app);
    const act = async (action: string) => {
      const r = await app.api.post(
        `/api/admin/uploads/${id}/moderation`,
        { action, reason: 'test' },
        { token: admin.token },
      );
      assert.equal(r.status, 200, r.text);
    };
    await act('hold');
    await act('approve');
    await act('remove');
    await waitFor(hook.path, 4);
    const got = payloads(hook.path, hook.secret);
    assert.deepEqual(
      got.map((p) => p.type),
      ['upload.processed', 'upload.held', 'upload.restored', 'upload.removed'],
    );
    for (const p of got) {
      assert.equal(p.data.upload.id, id);
      assert.equal(p.data.upload.user_id, owner.id);
      assert.ok(!Number.isNaN(Date.parse(p.timestamp)));
    }
    assert.deepEqual(
      got.map((p) => p.data.upload.moderation),
      ['visible', 'held', 'visible', 'removed'],
    );
    const ids = receiver.delivered(hook.path).map((r) => r.headers['webhook-id']);
    assert.equal(new Set(ids).size, ids.length, 'one webhook-id per event');
  });

  test('upload.vote_milestone at 10 upvotes, once even when votes go and come back', async () => {
    const owner = await registerUser(app.api);
    const hook = await endpoint(owner, ['upload.vote_milestone']);
    const id = await uploadLink(app.api, owner);
    const voters = await Promise.all(Array.from({ length: 10 }, () => registerUser(app.api)));
    for (const v of voters) {
      const r = await app.api.post('/api/vote', { uploadId: id, vote: 'fucks' }, { token: v.token });
      assert.equal(r.status, 200, r.text);
    }
    await app.api.post('/api/vote', { uploadId: id, vote: 'none' }, { token: voters[0]!.token });
    await app.api.post('/api/vote', { uploadId: id, vote: 'fucks' }, { token: voters[0]!.token });
    await waitFor(hook.path, 1);
    await new Promise((r) => setTimeout(r, 500));
    const got = payloads(hook.path, hook.secret);
    assert.equal(got.length, 1);
    assert.equal(got[0]!.type, 'upload.vote_milestone');
    assert.equal(got[0]!.data.milestone, 10);
    assert.equal(got[0]!.data.upvotes, 10);
  });

  test("admins: report.created and moderation.item_created; not the reporter's or the owner's business", async () => {
    const admin = await registerAdmin(app);
    const hook = await endpoint(admin, ['report.created', 'moderation.item_created']);
    const owner = await registerUser(app.api);
    const id = await uploadLink(app.api, owner);
    const r1 = await reportUpload(app.api, id, await registerUser(app.api), 'spam');
    assert.equal(r1.status, 201, r1.text);
    const r2 = await reportUpload(app.api, id, await registerUser(app.api), 'other');
    assert.equal(r2.status, 201, r2.text);
    await eventually(
      () => payloads(hook.path, hook.secret).filter((p) => p.data.report?.upload_id === id).length === 2,
      15_000,
      'two report.created',
    );
    await new Promise((r) => setTimeout(r, 300));
    const mine = payloads(hook.path, hook.secret).filter(
      (p) => p.data.report?.upload_id === id || p.data.upload?.id === id,
    );
    assert.deepEqual(
      mine.map((p) => p.type),
      ['report.created', 'moderation.item_created', 'report.created'],
      'the first open report makes the queue item, once',
    );
    assert.equal(mine[1]!.data.reason, 'report');
    assert.equal(mine[0]!.data.report.reason, 'spam');
  });
});

describe('moderation events need `moderate`, and stop with it (issue 44)', () => {
  /** A token of `user`'s with these scopes: its secret and id. */
  const tokenOf = async (user: TestUser, scopes: string[]) => {
    const r = await app.api.post('/api/auth/tokens/generate', { name: 'hooks', scopes }, { token: user.token });
    assert.equal(r.status, 201, r.text);
    return { token: r.body.token as string, id: r.body.id as string };
  };
  const refused = (r: { status: number; text: string; body: { error: string; message: string } }) => {
    assert.equal(r.status, 403, r.text);
    assert.equal(r.body.error, 'insufficient_scope');
    assert.match(r.body.message, /"moderate"/);
  };
  /** The reports of `uploadId` delivered to an endpoint. */
  const reportsTo = (hook: { path: string; secret: string }, uploadId: string) =>
    payloads(hook.path, hook.secret).filter((p) => p.type === 'report.created' && p.data.report.upload_id === uploadId);
  /** Reports a fresh upload; waits until `control` (an endpoint that takes it) has the event, then a little more. */
  async function reportAndSettle(control: { path: string; secret: string }): Promise<string> {
    const id = await uploadLink(app.api, await registerUser(app.api));
    const r = await reportUpload(app.api, id, await registerUser(app.api), 'other');
    assert.equal(r.status, 201, r.text);
    await eventually(() => reportsTo(control, id).length === 1, 15_000, 'the control endpoint got the report');
    await new Promise((done) => setTimeout(done, 500));
    return id;
  }

  test('an admin token with `manage` but not `moderate` may not subscribe to them (POST or PATCH)', async () => {
    const admin = await registerAdmin(app);
    const manage = await tokenOf(admin, ['manage']);
    for (const events of [['report.created'], ['upload.held', 'moderation.item_created']]) {
      refused(await app.api.post('/api/webhooks', { url: `${receiver.url}/x`, events }, { token: manage.token }));
    }
    const own = await endpoint(admin, ['upload.held'], manage.token);
    refused(await app.api.patch(`/api/webhooks/${own.id}`, { events: ['report.created'] }, { token: manage.token }));
    // An endpoint that takes them (made with the JWT): a new URL is a new subscriber, so is enabling it.
    const mod = await endpoint(admin, ['report.created', 'upload.held']);
    for (const patch of [{ url: `${receiver.url}/elsewhere` }, { enabled: true }, { description: 'x' }]) {
      refused(await app.api.patch(`/api/webhooks/${mod.id}`, patch, { token: manage.token }));
    }
    // Taking them off needs no `moderate`; with it (or a JWT) an admin subscribes.
    const off = await app.api.patch(`/api/webhooks/${mod.id}`, { events: ['upload.held'] }, { token: manage.token });
    assert.equal(off.status, 200, off.text);
    const both = await tokenOf(admin, ['manage', 'moderate']);
    await endpoint(admin, ['report.created'], both.token);
    // A user who is no admin still hears `forbidden`, whatever the token.
    const user = await registerUser(app.api);
    const r = await app.api.post('/api/webhooks', { url: `${receiver.url}/x`, events: ['report.created'] }, user);
    assert.equal(r.status, 403);
    assert.equal(r.body.error, 'forbidden');
  });

  test('deliveries stop when the token that subscribed is revoked, runs out, or its owner is no admin', async () => {
    const control = await endpoint(await registerAdmin(app), ['report.created']);
    const admin = await registerAdmin(app);
    const t = await tokenOf(admin, ['manage', 'moderate']);
    const byToken = await endpoint(admin, ['report.created'], t.token);
    const expiring = await tokenOf(admin, ['manage', 'moderate']);
    const byExpiring = await endpoint(admin, ['report.created'], expiring.token);
    const byJwt = await endpoint(admin, ['report.created']);
    const first = await reportAndSettle(control);
    for (const hook of [byToken, byExpiring, byJwt]) assert.equal(reportsTo(hook, first).length, 1, 'subscribed');
    assert.equal((await app.api.del(`/api/auth/tokens/${t.id}`, { token: admin.token })).status, 200);
    // Run out (moved in the database, as token-scopes.test.ts does).
    const db = app.composed.db;
    await db
      .db()
      .updateTable('api_tokens')
      .set({ expires_at: db.dialect.date(new Date(Date.now() - 1000)) })
      .where('id', '=', expiring.id)
      .execute();
    const second = await reportAndSettle(control);
    assert.equal(reportsTo(byToken, second).length, 0, 'its token is revoked: no reporter notes');
    assert.equal(reportsTo(byExpiring, second).length, 0, 'its token has run out: no reporter notes');
    assert.equal(reportsTo(byJwt, second).length, 1, 'the JWT has every scope');
    await setAdmin(new UserRepository(app.composed.db), admin.username, false);
    const third = await reportAndSettle(control);
    assert.equal(reportsTo(byJwt, third).length, 0, 'no longer an admin: no reporter notes');
  });
});

describe('delivery', () => {
  test('in order per endpoint: a failing first event is retried, and the next ones wait for it', async () => {
    const owner = await registerUser(app.api);
    const hook = await endpoint(owner, ['upload.processed']);
    receiver.failFirst(hook.path, 2);
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await uploadLink(app.api, owner));
    await waitFor(hook.path, 4);
    const got = payloads(hook.path, hook.secret);
    assert.deepEqual(
      got.map((p) => p.data.upload.id),
      ids,
    );
    const attempts = receiver.all.filter((r) => r.path === hook.path);
    assert.equal(attempts.length, 6, 'two failed attempts, then four deliveries');
    assert.equal(attempts[0]!.headers['webhook-id'], attempts[2]!.headers['webhook-id'], 'a retry keeps its id');
    // The receiver has answered the fourth delivery; the app records it as delivered once that answer is in.
    const log = await eventually(
      async () => {
        const r = await app.api.get(`/api/webhooks/${hook.id}/deliveries`, { token: owner.token });
        assert.equal(r.status, 200, r.text);
        return r.body.deliveries.every((d: { status: string }) => d.status === 'delivered') ? r : null;
      },
      15_000,
      'the four deliveries recorded as delivered',
    );
    assert.ok(log);
    assert.equal(log.body.deliveries.length, 4);
    const first = log.body.deliveries.at(-1);
    assert.equal(first.status, 'delivered');
    assert.equal(first.attempts, 3);
    assert.equal(first.last_status, 204);
    assert.equal(first.id, attempts[0]!.headers['webhook-id']);
    const page = await app.api.get(`/api/webhooks/${hook.id}/deliveries?limit=2`, { token: owner.token });
    assert.equal(page.body.deliveries.length, 2);
    assert.equal(page.body.has_more, true);
  });

  test('persistent failure: given up, endpoint disabled; re-enabled by its owner, deliveries resume', async () => {
    const owner = await registerUser(app.api);
    const hook = await endpoint(owner, ['upload.processed']);
    receiver.down(hook.path, true);
    const first = await uploadLink(app.api, owner);
    const disabled = await eventually(
      async () => {
        const list = await app.api.get('/api/webhooks', { token: owner.token });
        const w = list.body.webhooks.find((x: { id: string }) => x.id === hook.id);
        return w.enabled ? null : w;
      },
      15_000,
      'the endpoint to be disabled',
    );
    assert.match(disabled.disabled_reason, /4 failed attempts/);
    const log = await app.api.get(`/api/webhooks/${hook.id}/deliveries`, { token: owner.token });
    assert.equal(log.body.deliveries[0].status, 'failed');
    assert.equal(log.body.deliveries[0].attempts, 4);
    assert.equal(log.body.deliveries[0].last_status, 500);
    assert.equal(receiver.all.filter((r) => r.path === hook.path).length, 4);
    // While disabled nothing is queued for it.
    await uploadLink(app.api, owner);
    receiver.down(hook.path, false);
    const enabled = await app.api.patch(`/api/webhooks/${hook.id}`, { enabled: true }, { token: owner.token });
    assert.equal(enabled.status, 200, enabled.text);
    assert.equal(enabled.body.enabled, true);
    assert.equal(enabled.body.disabled_reason, null);
    const next = await uploadLink(app.api, owner);
    await waitFor(hook.path, 1);
    const got = payloads(hook.path, hook.secret);
    assert.deepEqual(
      got.map((p) => p.data.upload.id),
      [next],
    );
    assert.notEqual(first, next);
  });

  test('rotation: the new secret signs, the old one too for 24 hours, then only the new one', async () => {
    const owner = await registerUser(app.api);
    const hook = await endpoint(owner, ['upload.processed']);
    const r = await app.api.post(`/api/webhooks/${hook.id}/rotate-secret`, undefined, { token: owner.token });
    assert.equal(r.status, 200, r.text);
    const fresh = r.body.secret as string;
    assert.notEqual(fresh, hook.secret);
    const until = Date.parse(r.body.previous_secret_expires_at);
    assert.ok(Math.abs(until - Date.now() - 86_400_000) < 60_000, r.body.previous_secret_expires_at);
    await uploadLink(app.api, owner);
    await waitFor(hook.path, 1);
    const both = receiver.delivered(hook.path)[0]!;
    assert.equal(String(both.headers['webhook-signature']).split(' ').length, 2);
    verified(fresh, both);
    verified(hook.secret, both);
    // 24 hours later (moved in the database): only the new secret signs.
    const db = app.composed.db;
    await db
      .db()
      .updateTable('webhook_endpoints')
      .set({ previous_secret_until: db.dialect.date(new Date(Date.now() - 1000)) })
      .where('id', '=', hook.id)
      .execute();
    await uploadLink(app.api, owner);
    await waitFor(hook.path, 2);
    const one = receiver.delivered(hook.path)[1]!;
    assert.equal(String(one.headers['webhook-signature']).split(' ').length, 1);
    verified(fresh, one);
    assert.throws(() => verified(hook.secret, one));
  });
});

describe('the address rules of image_url', () => {
  let strict: TestApp;
  before(async () => {
    strict = await startApp({ WEBHOOK_INTERVAL_MS: '100' });
  });
  after(() => strict?.close());

  test('without FETCH_ALLOW_PRIVATE, loopback and private URLs are refused (400 naming url)', async () => {
    const user = await registerUser(strict.api);
    for (const url of [`${receiver.url}/x`, 'http://localhost:9/x', 'http://10.0.0.1/x', 'http://[::1]:80/x']) {
      const r = await strict.api.post('/api/webhooks', { url, events: ['upload.processed'] }, { token: user.token });
      assert.equal(r.status, 400, `${url}: ${r.text}`);
      assert.equal(r.body.error, 'invalid_request');
      assert.match(r.body.message, /^url /);
    }
    const ok = await strict.api.post(
      '/api/webhooks',
      { url: 'https://hooks.example.com/x', events: ['upload.processed'] },
      { token: user.token },
    );
    assert.equal(ok.status, 201, ok.text);
    const patch = await strict.api.patch(
      `/api/webhooks/${ok.body.id}`,
      { url: 'http://127.0.0.1:1/x' },
      { token: user.token },
    );
    assert.equal(patch.status, 400, patch.text);
  });
});

test('the CLI: pixvote webhooks add, list, deliveries, disable, enable, rotate, rm', async () => {
  const home = await mkdtemp(join(tmpdir(), 'pixvote-cli-webhooks-'));
  try {
    const user = await registerUser(app.api);
    const env = { PIXVOTE_URL: app.url, PIXVOTE_TOKEN: user.token };
    const run = async (...args: string[]) => {
      const r = await pixvote(['webhooks', ...args], { home, env });
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    const added = await run('add', `${receiver.url}/cli`, '--events', 'upload.processed,upload.held');
    const id = /added webhook ([0-9a-f-]{36})/.exec(added)?.[1];
    assert.ok(id, added);
    const secret = /(whsec_\S+)/.exec(added)?.[1];
    assert.ok(secret);
    assert.match(await run('list'), new RegExp(`${id}\\s+enabled`));
    await uploadLink(app.api, user);
    await waitFor('/cli', 1);
    verified(secret, receiver.delivered('/cli')[0]!);
    assert.match(await run('deliveries', id), /delivered\s+1\s+204\s+upload\.processed/);
    assert.match(await run('disable', id), /disabled/);
    assert.match(await run('list'), /disabled/);
    assert.match(await run('enable', id), /enabled/);
    assert.match(await run('rotate', id), /whsec_/);
    assert.match(await run('rm', id), /deleted/);
    assert.match(await run('list'), /no webhooks/);
    const bad = await pixvote(['webhooks', 'add', `${receiver.url}/cli`, '--events', 'report.created'], { home, env });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /403 forbidden/);
  } finally {
    await rm(home, { recursive: true, force: true });
  }
});
