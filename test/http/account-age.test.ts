/**
 * Minimum account ages (API.md Moderation) through the real HTTP API on both databases: `VOTE_MIN_ACCOUNT_AGE` and
 * `REPORT_MIN_ACCOUNT_AGE` refuse younger accounts with 403 `account_too_new`, changing nothing. Accounts are made
 * old (or young again) by moving their registration time in the database (setAccountAge).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, registerUser, setAccountAge, type TestUser } from '../support/users.ts';
import { reportUpload, uploadLink } from '../support/uploads.ts';

describe('VOTE_MIN_ACCOUNT_AGE and REPORT_MIN_ACCOUNT_AGE (1h)', () => {
  let app: TestApp;
  let owner: TestUser;
  before(async () => {
    app = await startApp({ VOTE_MIN_ACCOUNT_AGE: '1h', REPORT_MIN_ACCOUNT_AGE: '1h' });
    owner = await registerUser(app.api);
  });
  after(() => app.close());

  const counts = async (id: string) => {
    const r = await app.api.get(`/api/upload/${id}`);
    return { upvotes: r.body.upvotes as number, downvotes: r.body.downvote_count as number };
  };

  test('a younger account cannot vote (403 account_too_new, counts unchanged); an old enough one can', async () => {
    const id = await uploadLink(app.api, owner);
    const u = await registerUser(app.api);
    const refused = await app.api.post('/api/vote', { uploadId: id, vote: 'fucks' }, { token: u.token });
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.error, 'account_too_new');
    assert.match(refused.body.message, /younger than 1h cannot vote \(VOTE_MIN_ACCOUNT_AGE\)/);
    const from = /from (\S+)$/.exec(refused.body.message)?.[1];
    const inAnHour = Date.parse(from ?? '') - Date.now();
    assert.ok(inAnHour > 3_000_000 && inAnHour <= 3_600_000, `old enough at ${from}`);
    assert.deepEqual(await counts(id), { upvotes: 0, downvotes: 0 });

    await setAccountAge(app, u.id, 3600);
    const ok = await app.api.post('/api/vote', { uploadId: id, vote: 'fucks' }, { token: u.token });
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(await counts(id), { upvotes: 1, downvotes: 0 });

    // Young again (as if the rule had come after the vote): no new vote, but taking one back stays allowed.
    await setAccountAge(app, u.id, 60);
    const moved = await app.api.post('/api/vote', { uploadId: id, vote: 'does_not_fuck' }, { token: u.token });
    assert.equal(moved.status, 403);
    assert.deepEqual(await counts(id), { upvotes: 1, downvotes: 0 });
    const retracted = await app.api.post('/api/vote', { uploadId: id, vote: 'none' }, { token: u.token });
    assert.equal(retracted.status, 200, retracted.text);
    assert.deepEqual(await counts(id), { upvotes: 0, downvotes: 0 });
  });

  test('a younger account cannot report (403 account_too_new, nothing queued); an old enough one can', async () => {
    const admin = await registerAdmin(app);
    const id = await uploadLink(app.api, owner);
    const u = await registerUser(app.api);
    const refused = await reportUpload(app.api, id, u);
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.error, 'account_too_new');
    assert.match(refused.body.message, /cannot report uploads \(REPORT_MIN_ACCOUNT_AGE\); this account can from /);
    const queue = async () =>
      (await app.api.get('/api/admin/moderation?limit=100', { token: admin.token })).body.items.map(
        (i: { upload: { id: string } }) => i.upload.id,
      ) as string[];
    assert.ok(!(await queue()).includes(id), 'nothing reached the queue');

    await setAccountAge(app, u.id, 2 * 3600);
    assert.equal((await reportUpload(app.api, id, u)).status, 201);
    assert.ok((await queue()).includes(id));
  });
});
