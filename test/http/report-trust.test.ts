/**
 * Reports and votes that sybils cannot steer (API.md Reports and Moderation), through the real HTTP API on both
 * databases: only reporters that pass the report-trust rule count toward `REPORT_HOLD_THRESHOLD` (the default: a
 * day old, with an accepted upload or 10 votes), and an upload a moderator approved is not held again by reports
 * alone.
 * Accounts are made old by moving their registration time back in the database (setAccountAge).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, registerUser, setAccountAge, type TestUser } from '../support/users.ts';
import { reportUpload, uploadLink } from '../support/uploads.ts';

const DAY = 24 * 3600;

describe('report trust (the defaults: 24h, 1 accepted upload or 10 votes; REPORT_HOLD_THRESHOLD=3)', () => {
  let app: TestApp;
  let owner: TestUser;
  let admin: TestUser;
  before(async () => {
    app = await startApp();
    owner = await registerUser(app.api);
    admin = await registerAdmin(app);
  });
  after(() => app.close());

  /** An account a day and an hour old with one accepted (visible) upload: a trusted reporter. */
  async function trusted(): Promise<TestUser> {
    const u = await registerUser(app.api);
    await uploadLink(app.api, u);
    await setAccountAge(app, u.id, DAY + 3600);
    return u;
  }

  const state = async (id: string) =>
    (await app.api.get(`/api/upload/${id}`, { token: admin.token })).body.moderation as string;
  const queueItem = async (id: string) => {
    const q = await app.api.get('/api/admin/moderation?limit=100', { token: admin.token });
    assert.equal(q.status, 200, q.text);
    return q.body.items.find((i: { upload: { id: string } }) => i.upload.id === id) as
      { reports: { count: number; trusted: number } } | undefined;
  };
  const autoHolds = async (id: string) => {
    const r = await app.api.get('/api/modlog?limit=100', { token: admin.token });
    return (r.body.entries as Array<{ action: string; target: { id: string }; reason: string }>).filter(
      (e) => e.action === 'auto_hold' && e.target.id === id,
    );
  };

  test('three accounts registered a moment ago do not hold an upload: their reports reach the queue', async () => {
    const id = await uploadLink(app.api, owner);
    for (const u of await Promise.all([1, 2, 3].map(() => registerUser(app.api))))
      assert.equal((await reportUpload(app.api, id, u)).status, 201);
    assert.equal(await state(id), 'visible');
    assert.equal((await app.api.get(`/api/upload/${id}`)).status, 200, 'still public');
    const item = await queueItem(id);
    assert.ok(item, 'in the open queue');
    assert.deepEqual(item.reports.count, 3);
    assert.equal(item.reports.trusted, 0);
    assert.deepEqual(await autoHolds(id), []);
  });

  test('three trusted reporters hold it at once; old accounts without accepted history do not count', async () => {
    const id = await uploadLink(app.api, owner);
    // Fresh accounts, and old ones without history: an old account whose only upload is held has no accepted one.
    const fresh = await Promise.all([1, 2, 3, 4].map(() => registerUser(app.api)));
    const old = await registerUser(app.api);
    await setAccountAge(app, old.id, 30 * DAY);
    const heldOnly = await registerUser(app.api);
    const itsUpload = await uploadLink(app.api, heldOnly);
    const hold = await app.api.post(
      `/api/admin/uploads/${itsUpload}/moderation`,
      { action: 'hold', reason: 'check' },
      { token: admin.token },
    );
    assert.equal(hold.status, 200, hold.text);
    await setAccountAge(app, heldOnly.id, 30 * DAY);
    // A day old with 10 votes and no upload: trusted by the other leg.
    const voter = await registerUser(app.api);
    for (let i = 0; i < 10; i++) {
      const v = await app.api.post(
        '/api/vote',
        { uploadId: await uploadLink(app.api, owner), vote: 'fucks' },
        { token: voter.token },
      );
      assert.equal(v.status, 200, v.text);
    }
    await setAccountAge(app, voter.id, DAY);

    for (const u of [...fresh, old, heldOnly]) assert.equal((await reportUpload(app.api, id, u)).status, 201);
    const first = await trusted();
    assert.equal((await reportUpload(app.api, id, first)).status, 201);
    assert.equal((await reportUpload(app.api, id, voter)).status, 201);
    assert.equal(await state(id), 'visible', 'eight reports, two of them trusted: not held');
    const before = await queueItem(id);
    assert.equal(before?.reports.count, 8);
    assert.equal(before?.reports.trusted, 2);

    assert.equal((await reportUpload(app.api, id, await trusted())).status, 201);
    assert.equal(await state(id), 'held', 'the third trusted reporter holds it');
    assert.equal((await app.api.get(`/api/upload/${id}`)).status, 404);
    const lines = await autoHolds(id);
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.reason, 'reported by 9 users, 3 of them trusted');
    const item = await queueItem(id);
    assert.equal(item?.reports.count, 9);
    assert.equal(item?.reports.trusted, 3);
  });

  test('once a moderator approved it, a fresh round of trusted reporters does not hold it again', async () => {
    const id = await uploadLink(app.api, owner);
    for (const u of await Promise.all([1, 2, 3].map(() => trusted()))) await reportUpload(app.api, id, u);
    assert.equal(await state(id), 'held');
    const approve = await app.api.post(
      `/api/admin/uploads/${id}/moderation`,
      { action: 'approve', reason: 'not spam' },
      { token: admin.token },
    );
    assert.equal(approve.status, 200, approve.text);

    const again = await Promise.all([1, 2, 3, 4].map(() => trusted()));
    for (const u of again) assert.equal((await reportUpload(app.api, id, u)).status, 201);
    assert.equal(await state(id), 'visible', 'the same pattern again needs a moderator');
    const item = await queueItem(id);
    assert.ok(item, 'the new reports reach the queue');
    assert.equal(item.reports.count, 4);
    assert.equal(item.reports.trusted, 4);
    assert.equal((await autoHolds(id)).length, 1, 'the first hold only');
    // A moderator still can.
    const hold = await app.api.post(
      `/api/admin/uploads/${id}/moderation`,
      { action: 'hold', reason: 'on second look' },
      { token: admin.token },
    );
    assert.equal(hold.body.moderation, 'held');
  });

  test('concurrent trusted reporters, fresh ones among them, hold it exactly once', async () => {
    const id = await uploadLink(app.api, owner);
    const reporters = [
      ...(await Promise.all(Array.from({ length: 8 }, () => trusted()))),
      ...(await Promise.all(Array.from({ length: 8 }, () => registerUser(app.api)))),
    ];
    const replies = await Promise.all(reporters.map((u) => reportUpload(app.api, id, u)));
    // Once held, the upload is one the later reporters cannot see: 404.
    assert.ok(
      replies.every((r) => r.status === 201 || r.status === 404),
      replies.map((r) => r.status).join(),
    );
    assert.equal(await state(id), 'held');
    const lines = await autoHolds(id);
    assert.equal(lines.length, 1);
    assert.match(lines[0]!.reason, /, 3 of them trusted$/);
  });
});
