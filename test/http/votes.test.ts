import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../support/app.ts';
import { registerUser, type TestUser } from '../support/users.ts';
import { uploadFields } from '../support/uploads.ts';

let app: TestApp;
let owner: TestUser;

before(async () => {
  app = await startApp();
  owner = await registerUser(app.api);
});
after(() => app.close());

async function newUpload(): Promise<string> {
  const r = await uploadFields(app.api, owner.token, {
    upload_type: 'link',
    external_url: `https://example.com/${Math.random()}`,
  });
  assert.equal(r.status, 201);
  return r.body.id;
}

const vote = (user: TestUser, uploadId: string, value: string) =>
  app.api.post('/api/vote', { uploadId, vote: value }, { token: user.token });

/**
 * A vote as a client sends it under load: a 503 (the database too busy to take it now: every retry of a
 * conflicting transaction used up, or no connection free in time) is sent again after its Retry-After, as the
 * contract tells clients to. Whatever was refused must have changed nothing: the counts below stay exact.
 */
async function voteAsClient(user: TestUser, uploadId: string, value: string) {
  for (let attempt = 1; ; attempt++) {
    const r = await vote(user, uploadId, value);
    if (r.status !== 503 || attempt === 5) return r;
    const wait = Number(r.headers.get('retry-after'));
    assert.ok(wait >= 1, `503 with Retry-After (${r.headers.get('retry-after')})`);
    await new Promise((resolve) => setTimeout(resolve, wait * 1000));
  }
}

async function countsInDb(uploadId: string) {
  const db = app.composed.db.db();
  const row = await db
    .selectFrom('uploads')
    .select(['upvotes', 'downvote_count', 'score'])
    .where('id', '=', uploadId)
    .executeTakeFirstOrThrow();
  const votes = await db.selectFrom('votes').select(['value']).where('upload_id', '=', uploadId).execute();
  return {
    upvotes: Number(row.upvotes),
    downvotes: Number(row.downvote_count),
    score: Number(row.score),
    upRows: votes.filter((v) => Number(v.value) === 1).length,
    downRows: votes.filter((v) => Number(v.value) === -1).length,
  };
}

/** Registers users concurrently in small batches (each registration hashes a password). */
async function users(n: number): Promise<TestUser[]> {
  const out: TestUser[] = [];
  for (let i = 0; i < n; i += 25)
    out.push(...(await Promise.all(Array.from({ length: Math.min(25, n - i) }, () => registerUser(app.api)))));
  return out;
}

describe('POST /api/vote', () => {
  test('fucks, the same again (no-op), does_not_fuck (moves), none (retracts)', async () => {
    const id = await newUpload();
    const voter = await registerUser(app.api);
    const first = await vote(voter, id, 'fucks');
    assert.equal(first.status, 200);
    assert.deepEqual(first.body, { uploadId: id, vote: 'fucks', upvotes: 1, downvote_count: 0 });
    assert.deepEqual((await vote(voter, id, 'fucks')).body, {
      uploadId: id,
      vote: 'fucks',
      upvotes: 1,
      downvote_count: 0,
    });
    assert.deepEqual((await vote(voter, id, 'does_not_fuck')).body, {
      uploadId: id,
      vote: 'does_not_fuck',
      upvotes: 0,
      downvote_count: 1,
    });
    const mine = await app.api.get(`/api/upload/${id}`, { token: voter.token });
    assert.equal(mine.body.my_vote, 'does_not_fuck');
    assert.equal(mine.body.downvote_count, 1);
    assert.deepEqual((await vote(voter, id, 'none')).body, { uploadId: id, vote: null, upvotes: 0, downvote_count: 0 });
    assert.equal((await app.api.get(`/api/upload/${id}`, { token: voter.token })).body.my_vote, null);
    assert.deepEqual(await countsInDb(id), { upvotes: 0, downvotes: 0, score: 0, upRows: 0, downRows: 0 });
  });

  test('unknown upload 404; bad bodies 400; no token 401', async () => {
    const voter = await registerUser(app.api);
    const missing = await vote(voter, '00000000-0000-4000-8000-000000000000', 'fucks');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error, 'not_found');
    // An uploadId that is not a UUID is a bad field (API.md Votes), not an unknown upload.
    for (const bad of [
      'not-a-uuid',
      '00000000-0000-4000-8000-00000000000',
      '00000000-0000-4000-8000-000000000000x',
      '',
    ]) {
      const r = await vote(voter, bad, 'fucks');
      assert.equal(r.status, 400, JSON.stringify(bad));
      assert.equal(r.body.error, 'invalid_request');
      assert.match(r.body.message, /uploadId must be a UUID/);
    }
    const notString = await app.api.post('/api/vote', { uploadId: 42, vote: 'fucks' }, { token: voter.token });
    assert.equal(notString.status, 400);
    assert.match(notString.body.message, /uploadId/);
    const id = await newUpload();
    const bad = await vote(voter, id, 'love');
    assert.equal(bad.status, 400);
    assert.match(bad.body.message, /vote must be fucks, does_not_fuck or none/);
    const noId = await app.api.post('/api/vote', { vote: 'fucks' }, { token: voter.token });
    assert.match(noId.body.message, /uploadId is required/);
    assert.equal((await app.api.post('/api/vote', { uploadId: id, vote: 'fucks' })).status, 401);
  });

  test('ids in the path that are not UUIDs name no resource: 404 on every route taking one', async () => {
    const voter = await registerUser(app.api);
    const token = voter.token;
    const replies = [
      await app.api.get('/api/upload/not-a-uuid'),
      await app.api.get('/api/image/not-a-uuid'),
      await app.api.get('/api/uploads/not-a-uuid/tags'),
      await app.api.post('/api/uploads/not-a-uuid/tags', { tags: ['x'] }, { token }),
      await app.api.patch('/api/upload/not-a-uuid/privacy', { is_private: true }, { token }),
      await app.api.del('/api/upload/not-a-uuid', { token }),
      await app.api.del('/api/auth/tokens/not-a-uuid', { token }),
    ];
    for (const r of replies) {
      assert.equal(r.status, 404, r.text);
      assert.equal(r.body.error, 'not_found');
    }
  });

  test('a private upload can be voted on by anyone who has its id', async () => {
    const r = await uploadFields(app.api, owner.token, {
      upload_type: 'link',
      external_url: 'https://example.com/private',
      is_private: 'true',
    });
    const voter = await registerUser(app.api);
    assert.equal((await vote(voter, r.body.id, 'fucks')).body.upvotes, 1);
  });
});

describe('exact counts under concurrency', () => {
  test('200 concurrent voters', async () => {
    const id = await newUpload();
    const voters = await users(200);
    const replies = await Promise.all(voters.map((v, i) => voteAsClient(v, id, i % 5 < 3 ? 'fucks' : 'does_not_fuck')));
    assert.deepEqual([...new Set(replies.map((r) => r.status))], [200]);
    assert.deepEqual(await countsInDb(id), { upvotes: 120, downvotes: 80, score: 40, upRows: 120, downRows: 80 });
    const view = await app.api.get(`/api/upload/${id}`);
    assert.equal(view.body.upvotes, 120);
    assert.equal(view.body.downvote_count, 80);
  });

  test('100 concurrent vote flips, and duplicate submissions, leave exact counts', async () => {
    const id = await newUpload();
    const voters = await users(100);
    const sequence = ['fucks', 'does_not_fuck', 'fucks', 'none', 'does_not_fuck', 'fucks'];
    // Each user flips through the sequence; all users at once. A user's own requests are in order.
    const final = await Promise.all(
      voters.map(async (v, i) => {
        const steps = sequence.slice(0, 1 + (i % sequence.length));
        for (const s of steps) assert.equal((await voteAsClient(v, id, s)).status, 200);
        return steps.at(-1)!;
      }),
    );
    // And the same user sending the same vote 10 times at once counts once.
    const eager = await registerUser(app.api);
    await Promise.all(Array.from({ length: 10 }, () => voteAsClient(eager, id, 'fucks')));
    const up = final.filter((f) => f === 'fucks').length + 1;
    const down = final.filter((f) => f === 'does_not_fuck').length;
    assert.deepEqual(await countsInDb(id), {
      upvotes: up,
      downvotes: down,
      score: up - down,
      upRows: up,
      downRows: down,
    });
  });

  test('a delete racing votes leaves no orphan vote and no 500', async () => {
    const id = await newUpload();
    const voters = await users(30);
    const votes = voters.map((v) => vote(v, id, 'fucks'));
    const del = app.api.del(`/api/upload/${id}`, { token: owner.token });
    const replies = await Promise.all(votes);
    assert.equal((await del).status, 200);
    for (const r of replies) assert.ok(r.status === 200 || r.status === 404, `vote answered ${r.status}`);
    const orphans = await app.composed.db
      .db()
      .selectFrom('votes')
      .select('user_id')
      .where('upload_id', '=', id)
      .execute();
    assert.equal(orphans.length, 0);
    assert.equal((await vote(voters[0]!, id, 'fucks')).status, 404);
  });
});

test('RATE_LIMIT_VOTE is per user', async () => {
  const limited = await startApp({ RATE_LIMIT_VOTE: '3/1h' });
  try {
    const u = await registerUser(limited.api);
    const other = await registerUser(limited.api);
    const up = await uploadFields(limited.api, u.token, {
      upload_type: 'link',
      external_url: 'https://example.com/rl',
    });
    const v = (who: TestUser, value: string) =>
      limited.api.post('/api/vote', { uploadId: up.body.id, vote: value }, { token: who.token });
    for (const value of ['fucks', 'none', 'fucks']) assert.equal((await v(u, value)).status, 200);
    const fourth = await v(u, 'none');
    assert.equal(fourth.status, 429);
    assert.equal(fourth.body.error, 'rate_limited');
    assert.equal(fourth.headers.get('ratelimit-limit'), '3');
    assert.ok(Number(fourth.headers.get('retry-after')) >= 1);
    assert.equal((await v(other, 'fucks')).status, 200);
  } finally {
    await limited.close();
  }
});
