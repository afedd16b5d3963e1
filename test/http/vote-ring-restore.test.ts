/**
 * Issue 45 through the real HTTP API on both databases (docs/vote-rings.md): the evidence the service records at
 * sign-up and at each vote (the keyed hash of the client's /24 or /48 as the rate limits see it, the user-agent
 * family; never the address), what the detector reads of it, its retention purge; and a `void` that keeps the
 * votes aside so that `restore` puts them back exactly, with a voter's later vote winning, a deleted upload and a
 * banned account, the modlog lines, the limit of VOTE_RING_RESTORE_DAYS, and counters equal to the votes table
 * after each step. The app's clock is the test's, so that a month passes without waiting for it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startApp, type TestApp } from '../support/app.ts';
import { apiToken, registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { counterMismatches, uploadLink } from '../support/uploads.ts';
import { VoteRingRepository } from '../../src/store/moderation/vote-ring.repository.ts';

const DAY = 86_400_000;
let offsetMs = 0;
const clock = { now: () => new Date(Date.now() + offsetMs) };

let app: TestApp;
let admin: TestUser;

const from = (ip: string, ua: string) => ({ 'x-forwarded-for': ip, 'user-agent': ua });
/** Each test's ring runs from a server network of its own (198.18.N.0/24). */
let ringNets = 1;
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0';

/** Signs up through the API from `ip` with user agent `ua`. */
async function signUp(ip: string, ua: string): Promise<TestUser> {
  const username = `f_${randomBytes(5).toString('hex')}`;
  const email = `${username}@example.test`;
  const password = `pw-${randomBytes(6).toString('hex')}`;
  const r = await app.api.post(
    '/api/auth',
    { action: 'register', email, username, password },
    { headers: from(ip, ua) },
  );
  assert.equal(r.status, 201, r.text);
  return { id: r.body.user.id, username, email, password, token: r.body.token };
}

async function vote(
  user: { token: string },
  uploadId: string,
  value: 'fucks' | 'does_not_fuck',
  headers?: Record<string, string>,
) {
  const r = await app.api.post('/api/vote', { uploadId, vote: value }, { token: user.token, headers });
  assert.equal(r.status, 200, r.text);
}

const db = () => app.composed.db.db();
const userRow = (id: string) => db().selectFrom('users').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const voteRows = (userIds: string[]) =>
  db()
    .selectFrom('votes')
    .select(['user_id', 'upload_id', 'value', 'created_at', 'updated_at', 'net', 'ua'])
    .where('user_id', 'in', userIds)
    .orderBy('user_id')
    .orderBy('upload_id')
    .execute();
const keptVotes = async (ringId: string) =>
  Number(
    (
      await db()
        .selectFrom('voided_votes')
        .select((e) => e.fn.countAll<number | string>().as('n'))
        .where('voided_by', '=', ringId)
        .executeTakeFirstOrThrow()
    ).n,
  );

const countsOf = async (id: string) => {
  const r = await app.api.get(`/api/upload/${id}`, { token: admin.token });
  assert.equal(r.status, 200, r.text);
  return { up: r.body.upvotes as number, down: r.body.downvote_count as number };
};

const act = (id: string, body: unknown) => app.api.post(`/api/admin/vote-rings/${id}`, body, { token: admin.token });

/** The open vote-ring item holding `members` (and any more accounts). */
async function itemOf(members: TestUser[]): Promise<Record<string, any>> {
  const r = await app.api.get('/api/admin/moderation?status=open&limit=50', { token: admin.token });
  assert.equal(r.status, 200, r.text);
  const item = (r.body.items as Array<Record<string, any>>).find(
    (i) => i.kind === 'vote_ring' && members.every((m) => i.accounts.some((a: { id: string }) => a.id === m.id)),
  );
  assert.ok(item, `no open item holds ${members.map((m) => m.username).join(', ')}: ${r.text}`);
  return item;
}

const modlog = async () => {
  const r = await app.api.get('/api/modlog?limit=10', { token: admin.token });
  assert.equal(r.status, 200, r.text);
  return r.body.entries as Array<Record<string, any>>;
};

before(async () => {
  // The job is run by the test; addresses come from X-Forwarded-For (TRUST_PROXY), as behind a proxy.
  app = await startApp({ VOTE_RING_INTERVAL: '0', TRUST_PROXY: 'true', JWT_TTL: '400d' }, { clock });
  admin = await registerAdmin(app, `mod_${randomBytes(3).toString('hex')}`);
});
after(() => app.close());

describe('the evidence recorded at sign-up and at each vote', () => {
  test('a keyed hash of the /24 or /48 and the user-agent family; never the address', async () => {
    const a = await signUp('203.0.113.77', FIREFOX);
    const b = await signUp('203.0.113.9', 'curl/8.5.0');
    const mapped = await signUp('::ffff:203.0.113.200', 'python-requests/2.32.3');
    const c = await signUp('198.51.100.77', FIREFOX);
    const v6a = await signUp('2001:db8:aa:1::1', 'Go-http-client/2.0');
    const v6b = await signUp('2001:db8:aa:ffff:1:2:3:4', 'node');
    const v6c = await signUp('2001:db8:ab::1', 'node');
    const [ra, rb, rm, rc, r6a, r6b, r6c] = await Promise.all(
      [a, b, mapped, c, v6a, v6b, v6c].map((u) => userRow(u.id)),
    );
    assert.match(ra!.signup_net!, /^[0-9a-f]{32}$/);
    assert.equal(ra!.signup_ua, 'firefox');
    assert.equal(rb!.signup_ua, 'curl');
    assert.equal(rm!.signup_ua, 'python');
    assert.equal(r6a!.signup_ua, 'go');
    // One /24 (an IPv4-mapped address included), one /48: one hash each; another network, another hash.
    assert.equal(rb!.signup_net, ra!.signup_net);
    assert.equal(rm!.signup_net, ra!.signup_net);
    assert.notEqual(rc!.signup_net, ra!.signup_net);
    assert.equal(r6b!.signup_net, r6a!.signup_net);
    assert.notEqual(r6c!.signup_net, r6a!.signup_net);
    for (const row of [ra, rb, rm, rc, r6a, r6b, r6c])
      assert.doesNotMatch(JSON.stringify(row), /203\.0\.113|198\.51\.100|2001:db8|cb00:71|c633:64/i);

    // Votes: the facts of the request that cast (or moved) each, with a JWT or an API token.
    const author = await registerUser(app.api);
    const target = await uploadLink(app.api, author);
    const other = await uploadLink(app.api, author);
    await vote(a, target, 'fucks', from('203.0.113.5', 'curl/8.5.0'));
    const token = await apiToken(app.api, c);
    await vote({ token }, target, 'does_not_fuck', from('198.51.100.1', 'python-requests/2.32.3'));
    await vote(c, other, 'fucks', from('2001:db8:aa:77::1', FIREFOX));
    const rows = await voteRows([a.id, c.id]);
    const of = (u: TestUser, upload: string) => rows.find((r) => r.user_id === u.id && r.upload_id === upload)!;
    assert.equal(of(a, target).net, ra!.signup_net);
    assert.equal(of(a, target).ua, 'curl');
    assert.equal(of(c, target).net, rc!.signup_net);
    assert.equal(of(c, target).ua, 'python');
    assert.equal(of(c, other).net, r6a!.signup_net);
    assert.equal(of(c, other).ua, 'firefox');
    assert.doesNotMatch(JSON.stringify(rows), /203\.0\.113|198\.51\.100|2001:db8/i);
    // Moving a vote records the facts of the request that moved it.
    await vote(a, target, 'does_not_fuck', from('198.51.100.3', FIREFOX));
    const moved = (await voteRows([a.id])).find((r) => r.upload_id === target)!;
    assert.equal(moved.net, rc!.signup_net);
    assert.equal(moved.ua, 'firefox');

    // What the detector reads: each vote's facts, each voter's sign-up facts and other activity.
    await uploadLink(app.api, c);
    const rep = await app.api.post(`/api/upload/${other}/report`, { reason: 'spam' }, { token: c.token });
    assert.equal(rep.status, 201, rep.text);
    const read = await new VoteRingRepository(app.composed.db).recentVotes(new Date(clock.now().getTime() - DAY));
    const cVotes = read.votes.filter((v) => v.userId === c.id);
    assert.deepEqual(
      cVotes.map((v) => [v.uploadId, v.value, v.net, v.ua]).sort(),
      [
        [target, -1, rc!.signup_net, 'python'],
        [other, 1, r6a!.signup_net, 'firefox'],
      ].sort(),
    );
    const facts = read.facts.get(c.id)!;
    assert.deepEqual(
      { ...facts, createdAt: facts.createdAt > 0 },
      { createdAt: true, signupNet: rc!.signup_net, signupUa: 'firefox', uploads: 1, reports: 1, votes: 2 },
    );
  });
});

describe('void keeps the votes aside; restore puts them back exactly', () => {
  let boosted: TestUser;
  let a: string[];
  let b: string[];
  let ring: TestUser[];
  let item: Record<string, any>;
  let before: Awaited<ReturnType<typeof voteRows>>;
  let countsBefore: Map<string, { up: number; down: number }>;

  test('void: every vote of the ring leaves the counts, kept and flagged with the item; one modlog line', async () => {
    boosted = await registerUser(app.api);
    const other = await registerUser(app.api);
    a = [];
    b = [];
    for (let i = 0; i < 3; i++) a.push(await uploadLink(app.api, boosted));
    for (let i = 0; i < 4; i++) b.push(await uploadLink(app.api, other));
    // Two honest voters, each from a home network of their own (as a community's are).
    for (const ip of ['100.70.1.20', '100.70.2.20']) {
      const h = await signUp(ip, FIREFOX);
      await vote(h, a[0]!, 'fucks', from(ip, FIREFOX));
      for (let i = 0; i < 4; i++) await vote(h, b[i]!, i % 2 ? 'does_not_fuck' : 'fucks', from(ip, FIREFOX));
    }
    // Five fresh accounts from one /24 upvote every upload of one author; one also downvotes elsewhere.
    ring = [];
    for (let i = 0; i < 5; i++) ring.push(await signUp(`192.0.2.${10 + i}`, 'python-requests/2.32.3'));
    for (const r of ring) for (const id of a) await vote(r, id, 'fucks', from('192.0.2.99', 'python-requests/2.32.3'));
    await vote(ring[4]!, b[1]!, 'does_not_fuck');
    assert.ok((await app.composed.detectVoteRings()) >= 1);
    item = await itemOf(ring);
    before = await voteRows(ring.map((r) => r.id));
    assert.equal(before.length, 16);
    countsBefore = new Map(await Promise.all([...a, ...b].map(async (id) => [id, await countsOf(id)] as const)));
    assert.deepEqual(countsBefore.get(a[0]!), { up: 7, down: 0 });

    const r = await act(item.id, { action: 'void', reason: 'ring boosting one author' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.action, 'void');
    const voided = r.body.voided_votes as number;
    assert.deepEqual(item.accounts.map((u: { id: string }) => u.id).sort(), ring.map((u) => u.id).sort());
    assert.equal(voided, 16);
    assert.equal(r.body.restored_at, null);
    assert.equal(Date.parse(r.body.restorable_until) - Date.parse(r.body.closed_at), 30 * DAY);
    assert.deepEqual(await voteRows(ring.map((u) => u.id)), []);
    assert.equal(await keptVotes(item.id), voided);
    assert.deepEqual(await countsOf(a[0]!), { up: 2, down: 0 });
    assert.deepEqual(await countsOf(a[1]!), { up: 0, down: 0 });
    assert.deepEqual(await countsOf(b[1]!), { up: 0, down: 2 });
    assert.deepEqual(await counterMismatches(app.composed.db), []);
    const [line] = await modlog();
    assert.equal(line!.action, 'void_votes');
    assert.deepEqual(line!.target, { type: 'vote_ring', id: item.id });
    assert.equal(line!.reason, 'ring boosting one author');
    assert.deepEqual(line!.moderator, { id: admin.id, username: admin.username });
    // The public modlog names the line as well (a vote ring is no upload to hide).
    const pub = await app.api.get('/api/modlog?limit=1');
    assert.deepEqual(pub.body.entries[0].target, { type: 'vote_ring', id: item.id });
  });

  test('restore: the votes come back as they were (a later vote wins, deleted upload skipped)', async () => {
    // After the void: one member votes again on a target upload (their new vote must win), the author deletes
    // one upload (its kept votes go with it), and another member is banned (a ban never touches votes).
    await vote(ring[0]!, a[0]!, 'does_not_fuck');
    const del = await app.api.del(`/api/upload/${a[2]}`, { token: boosted.token });
    assert.ok([200, 204].includes(del.status), del.text);
    const ban = await app.api.post(
      `/api/admin/users/${ring[1]!.id}/ban`,
      { reason: 'ring member', until: null, remove_uploads: false },
      { token: admin.token },
    );
    assert.equal(ban.status, 200, ban.text);

    const r = await act(item.id, { action: 'restore', reason: 'fans of a streamer, not a ring' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.status, 'closed');
    assert.equal(r.body.action, 'restore');
    assert.equal(r.body.voided_votes, 16);
    // 16 kept: r0's on a[0] is skipped (their new vote stays), the 5 on the deleted a[2] are gone with it.
    assert.equal(r.body.restored_votes, r.body.voided_votes - 6);
    assert.equal(r.body.skipped_votes, 6);
    assert.deepEqual(r.body.restored_by, { id: admin.id, username: admin.username });
    assert.ok(r.body.restored_at);
    assert.equal(r.body.restorable_until, null);
    // The void's moderator and reason stay.
    assert.equal(r.body.reason, 'ring boosting one author');

    // Exactly as they were (value, times, facts), but for the skipped ones.
    const now = await voteRows(ring.map((u) => u.id));
    const expected = before.filter((v) => v.upload_id !== a[2] && !(v.user_id === ring[0]!.id && v.upload_id === a[0]));
    assert.deepEqual(
      now.filter((v) => !(v.user_id === ring[0]!.id && v.upload_id === a[0])),
      expected,
    );
    const mine = now.find((v) => v.user_id === ring[0]!.id && v.upload_id === a[0])!;
    assert.equal(Number(mine.value), -1);
    assert.equal(await keptVotes(item.id), 0);
    // The counts: a[0] has the honest two, four members back and r0's new downvote; the rest as before the void.
    assert.deepEqual(await countsOf(a[0]!), { up: 6, down: 1 });
    assert.deepEqual(await countsOf(a[1]!), countsBefore.get(a[1]!));
    for (const id of b) assert.deepEqual(await countsOf(id), countsBefore.get(id), id);
    assert.deepEqual(await counterMismatches(app.composed.db), []);

    const [line] = await modlog();
    assert.equal(line!.action, 'void_votes');
    assert.deepEqual(line!.target, { type: 'vote_ring', id: item.id });
    assert.match(
      line!.reason,
      /^restore of the void: fans of a streamer, not a ring \(\d+ votes restored, 6 skipped\)$/,
    );
    // The closed queue shows the item's state.
    const closed = await app.api.get('/api/admin/moderation?status=closed&limit=50', { token: admin.token });
    const shown = (closed.body.items as Array<Record<string, any>>).find((i) => i.id === item.id)!;
    assert.equal(shown.action, 'restore');
    assert.equal(shown.skipped_votes, 6);

    // Once restored: no second restore, no void or dismiss of the closed item.
    for (const action of ['restore', 'void', 'dismiss']) {
      const again = await act(item.id, { action });
      assert.equal(again.status, 409, again.text);
      assert.equal(again.body.error, 'conflict');
    }
    assert.deepEqual(await counterMismatches(app.composed.db), []);
  });

  test('restore of an item never voided: 409; of an unknown one: 404', async () => {
    const crew = [];
    for (let i = 0; i < 4; i++) crew.push(await signUp(`198.18.${ringNets}.${10 + i}`, 'curl/8.5.0'));
    const net = `198.18.${ringNets++}.99`;
    const author = await registerUser(app.api);
    const ids = [await uploadLink(app.api, author), await uploadLink(app.api, author)];
    for (const c of crew) for (const id of ids) await vote(c, id, 'fucks', from(net, 'curl/8.5.0'));
    await app.composed.detectVoteRings();
    const open = await itemOf(crew);
    const r = await act(open.id, { action: 'restore' });
    assert.equal(r.status, 409, r.text);
    assert.match(r.body.message, /not voided/);
    const gone = await act('00000000-0000-4000-8000-000000000000', { action: 'restore' });
    assert.equal(gone.status, 404, gone.text);
    const dismissed = await act(open.id, { action: 'dismiss' });
    assert.equal(dismissed.status, 200, dismissed.text);
  });
});

describe('restore under concurrent votes', () => {
  test('a restore while the members vote leaves every counter equal to the votes table', async () => {
    const author = await registerUser(app.api);
    const ids = [
      await uploadLink(app.api, author),
      await uploadLink(app.api, author),
      await uploadLink(app.api, author),
    ];
    // A crew on one server network of its own.
    const crew: TestUser[] = [];
    for (let i = 0; i < 4; i++) crew.push(await signUp(`198.18.${ringNets}.${10 + i}`, 'curl/8.5.0'));
    const net = `198.18.${ringNets++}.99`;
    for (const c of crew) for (const id of ids) await vote(c, id, 'fucks', from(net, 'curl/8.5.0'));
    await app.composed.detectVoteRings();
    const item = await itemOf(crew);
    const voided = await act(item.id, { action: 'void' });
    assert.equal(voided.status, 200, voided.text);
    const churn = crew.flatMap((c, k) =>
      ids.map(async (id, j) => {
        const value = (k + j) % 3 === 0 ? 'none' : (k + j) % 2 ? 'fucks' : 'does_not_fuck';
        const r = await app.api.post('/api/vote', { uploadId: id, vote: value }, { token: c.token });
        assert.equal(r.status, 200, r.text);
      }),
    );
    const [restored] = await Promise.all([act(item.id, { action: 'restore' }), ...churn]);
    assert.equal(restored.status, 200, restored.text);
    // Each kept vote came back or was skipped (its voter had voted there again first), whatever the interleaving.
    assert.equal(restored.body.restored_votes + restored.body.skipped_votes, voided.body.voided_votes);
    assert.equal(await keptVotes(item.id), 0);
    assert.deepEqual(await counterMismatches(app.composed.db), []);
  });
});

describe('retention', () => {
  const title =
    'past VOTE_RING_RESTORE_DAYS restore is 409 naming it and the purge deletes the kept votes; ' +
    'facts past VOTE_FACTS_RETENTION are cleared';
  test(title, async () => {
    const author = await registerUser(app.api);
    const ids = [
      await uploadLink(app.api, author),
      await uploadLink(app.api, author),
      await uploadLink(app.api, author),
    ];
    const crew: TestUser[] = [];
    for (let i = 0; i < 4; i++) crew.push(await signUp(`100.64.7.${i + 1}`, FIREFOX));
    for (const c of crew) for (const id of ids) await vote(c, id, 'fucks', from('100.64.7.50', FIREFOX));
    await app.composed.detectVoteRings();
    const item = await itemOf(crew);
    const voided = await act(item.id, { action: 'void' });
    assert.equal(voided.status, 200, voided.text);
    assert.equal(await keptVotes(item.id), voided.body.voided_votes);
    const countsVoided = await Promise.all(ids.map(countsOf));

    // A month later (31 days: past both defaults of 30).
    offsetMs += 31 * DAY;
    const late = await act(item.id, { action: 'restore' });
    assert.equal(late.status, 409, late.text);
    assert.equal(late.body.error, 'conflict');
    assert.match(late.body.message, /more than 30 days ago \(VOTE_RING_RESTORE_DAYS\)/);
    assert.deepEqual(await Promise.all(ids.map(countsOf)), countsVoided);

    // Someone signs up and votes now: their facts are fresh and stay.
    const fresh = await signUp('100.64.9.1', 'curl/8.5.0');
    await vote(fresh, ids[0]!, 'fucks', from('100.64.9.1', 'curl/8.5.0'));
    const withFacts = async () => ({
      users: Number(
        (
          await db()
            .selectFrom('users')
            .select((e) => e.fn.countAll<number | string>().as('n'))
            .where((w) => w.or([w('signup_net', 'is not', null), w('signup_ua', 'is not', null)]))
            .executeTakeFirstOrThrow()
        ).n,
      ),
      votes: Number(
        (
          await db()
            .selectFrom('votes')
            .select((e) => e.fn.countAll<number | string>().as('n'))
            .where((w) => w.or([w('net', 'is not', null), w('ua', 'is not', null)]))
            .executeTakeFirstOrThrow()
        ).n,
      ),
    });
    const pre = await withFacts();
    assert.ok(pre.users > 1 && pre.votes > 1, JSON.stringify(pre));
    const purged = await app.composed.purgeVoteFacts();
    assert.equal(purged.voided, voided.body.voided_votes);
    assert.equal(purged.facts, pre.users - 1 + pre.votes - 1);
    assert.deepEqual(await withFacts(), { users: 1, votes: 1 });
    assert.equal((await userRow(fresh.id)).signup_ua, 'curl');
    assert.equal(await keptVotes(item.id), 0);
    // Nothing left to purge; the counts never moved; restore still refused.
    assert.deepEqual(await app.composed.purgeVoteFacts(), { facts: 0, voided: 0 });
    assert.deepEqual(await counterMismatches(app.composed.db), []);
    assert.equal((await act(item.id, { action: 'restore' })).status, 409);
  });
});
