/**
 * The OpenAPI document tells the truth about moderation: every moderation route, and every state a moderation
 * action leaves an upload in, is called through the real API, and each reply (status, headers, body) is checked
 * against the document by the test client (support/conformance.ts). The statuses are asserted here too, so that a
 * route answering something else than its documented main case cannot pass by being documented loosely.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../support/app.ts';
import { pngImage } from '../support/fixtures.ts';
import { uploadImage } from '../support/uploads.ts';
import { TRUST_EVERY_REPORTER, apiToken, registerAdmin, registerUser } from '../support/users.ts';

let app: TestApp;
before(async () => {
  app = await startApp({ REPORT_HOLD_THRESHOLD: '2', ...TRUST_EVERY_REPORTER });
});
after(() => app.close());

test('every moderation route and every upload state answers as the OpenAPI document says', async () => {
  const { api } = app;
  const admin = await registerAdmin(app);
  const owner = await registerUser(api);
  const [alice, bob] = [await registerUser(api), await registerUser(api)];

  const up = await uploadImage(api, owner.token, await pngImage(320, 240, 41), { tags: 'cats' }, 'cat.png');
  assert.equal(up.status, 201);
  assert.equal(up.body.moderation, 'visible');
  const id: string = up.body.id;

  // Reports: 201, the same again 200, then the threshold holds the upload.
  const first = await api.post(
    `/api/upload/${id}/report`,
    { reason: 'spam', note: 'an advert' },
    { token: alice.token },
  );
  assert.equal(first.status, 201);
  assert.equal((await api.post(`/api/upload/${id}/report`, { reason: 'other' }, { token: alice.token })).status, 200);
  assert.equal((await api.post(`/api/upload/${id}/report`, { reason: 'nope' }, { token: bob.token })).status, 400);
  assert.equal((await api.post(`/api/upload/${id}/report`, { reason: 'spam' })).status, 401);
  assert.equal((await api.post(`/api/upload/${id}/report`, { reason: 'spam' }, { token: bob.token })).status, 201);

  // Held: 404 to others, the record to its owner; the queue shows it with its reasons.
  assert.equal((await api.get(`/api/upload/${id}`)).status, 404);
  assert.equal((await api.get(`/api/image/${id}`)).status, 404);
  assert.equal((await api.get(`/api/uploads/${id}/tags`)).status, 404);
  assert.equal((await api.post('/api/vote', { uploadId: id, vote: 'fucks' }, { token: alice.token })).status, 404);
  const mine = await api.get(`/api/upload/${id}`, { token: owner.token });
  assert.equal(mine.status, 200);
  assert.equal(mine.body.moderation, 'held');
  assert.equal((await api.get(`/api/image/${id}?size=thumb`, { token: owner.token })).status, 200);
  assert.equal((await api.get(`/api/uploads/${id}/tags`, { token: owner.token })).status, 200);

  assert.equal((await api.get('/api/admin/moderation', { token: alice.token })).status, 403);
  assert.equal((await api.get('/api/admin/moderation')).status, 401);
  assert.equal((await api.get('/api/admin/moderation?status=maybe', { token: admin.token })).status, 400);
  const queue = await api.get('/api/admin/moderation', { token: admin.token });
  assert.equal(queue.status, 200);
  const item = queue.body.items.find((i: { upload: { id: string } }) => i.upload.id === id);
  assert.equal(item.reports.count, 2);
  assert.equal(item.reports.reasons.spam, 2);
  assert.equal((await api.get('/api/admin/moderation?status=closed', { token: admin.token })).status, 200);

  // Actions: approve, then remove with a near block; the tombstone is 410 to everyone but admins.
  const approved = await api.post(
    `/api/admin/uploads/${id}/moderation`,
    { action: 'approve', reason: 'fine' },
    { token: admin.token },
  );
  assert.equal(approved.status, 200);
  assert.equal(approved.body.moderation, 'visible');
  assert.equal(
    (await api.post(`/api/admin/uploads/${id}/moderation`, { action: 'x' }, { token: admin.token })).status,
    400,
  );
  assert.equal(
    (await api.post(`/api/admin/uploads/${id}/moderation`, { action: 'hold' }, { token: alice.token })).status,
    403,
  );
  const missing = '00000000-0000-4000-8000-000000000000';
  assert.equal(
    (await api.post(`/api/admin/uploads/${missing}/moderation`, { action: 'hold' }, { token: admin.token })).status,
    404,
  );
  const removed = await api.post(
    `/api/admin/uploads/${id}/moderation`,
    { action: 'remove', reason: 'spam ring', block: 'near' },
    admin,
  );
  assert.equal(removed.status, 200);
  assert.equal(removed.body.moderation, 'removed');
  for (const [method, path, body] of [
    ['GET', `/api/upload/${id}`, undefined],
    ['GET', `/api/image/${id}`, undefined],
    ['GET', `/api/uploads/${id}/tags`, undefined],
    ['POST', '/api/vote', { uploadId: id, vote: 'fucks' }],
    ['POST', `/api/upload/${id}/report`, { reason: 'spam' }],
    ['PATCH', `/api/upload/${id}/privacy`, { is_private: true }],
    ['POST', `/api/uploads/${id}/tags`, { tags: ['dogs'] }],
    ['DELETE', `/api/uploads/${id}/tags/cats`, undefined],
    ['DELETE', `/api/upload/${id}`, undefined],
  ] as const) {
    const r = await api.request(method, path, body, { token: owner.token });
    assert.equal(r.status, 410, `${method} ${path}`);
    assert.equal(r.body.error, 'removed');
  }
  assert.equal((await api.get(`/api/upload/${id}`, { token: admin.token })).body.moderation, 'removed');

  // The blocklist: the removal added an entry; the same image again is blocked_content, on both upload paths.
  const again = await uploadImage(api, alice.token, await pngImage(320, 240, 41), {}, 'again.png');
  assert.equal(again.status, 400);
  assert.equal(again.body.error, 'blocked_content');
  const list = await api.get('/api/admin/blocklist', { token: admin.token });
  assert.equal(list.status, 200);
  assert.ok(list.body.entries.length >= 1);
  const entries = [{ phash: 'c3a1f0e2d4b69788', reason: 'known scam image' }];
  const dry = await api.post('/api/admin/blocklist?dry_run=true', { entries }, { token: admin.token });
  assert.equal(dry.status, 200);
  assert.equal(typeof dry.body.matches, 'number');
  assert.equal((await api.post('/api/admin/blocklist', { entries: [] }, { token: admin.token })).status, 400);
  const added = await api.post('/api/admin/blocklist', { entries }, { token: admin.token });
  assert.deepEqual({ ...added.body, job: undefined }, { added: 1, skipped: 0, job: undefined });
  assert.match(added.body.job.id, /^[0-9a-f-]{36}$/, 'the hold job that runs the new entry');
  assert.equal((await api.get('/api/admin/blocklist', { token: alice.token })).status, 403);
  assert.equal((await api.del(`/api/admin/blocklist/${list.body.entries[0].id}`, { token: admin.token })).status, 200);
  assert.equal((await api.del(`/api/admin/blocklist/${missing}`, { token: admin.token })).status, 404);

  // Jobs: the blocklist addition's hold job, listed, by status, one by id.
  const jobs = await api.get('/api/admin/jobs', { token: admin.token });
  assert.equal(jobs.status, 200);
  const hold = jobs.body.jobs.find((j: { kind: string }) => j.kind === 'blocklist_hold');
  assert.ok(hold);
  assert.equal((await api.get(`/api/admin/jobs?status=${hold.status}`, { token: admin.token })).status, 200);
  assert.equal((await api.get('/api/admin/jobs?status=later', { token: admin.token })).status, 400);
  assert.equal((await api.get('/api/admin/jobs', { token: alice.token })).status, 403);
  assert.equal((await api.get(`/api/admin/jobs/${hold.id}`, { token: admin.token })).status, 200);
  assert.equal((await api.get(`/api/admin/jobs/${missing}`, { token: admin.token })).status, 404);

  // Bans: the user list, a ban (403 banned from the next request, login too), an unban.
  // (A prefix holding `_` finds nothing: listUsers strips LIKE wildcards instead of escaping them; reported.)
  const users = await api.get('/api/admin/users?q=U', { token: admin.token });
  assert.equal(users.status, 200);
  assert.ok(users.body.users.some((u: { id: string }) => u.id === owner.id));
  const token = await apiToken(api, owner);
  const ban = await api.post(
    `/api/admin/users/${owner.id}/ban`,
    { reason: 'spam bot', until: null },
    { token: admin.token },
  );
  assert.equal(ban.status, 200);
  assert.equal(ban.body.banned_until, 'permanent');
  assert.equal(
    (await api.post(`/api/admin/users/${admin.id}/ban`, { reason: 'x' }, { token: admin.token })).status,
    400,
  );
  assert.equal((await api.post(`/api/admin/users/${missing}/ban`, {}, { token: admin.token })).status, 404);
  for (const r of [
    await api.get('/api/me', { token: owner.token }),
    await api.get('/api/modlog', { token }),
    await api.post('/api/auth', { action: 'login', username: owner.username, password: owner.password }),
  ]) {
    assert.equal(r.status, 403);
    assert.equal(r.body.error, 'banned');
  }
  assert.equal((await api.del(`/api/admin/users/${owner.id}/ban`, { token: admin.token })).status, 200);
  assert.equal((await api.del(`/api/admin/users/${missing}/ban`, { token: admin.token })).status, 404);
  assert.equal((await api.get('/api/me', { token: owner.token })).status, 200);

  // The modlog: public without the moderator, with it for admins; auto_hold by nobody.
  const pub = await api.get('/api/modlog');
  assert.equal(pub.status, 200);
  assert.equal(pub.headers.get('cache-control'), 'public, no-cache');
  assert.ok(pub.body.entries.every((e: object) => !('moderator' in e)));
  const full = await api.get('/api/modlog?limit=50', { token: admin.token });
  assert.equal(full.headers.get('cache-control'), 'private, no-cache');
  const actions = full.body.entries.map((e: { action: string }) => e.action);
  for (const a of ['auto_hold', 'approve', 'remove', 'block', 'ban', 'unban', 'unblock'])
    assert.ok(actions.includes(a), a);
  const auto = full.body.entries.find((e: { action: string }) => e.action === 'auto_hold');
  assert.equal(auto.moderator, null);
  assert.equal((await api.get('/api/modlog?page=0')).status, 400);
  // By cursor, two lines a page: the same lines in the same order as one long page, each once.
  const lines: string[] = [];
  let cursor: string | null = null;
  do {
    const r: { status: number; body: { entries: Array<{ id: string }>; next_cursor: string | null } } = await api.get(
      `/api/modlog?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      { token: admin.token },
    );
    assert.equal(r.status, 200);
    lines.push(...r.body.entries.map((e) => e.id));
    cursor = r.body.next_cursor;
  } while (cursor);
  assert.deepEqual(
    lines,
    full.body.entries.map((e: { id: string }) => e.id),
  );
  const foreign = await api.get(
    `/api/modlog?limit=3&cursor=${(await api.get('/api/modlog?limit=2')).body.next_cursor}`,
  );
  assert.equal(foreign.body.error, 'invalid_cursor');
  assert.equal((await api.get('/api/modlog?page=202&limit=50')).body.error, 'page_too_deep');
});
