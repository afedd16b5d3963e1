/**
 * API.md Moderation, "Vote rings", through the real HTTP API on both databases: accounts vote as a ring, the
 * detector's job runs, the `vote_ring` items appear first in the queue with their accounts and evidence, `void`
 * removes exactly their votes (the upload counters equal the votes table afterwards), `dismiss` closes an item for
 * good, and the route's errors. Every response is checked against the OpenAPI document by the test client.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { currentMetrics, startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { counterMismatches, uploadFields, uploadLink } from '../support/uploads.ts';
import { pixvote } from '../support/cli.ts';
import { eventually, startReceiver, verified, type Receiver } from '../support/webhook-receiver.ts';

let app: TestApp;
let receiver: Receiver;
let hook: { secret: string; path: string };
let admin: TestUser;
let boosted: TestUser;
let other: TestUser;
let honest: TestUser[];
let ring: TestUser[];
let buriers: TestUser[];
const a: string[] = [];
const b: string[] = [];

/**
 * Where each account connects from (the app trusts X-Forwarded-For): honest accounts each from a home network of
 * their own, a ring's accounts from one server network (what a ring run from a few machines shows, issue 45).
 */
const addressOf = new Map<string, string>();
let homes = 0;
const home = () => `100.${64 + (homes >> 8)}.${homes++ & 255}.7`;
const RING_NET = '203.0.113';
let hosts = 0;
const server = (net = RING_NET) => `${net}.${++hosts}`;
const from = (user: TestUser) => ({ 'x-forwarded-for': addressOf.get(user.id) ?? '127.0.0.1' });

async function vote(user: TestUser, uploadId: string, value: 'fucks' | 'does_not_fuck' | 'none') {
  const r = await app.api.post('/api/vote', { uploadId, vote: value }, { token: user.token, headers: from(user) });
  assert.equal(r.status, 200, r.text);
}

/** `n` accounts registered from `address()` each (a home network of their own unless said). */
async function users(n: number, address: () => string = home): Promise<TestUser[]> {
  const out: TestUser[] = [];
  for (let i = 0; i < n; i++) {
    const ip = address();
    const name = `u_${Math.random().toString(36).slice(2, 12)}`;
    const r = await app.api.post(
      '/api/auth',
      { action: 'register', email: `${name}@example.test`, username: name, password: `pw-${name}` },
      { headers: { 'x-forwarded-for': ip } },
    );
    assert.equal(r.status, 201, r.text);
    const user = {
      id: r.body.user.id,
      username: name,
      email: `${name}@example.test`,
      password: `pw-${name}`,
      token: r.body.token,
    };
    addressOf.set(user.id, ip);
    out.push(user);
  }
  return out;
}
const queue = async (status: 'open' | 'closed') => {
  const r = await app.api.get(`/api/admin/moderation?status=${status}&limit=50`, { token: admin.token });
  assert.equal(r.status, 200, r.text);
  return r.body.items as Array<Record<string, any>>;
};
const act = (id: string, body: unknown, token = admin.token) =>
  app.api.post(`/api/admin/vote-rings/${id}`, body, { token });

const countsOf = async (id: string) => {
  const r = await app.api.get(`/api/upload/${id}`, { token: admin.token });
  assert.equal(r.status, 200, r.text);
  return { up: r.body.upvotes as number, down: r.body.downvote_count as number };
};

before(async () => {
  // The job is triggered by the test (composed.detectVoteRings), so that it never sees a ring half-voted.
  app = await startApp({
    VOTE_RING_INTERVAL: '0',
    FETCH_ALLOW_PRIVATE: 'true',
    WEBHOOK_INTERVAL_MS: '100',
    TRUST_PROXY: 'true',
  });
  admin = await registerAdmin(app, `mod_${Math.random().toString(36).slice(2, 8)}`);
  // The admins' webhook hears of every new queue item, vote rings included.
  receiver = await startReceiver();
  const created = await app.api.post(
    '/api/webhooks',
    { url: `${receiver.url}/rings`, events: ['moderation.item_created'] },
    { token: admin.token },
  );
  assert.equal(created.status, 201, created.text);
  hook = { secret: created.body.secret as string, path: '/rings' };
  const [first, second] = await users(2);
  boosted = first!;
  other = second!;
  for (let i = 0; i < 3; i++) a.push(await uploadLink(app.api, boosted));
  for (let i = 0; i < 8; i++) b.push(await uploadLink(app.api, other));
  // Honest voters: eight votes each over two authors (one on the boosted author): too little focus to be suspects.
  honest = await users(2);
  for (const h of honest) {
    await vote(h, a[0]!, 'fucks');
    for (let i = 0; i < 7; i++) await vote(h, b[i]!, i % 3 === 0 ? 'does_not_fuck' : 'fucks');
  }
  // A ring of five fresh accounts on one server network upvoting every upload of one author, and four burying one
  // upload from another.
  ring = await users(5, () => server());
  for (const r of ring) for (const id of a) await vote(r, id, 'fucks');
  buriers = await users(4, () => server('198.51.100'));
  for (const r of buriers) await vote(r, b[7]!, 'does_not_fuck');
  // An upload item in the queue too: one report.
  const rep = await app.api.post(`/api/upload/${b[0]}/report`, { reason: 'spam' }, { token: honest[0]!.token });
  assert.equal(rep.status, 201, rep.text);
});
after(async () => {
  await app.close();
  await receiver.close();
});

describe('vote rings', () => {
  let boostRing: Record<string, any>;
  let buryRing: Record<string, any>;
  let churnVoided = 0;

  test('the job queues each ring once, first in the queue, with its accounts and evidence', async () => {
    // Two runs at once (as two processes' jobs may be): each ring is queued once.
    const runs = await Promise.all([app.composed.detectVoteRings(), app.composed.detectVoteRings()]);
    assert.equal(runs[0] + runs[1], 2, `queued ${runs.join(' + ')}`);
    const items = await queue('open');
    assert.deepEqual(
      items.map((i) => i.kind),
      ['vote_ring', 'vote_ring', 'upload'],
    );
    const name = (i: Record<string, any>) => i.accounts.map((u: { username: string }) => u.username).sort();
    boostRing = items.find((i) => i.kind === 'vote_ring' && i.evidence.target.type === 'author')!;
    buryRing = items.find((i) => i.kind === 'vote_ring' && i.evidence.target.type === 'upload')!;
    // Each new ring reached the admins' webhook as a queue item, once (the report's item came before).
    await eventually(() => receiver.delivered(hook.path).length >= 3, 15_000, 'three queue-item events');
    const events = receiver.delivered(hook.path).map((r) => verified(hook.secret, r));
    const rings = events.filter((e) => e.data.reason === 'vote_ring');
    assert.deepEqual(rings.map((e) => e.data.vote_ring.id).sort(), [boostRing.id, buryRing.id].sort());
    assert.equal(rings.find((e) => e.data.vote_ring.id === boostRing.id)!.data.vote_ring.accounts, 5);
    assert.ok(boostRing && buryRing, JSON.stringify(items));
    assert.deepEqual(name(boostRing), ring.map((u) => u.username).sort());
    assert.deepEqual(name(buryRing), buriers.map((u) => u.username).sort());
    assert.equal(boostRing.status, 'open');
    assert.deepEqual(boostRing.evidence.target, { type: 'author', id: boosted.id });
    assert.equal(boostRing.evidence.direction, 'up');
    assert.equal(boostRing.evidence.votes, 15);
    assert.equal(boostRing.evidence.young_accounts, 5);
    assert.equal(boostRing.evidence.similarity, 1);
    assert.equal(boostRing.evidence.target_share, Math.round((15 / 17) * 1000) / 1000);
    assert.deepEqual(buryRing.evidence.target, { type: 'upload', id: b[7] });
    assert.equal(buryRing.evidence.direction, 'down');
    assert.equal(items[2]!.upload.id, b[0]);
    // Idempotent: the same groups, still open, are not queued again.
    assert.equal(await app.composed.detectVoteRings(), 0);
    assert.equal((await queue('open')).length, 3);
    // The ring grows: its open item takes the new account and the new evidence; no second item.
    const joiner = (await users(1, () => server()))[0]!;
    for (const id of a) await vote(joiner, id, 'fucks');
    ring.push(joiner);
    assert.equal(await app.composed.detectVoteRings(), 0);
    const open = await queue('open');
    assert.equal(open.length, 3);
    const grown = open.find((i) => i.id === boostRing.id)!;
    assert.deepEqual(name(grown), ring.map((u) => u.username).sort());
    assert.equal(grown.evidence.votes, 18);
  });

  test('401 without a user, 403 to a user who is not an admin, 404 unknown, 400 naming the field', async () => {
    const id = boostRing.id as string;
    assert.equal((await app.api.post(`/api/admin/vote-rings/${id}`, { action: 'void' })).status, 401);
    const user = await act(id, { action: 'void' }, honest[0]!.token);
    assert.equal(user.status, 403);
    assert.equal(user.body.error, 'forbidden');
    for (const unknown of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const r = await act(unknown, { action: 'dismiss' });
      assert.equal(r.status, 404, r.text);
      assert.equal(r.body.error, 'not_found');
    }
    for (const body of [{}, { action: 'ban' }, { action: 'void', reason: 7 }]) {
      const r = await act(id, body);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error, 'invalid_request');
      assert.match(r.body.message, 'reason' in body ? /reason/ : /action/);
    }
  });

  test('void deletes exactly the ring members’ votes; the counters equal the votes table', async () => {
    assert.deepEqual(await countsOf(a[0]!), { up: 8, down: 0 });
    const r = await act(boostRing.id, { action: 'void', reason: 'ring boosting one author' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.status, 'closed');
    assert.equal(r.body.action, 'void');
    assert.equal(r.body.voided_votes, 18);
    assert.equal(r.body.reason, 'ring boosting one author');
    assert.deepEqual(r.body.closed_by, { id: admin.id, username: admin.username });
    // The honest votes stay.
    assert.deepEqual(await countsOf(a[0]!), { up: 2, down: 0 });
    assert.deepEqual(await countsOf(a[1]!), { up: 0, down: 0 });
    assert.deepEqual(await countsOf(a[2]!), { up: 0, down: 0 });
    const left = await app.composed.db
      .db()
      .selectFrom('votes')
      .select((e) => e.fn.countAll<number | string>().as('n'))
      .where(
        'user_id',
        'in',
        ring.map((u) => u.id),
      )
      .executeTakeFirstOrThrow();
    assert.equal(Number(left.n), 0);
    assert.deepEqual(await counterMismatches(app.composed.db), []);
    // A second action on a closed item: 409, nothing changes.
    const again = await act(boostRing.id, { action: 'dismiss' });
    assert.equal(again.status, 409, again.text);
    assert.equal(again.body.error, 'conflict');
  });

  test('a void while the accounts keep voting leaves every counter equal to the votes table', async () => {
    // A fresh ring on the boosted author again; the void runs while its accounts vote on and retract others.
    const crew = await users(4, () => server('192.0.2'));
    for (const c of crew) for (const id of a) await vote(c, id, 'fucks');
    assert.equal(await app.composed.detectVoteRings(), 1);
    const item = (await queue('open')).find(
      (i) => i.kind === 'vote_ring' && i.accounts.some((u: { id: string }) => u.id === crew[0]!.id),
    )!;
    assert.ok(item, 'the new ring is queued');
    const churn = crew.flatMap((c, k) =>
      [a[0]!, a[1]!, b[3]!, b[4]!].map(async (id, j) => {
        const value = (k + j) % 3 === 0 ? 'none' : (k + j) % 2 ? 'fucks' : 'does_not_fuck';
        const r = await app.api.post('/api/vote', { uploadId: id, vote: value }, { token: c.token, headers: from(c) });
        assert.equal(r.status, 200, r.text);
      }),
    );
    const [voided] = await Promise.all([act(item.id, { action: 'void' }), ...churn]);
    assert.equal(voided.status, 200, voided.text);
    assert.ok(voided.body.voided_votes >= 6, `voided ${voided.body.voided_votes}`);
    churnVoided = voided.body.voided_votes;
    // Whatever the interleaving, the counters equal the votes (a vote cast after the void may stay).
    assert.deepEqual(await counterMismatches(app.composed.db), []);
  });

  test('dismiss (here with pixvote mod) closes the item, keeps the votes; the group is not queued again', async () => {
    const home = await mkdtemp(join(tmpdir(), 'pixvote-rings-home-'));
    try {
      const env = { PIXVOTE_URL: app.url, PIXVOTE_TOKEN: admin.token };
      const listed = await pixvote(['mod', 'queue'], { home, env });
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, new RegExp(`${buryRing.id}\\s+vote_ring\\s+4 accounts\\s+down upload ${b[7]}`));
      const done = await pixvote(['mod', 'ring', 'dismiss', buryRing.id], { home, env });
      assert.equal(done.code, 0, done.stderr);
      assert.equal(done.stdout, `vote ring ${buryRing.id} dismissed\n`);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
    const r = (await queue('closed')).find((i) => i.id === buryRing.id)!;
    assert.equal(r.action, 'dismiss');
    assert.equal(r.voided_votes, null);
    assert.equal(r.reason, '');
    assert.deepEqual(await countsOf(b[7]!), { up: 0, down: 4 });
    assert.equal(await app.composed.detectVoteRings(), 0);
    const open = await queue('open');
    assert.deepEqual(
      open.map((i) => i.kind),
      ['upload'],
    );
    const closed = (await queue('closed')).filter((i) => i.kind === 'vote_ring');
    // Most recently closed first (the ring voided during the churn in between).
    assert.equal(closed.length, 3);
    assert.equal(closed[0]!.id, buryRing.id);
    assert.equal(closed[2]!.id, boostRing.id);
    assert.deepEqual(await counterMismatches(app.composed.db), []);
  });

  test('the actions are counted in the metrics', async () => {
    const text = await currentMetrics(app);
    const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? -1);
    assert.equal(value(/^pixvote_vote_rings_queued_total (\d+)$/m), 3);
    assert.equal(value(/^pixvote_vote_ring_actions_total\{action="void"\} (\d+)$/m), 2);
    assert.equal(value(/^pixvote_vote_ring_actions_total\{action="dismiss"\} (\d+)$/m), 1);
    assert.equal(value(/^pixvote_vote_ring_votes_voided_total (\d+)$/m), 18 + churnVoided);
  });
});

test('with VOTE_RING_INTERVAL set, the job runs on its own', async () => {
  const own = await startApp({ VOTE_RING_INTERVAL: '1s', TRUST_PROXY: 'true' });
  try {
    const mod = await registerAdmin(own, `mod_${Math.random().toString(36).slice(2, 8)}`);
    const author = await registerUser(own.api);
    const id = (
      await uploadFields(own.api, author.token, { upload_type: 'link', external_url: 'https://example.com/solo' })
    ).body.id as string;
    // Four accounts from one server network, registered and voting there.
    const members: TestUser[] = [];
    for (let k = 1; k <= 4; k++) {
      const name = `ring_${Math.random().toString(36).slice(2, 10)}`;
      const headers = { 'x-forwarded-for': `203.0.113.${k}` };
      const reg = await own.api.post(
        '/api/auth',
        { action: 'register', email: `${name}@example.test`, username: name, password: `pw-${name}` },
        { headers },
      );
      assert.equal(reg.status, 201, reg.text);
      members.push({ id: reg.body.user.id, username: name, email: '', password: '', token: reg.body.token });
      const r = await own.api.post('/api/vote', { uploadId: id, vote: 'fucks' }, { token: reg.body.token, headers });
      assert.equal(r.status, 200, r.text);
    }
    const want = members.map((m) => m.id).sort();
    for (;;) {
      const r = await own.api.get('/api/admin/moderation', { token: mod.token });
      assert.equal(r.status, 200, r.text);
      // A run may have seen the ring half-voted; one that saw all of it queues it whole.
      const found = (r.body.items as Array<Record<string, any>>).some(
        (i) =>
          i.kind === 'vote_ring' &&
          JSON.stringify(i.accounts.map((u: { id: string }) => u.id).sort()) === JSON.stringify(want),
      );
      if (found) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    await own.close();
  }
});
