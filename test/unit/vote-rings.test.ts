/**
 * The vote-ring detector (src/domain/votes/vote-rings.ts) on small hand-made windows: each rule of issue 45 on its
 * own. Rings are found by what links their accounts (a network few others use, proxies, dormant vote-only accounts
 * in excess), with per-account evidence; honest look-alikes (a fan burst from many homes, a campus, friends who
 * vote for each other) are not named. Recall and accusations at scale: bench/vote-rings.bench.ts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AccountFacts } from '../../src/domain/votes/vote-facts.ts';
import { DEFAULT_RING_POLICY, detectVoteRings, type RingVote } from '../../src/domain/votes/vote-rings.ts';

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const T0 = Date.UTC(2026, 10, 20);
const UAS = ['chrome', 'safari', 'chrome', 'firefox', 'chrome', 'edge', 'safari'];

class World {
  readonly votes: RingVote[] = [];
  readonly facts = new Map<string, AccountFacts>();
  account(id: string, f: Partial<AccountFacts> & { createdAt: number }): string {
    this.facts.set(id, { signupNet: null, signupUa: null, uploads: 0, reports: 0, votes: 0, ...f });
    return id;
  }
  vote(userId: string, uploadId: string, authorId: string, value: 1 | -1, at: number, net: string, ua: string) {
    this.votes.push({ userId, uploadId, authorId, value, at, net, ua });
    const f = this.facts.get(userId);
    if (f) f.votes++;
  }
  /** Honest background: old accounts, each voting from its own home, a few uploads of many authors. */
  background(n: number) {
    for (let i = 0; i < n; i++) {
      const u = this.account(`h${i}`, { createdAt: T0 - 400 * DAY, votes: 300, uploads: i % 3 });
      for (let k = 0; k < 8; k++) {
        const upload = (i * 7 + k * 13) % 200;
        this.vote(
          u,
          `p${upload}`,
          `a${upload % 40}`,
          (i + k) % 5 === 0 ? -1 : 1,
          T0 + ((i * 37 + k * 11) % 240) * HOUR,
          `home${i}`,
          UAS[i % 7]!,
        );
      }
    }
  }
  /** `n` fans with histories (old, 300 votes), each voting up `upload(i)` of `author` from its own home at `at(i)`. */
  fans(n: number, upload: (i: number) => string, author: string, at: (i: number) => number): string[] {
    return Array.from({ length: n }, (_, i) => {
      const u = this.account(`fan${i}`, { createdAt: T0 - 300 * DAY, votes: 300 });
      this.vote(u, upload(i), author, 1, at(i), `fanhome${i}`, UAS[i % 7]!);
      return u;
    });
  }
  /**
   * A busy network (25 of the background's accounts signed up behind a carrier's NAT, `car9`), 40 fans upvoting
   * the upload `pic` from their homes the evening of `t`, and the operator's phone: eight bought dormant accounts,
   * one vote each on it, all behind the NAT. Returns the ring.
   */
  carrierRing(t: number): string[] {
    for (let i = 0; i < 25; i++) this.facts.get(`h${i}`)!.signupNet = 'car9';
    this.fans(
      40,
      () => 'pic',
      'star',
      (i) => t + i * 6 * 60_000,
    );
    const ring = Array.from({ length: 8 }, (_, i) => this.account(`o${i}`, { createdAt: T0 - 500 * DAY, votes: 3 }));
    ring.forEach((u, i) => this.vote(u, 'pic', 'star', 1, t + 30 * 60_000 + i * 4 * 60_000, 'car9', UAS[i % 7]!));
    return ring;
  }
  detect() {
    return detectVoteRings(this.votes, (u) => this.facts.get(u));
  }
}

describe('detectVoteRings', () => {
  test('young accounts on one server network upvoting every upload of one author are one ring, with evidence', () => {
    const w = new World();
    w.background(300);
    const t = T0 + 5 * DAY;
    const ring = Array.from({ length: 6 }, (_, i) =>
      w.account(`r${i}`, { createdAt: t - 2 * HOUR, signupNet: 'dc1', signupUa: 'chrome' }),
    );
    ring.forEach((u, i) => {
      for (const p of ['q1', 'q2', 'q3']) w.vote(u, p, 'boosted', 1, t + i * 60_000, 'dc1', 'chrome');
    });
    const found = w.detect();
    assert.equal(found.length, 1, JSON.stringify(found));
    const e = found[0]!.evidence;
    assert.deepEqual(found[0]!.accounts, [...ring].sort());
    assert.deepEqual(e.target, { type: 'author', id: 'boosted' });
    assert.equal(e.direction, 'up');
    assert.equal(e.votes, 18);
    assert.equal(e.targetShare, 1);
    assert.equal(e.burstShare, 1);
    assert.equal(e.youngAccounts, 6);
    assert.equal(e.medianAccountAgeMs, 2 * HOUR + 3 * 60_000);
    assert.deepEqual(e.burst, { from: t, to: t + DEFAULT_RING_POLICY.burstMs });
    assert.equal(e.linkedAccounts, 6);
    assert.equal(e.sharedNetworks, 1);
    assert.ok(e.confidence >= 0.75 && e.confidence <= 1, String(e.confidence));
    assert.equal(e.members.length, 6);
    const m = e.members[0]!;
    assert.equal(m.account, 'r0');
    assert.equal(m.linkedMembers, 5);
    assert.equal(m.ageAtFirstVoteMs, 2 * HOUR);
    assert.equal(m.firstVoteOffsetMs, -3 * 60_000);
    assert.equal(m.onlyVotes, true);
    assert.match(m.reasons.join('; '), /shares 1 network/);
  });

  test('a fan burst from many homes is not a ring: old accounts with histories, each from its own network', () => {
    const w = new World();
    w.background(300);
    // A popular author posts; 40 notified fans upvote within the hour, from their homes, as they always do.
    for (let i = 0; i < 40; i++) {
      const u = w.account(`fan${i}`, { createdAt: T0 - (200 + i * 10) * DAY, votes: 500, signupNet: null });
      w.vote(u, 'star-new', 'star', 1, T0 + 3 * DAY + i * 60_000, `fanhome${i}`, UAS[i % 7]!);
      w.vote(u, `p${i}`, `a${i % 40}`, 1, T0 + i * HOUR, `fanhome${i}`, UAS[i % 7]!);
    }
    assert.deepEqual(w.detect(), []);
  });

  test('a ring on rented proxies (no shared network) with one activity shape is found', () => {
    const w = new World();
    w.background(300);
    const t = T0 + 4 * DAY;
    // Bought accounts: old, dormant (no votes before the window), never uploaded; every vote from a fresh
    // residential network.
    const ring = Array.from({ length: 8 }, (_, i) => w.account(`x${i}`, { createdAt: T0 - 700 * DAY }));
    let proxy = 0;
    ring.forEach((u, i) => {
      for (const p of ['s1', 's2', 's3', 's4', 's5'])
        w.vote(u, p, 'client', 1, t + i * 5 * 60_000 + proxy * 1000, `proxy${proxy++}`, 'chrome');
    });
    const found = w.detect();
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.deepEqual(found[0]!.accounts, [...ring].sort());
    const e = found[0]!.evidence;
    assert.equal(e.sharedNetworks, 0);
    assert.equal(e.proxyLikeAccounts, 8);
    assert.equal(e.dormantAccounts, 8);
    assert.ok(e.members.every((m) => m.proxyLike === 'strong' && m.dormant));
  });

  test('students behind one campus network upvoting a classmate are not a ring: a busy network links nobody', () => {
    const w = new World();
    w.background(300);
    // 60 students on the campus /24; 12 of them upvote a classmate's uploads the evening they are posted.
    for (let i = 0; i < 60; i++) {
      const u = w.account(`s${i}`, { createdAt: T0 - 100 * DAY, votes: 80, signupNet: 'campus' });
      w.vote(u, `p${(i * 3) % 200}`, `a${i % 40}`, 1, T0 + i * HOUR, 'campus', UAS[i % 7]!);
      if (i < 12)
        for (const p of ['c1', 'c2']) w.vote(u, p, 'classmate', 1, T0 + 2 * DAY + i * 120_000, 'campus', UAS[i % 7]!);
    }
    assert.deepEqual(w.detect(), []);
  });

  test('friends who joined the same day on one home network and upvote each other are not a ring', () => {
    const w = new World();
    w.background(300);
    const day = T0 + 2 * DAY;
    const friends = Array.from({ length: 5 }, (_, i) =>
      w.account(`f${i}`, { createdAt: day + i * HOUR, signupNet: 'flat', signupUa: UAS[i]! }),
    );
    friends.forEach((author, a) =>
      friends.forEach((voter, v) => {
        if (a !== v) w.vote(voter, `fp${a}`, author, 1, day + 8 * HOUR + (a * 5 + v) * 600_000, 'flat', UAS[v]!);
      }),
    );
    assert.deepEqual(w.detect(), []);
  });

  test('new accounts posting pictures on one home net, upvoting a friend living elsewhere, are not a ring', () => {
    const w = new World();
    w.background(300);
    const day = T0 + HOUR;
    w.account('friendX', { createdAt: day, signupNet: 'car', uploads: 1 });
    const friends = Array.from({ length: 5 }, (_, i) =>
      w.account(`g${i}`, { createdAt: day + i * HOUR, signupNet: 'flat', uploads: 1 }),
    );
    friends.forEach((u, i) => {
      w.vote(u, 'fx', 'friendX', 1, day + 8 * DAY + i * 20 * 60_000, 'flat', UAS[i]!);
      for (let k = 0; k < 2; k++) w.vote(u, `p${i * 5 + k}`, `a${i * 5 + k}`, 1, day + (2 + k) * DAY, 'flat', UAS[i]!);
    });
    assert.deepEqual(w.detect(), []);
  });

  test("a ring among a target's honest fans is reported without the fans", () => {
    const w = new World();
    w.background(300);
    for (let i = 0; i < 6; i++) {
      const u = w.account(`fan${i}`, { createdAt: T0 - 300 * DAY, votes: 200 });
      w.vote(u, `s${i % 4}`, 'star', 1, T0 + i * 9 * HOUR, `fh${i}`, 'safari');
      w.vote(u, `p${i}`, `a${i}`, 1, T0 + i * 5 * HOUR, `fh${i}`, 'safari');
    }
    const ring = Array.from({ length: 10 }, (_, i) => w.account(`r${i}`, { createdAt: T0 - 200 * DAY }));
    ring.forEach((u, i) => {
      for (const p of ['s0', 's1', 's2', 's3'])
        w.vote(u, p, 'star', 1, T0 + 2 * DAY + i * 5 * 60_000, `op${i % 2}`, 'chrome');
    });
    const found = w.detect();
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.deepEqual(found[0]!.accounts, [...ring].sort());
    assert.equal(found[0]!.evidence.linkedAccounts, 10);
  });

  test('a late downvote ring on a popular upload, hidden behind upvotes elsewhere, is found without the honest', () => {
    const w = new World();
    w.background(300);
    // A popular upload: 60 old accounts vote on it in its first day, a third of them down.
    for (let i = 0; i < 60; i++) {
      const u = w.account(`v${i}`, { createdAt: T0 - 500 * DAY, votes: 300 });
      w.vote(u, 'hot', 'star', i % 3 === 0 ? -1 : 1, T0 + i * 20 * 60_000, `vh${i}`, UAS[i % 7]!);
      for (let k = 0; k < 4; k++)
        w.vote(u, `p${(i * 3 + k * 7) % 200}`, `a${k}`, 1, T0 + k * DAY, `vh${i}`, UAS[i % 7]!);
    }
    // Four days later: eight accounts of one server downvote it, each hiding behind eight upvotes on uploads of
    // as many authors, at different times (their focus on it, 1/9, is under minFocus).
    const ring = Array.from({ length: 8 }, (_, i) => w.account(`c${i}`, { createdAt: T0 - 300 * DAY }));
    ring.forEach((u, i) => {
      w.vote(u, 'hot', 'star', -1, T0 + 4 * DAY + i * 2 * HOUR, 'dc9', 'chrome');
      for (let k = 0; k < 8; k++) {
        const p = (i * 11 + k * 13 + 1) % 200;
        w.vote(u, `p${p}`, `b${i * 8 + k}`, 1, T0 + (i * 8 + k) * 3 * HOUR, 'dc9', 'chrome');
      }
    });
    const found = w.detect();
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.deepEqual(found[0]!.accounts, [...ring].sort());
    assert.deepEqual(found[0]!.evidence.target, { type: 'upload', id: 'hot' });
    assert.equal(found[0]!.evidence.direction, 'down');
    assert.ok(found[0]!.evidence.focus < DEFAULT_RING_POLICY.minFocus);
  });

  test('new accounts on proxies upvoting one upload are judged by their infrastructure, not as newcomers', () => {
    const w = new World();
    w.background(300);
    const t = T0 + 4 * DAY;
    // Half of them posted a picture once (so the shape alone, dormant or new and only voting, does not name them);
    // every sign-up and every vote from a fresh residential network.
    const ring = Array.from({ length: 8 }, (_, i) =>
      w.account(`y${i}`, { createdAt: t - 5 * HOUR, signupNet: `signup${i}`, uploads: i % 2 }),
    );
    ring.forEach((u, i) => w.vote(u, 'one', 'client', 1, t + i * 7 * 60_000, `exit${i}`, UAS[i % 7]!));
    const found = w.detect();
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.deepEqual(found[0]!.accounts, [...ring].sort());
    assert.ok(found[0]!.evidence.confidence >= 0.75, String(found[0]!.evidence.confidence));
    assert.ok(found[0]!.evidence.members.every((m) => m.proxyLike === 'weak' && m.inExcess));
  });

  test('accounts made and left idle for over a week before a proxied vote count as dormant', () => {
    const w = new World();
    w.background(300);
    // Created on the window's first day from fresh networks, silent for nine days, then one vote each.
    const ring = Array.from({ length: 8 }, (_, i) =>
      w.account(`idle${i}`, { createdAt: T0 + HOUR, signupNet: `isign${i}`, uploads: i % 2 }),
    );
    ring.forEach((u, i) => w.vote(u, 'late', 'client', 1, T0 + 9 * DAY + i * 6 * 60_000, `iexit${i}`, UAS[i % 7]!));
    const found = w.detect();
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.deepEqual(found[0]!.accounts, [...ring].sort());
    assert.ok(found[0]!.evidence.members.every((m) => m.dormant));
  });

  test("a creator's new followers who signed up on a carrier's network and vote once from home are not a ring", () => {
    const w = new World();
    w.background(300);
    // The carrier's NAT: 40 of the old accounts signed up behind it.
    for (let i = 0; i < 40; i++) w.facts.get(`h${i}`)!.signupNet = 'carrier';
    const t = T0 + 3 * DAY;
    for (let i = 0; i < 10; i++) {
      const u = w.account(`nf${i}`, { createdAt: t - (10 + i) * HOUR, signupNet: 'carrier' });
      w.vote(u, `cat${i % 4}`, 'creator', 1, t + i * 20 * 60_000, `newhome${i}`, UAS[i % 7]!);
    }
    assert.deepEqual(w.detect(), []);
  });

  test("an old account that once voted from a café is not swept into a ring on its target's uploads", () => {
    const w = new World();
    w.background(300);
    const t = T0 + 4 * DAY;
    // Bought dormant accounts, two votes each from two fresh networks (weakly proxy-like, many of them).
    const ring = Array.from({ length: 8 }, (_, i) => w.account(`b${i}`, { createdAt: T0 - 600 * DAY, votes: 2 }));
    ring.forEach((u, i) => {
      w.vote(u, 'q1', 'client', 1, t + i * 5 * 60_000, `px${i}a`, 'chrome');
      w.vote(u, 'q2', 'client', 1, t + DAY + i * 5 * 60_000, `px${i}b`, 'chrome');
    });
    // A lurker with years of votes, two in the window: one on q1 from a café an hour after the ring, one at home.
    w.account('lurker', { createdAt: T0 - 900 * DAY, votes: 400 });
    w.vote('lurker', 'q1', 'client', 1, t + HOUR, 'cafe', 'safari');
    w.vote('lurker', 'p7', 'a7', 1, t + 2 * DAY, 'lurkerhome', 'safari');
    const found = w.detect();
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.deepEqual(found[0]!.accounts, [...ring].sort());
  });

  test("dormant vote-only accounts behind a carrier's NAT, far beyond its share, are linked; its fans are not", () => {
    const w = new World();
    w.background(600);
    // A busy network (25 of the old accounts, about 4 % of the window's voters), fans, the operator's phone.
    const ring = w.carrierRing(T0 + 5 * DAY);
    const found = w.detect();
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.deepEqual(found[0]!.accounts, [...ring].sort());
    assert.equal(found[0]!.evidence.linkedAccounts, 8);
  });

  test('a drip ring of weak proxies, back on one author on scattered evenings, never three at once, is found', () => {
    const w = new World();
    w.background(600);
    const t = T0 + 2 * DAY;
    // 30 fans with histories upvote the author's four uploads from their homes (one each, in the hour after it).
    w.fans(
      30,
      (i) => `d${i % 4}`,
      'drip',
      (i) => t + (i % 4) * DAY + i * 60_000,
    );
    // Eight bought dormant accounts signed up on quiet networks, two votes each on two of the four uploads, each
    // from a fresh network, one account an evening: weakly proxy-like, and no three of them in one session.
    const ring = Array.from({ length: 8 }, (_, i) =>
      w.account(`dr${i}`, { createdAt: T0 - 400 * DAY, votes: 2, signupNet: `drsign${i}` }),
    );
    ring.forEach((u, i) => {
      w.vote(u, `d${i % 4}`, 'drip', 1, t + i * DAY + 19 * HOUR, `drnet${i}a`, UAS[i % 7]!);
      w.vote(u, `d${(i + 1) % 4}`, 'drip', 1, t + (i + 0.5) * DAY + 21 * HOUR, `drnet${i}b`, UAS[i % 7]!);
    });
    const found = w.detect();
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.deepEqual(found[0]!.accounts, [...ring].sort());
    assert.ok(found[0]!.evidence.members.every((m) => m.proxyLike === 'weak' && m.inExcess));
  });

  test("a dormant lurker behind the operator's carrier NAT, voting days apart from the ring, is not linked", () => {
    const w = new World();
    w.background(600);
    const t = T0 + 5 * DAY;
    const ring = w.carrierRing(t);
    // A dormant lurker on the same carrier: one vote on the same upload, three days later.
    w.account('rider', { createdAt: T0 - 800 * DAY, votes: 2 });
    w.vote('rider', 'pic', 'star', 1, t + 3 * DAY, 'car9', 'safari');
    const found = w.detect();
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.deepEqual(found[0]!.accounts, [...ring].sort());
  });

  test("a dormant fan voting in a bought ring's session, and for other authors too, is not swept in", () => {
    const w = new World();
    w.background(600);
    const t = T0 + 3 * DAY;
    // 30 fans with histories: the upload among seven others each in the window (not candidates of it).
    w.fans(
      30,
      () => 'big',
      'star',
      (i) => t + i * 2 * 60_000,
    ).forEach((u, i) => {
      for (let k = 0; k < 7; k++)
        w.vote(u, `p${(i + k * 17) % 200}`, `a${k}`, 1, t + (k + 1) * DAY, `fanhome${i}`, 'safari');
    });
    // Ten bought dormant accounts that only vote, each once on the upload from its own home, in one hour.
    const ring = Array.from({ length: 10 }, (_, i) =>
      w.account(`bt${i}`, { createdAt: T0 - 500 * DAY, signupNet: `bthome${i}` }),
    );
    ring.forEach((u, i) => w.vote(u, 'big', 'star', 1, t + 10 * 60_000 + i * 5 * 60_000, `bthome${i}`, 'chrome'));
    // A dormant lurker back for a day: the upload in the ring's hour, and two uploads of other authors.
    w.account('lurker', { createdAt: T0 - 700 * DAY, votes: 2, signupNet: 'lurkerhome' });
    w.vote('lurker', 'big', 'star', 1, t + 20 * 60_000, 'lurkerhome', 'firefox');
    w.vote('lurker', 'p3', 'a3', 1, t + 2 * HOUR, 'lurkerhome', 'firefox');
    w.vote('lurker', 'p9', 'a9', 1, t + 3 * HOUR, 'lurkerhome', 'firefox');
    const found = w.detect();
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.deepEqual(found[0]!.accounts, [...ring].sort());
  });

  test('a camouflaged ring on one server, 2 ring votes among 60 browsing ones each (3 %), is found', () => {
    const w = new World();
    w.background(300);
    const t = T0 + 6 * DAY;
    const ring = Array.from({ length: 6 }, (_, i) => w.account(`c${i}`, { createdAt: T0 - 600 * DAY, votes: 200 }));
    ring.forEach((u, i) => {
      // Browsing like anyone: one vote on each of 60 authors' uploads, from the same server.
      for (let k = 0; k < 60; k++)
        w.vote(u, `b${i}.${k}`, `w${(i * 60 + k) % 97}`, 1, T0 + k * 3 * HOUR, 'dc7', 'chrome');
      for (const p of ['cam1', 'cam2']) w.vote(u, p, 'cam', 1, t + i * 5 * 60_000, 'dc7', 'chrome');
    });
    const found = w.detect();
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.deepEqual(found[0]!.accounts, [...ring].sort());
    const e = found[0]!.evidence;
    assert.deepEqual(e.target, { type: 'author', id: 'cam' });
    assert.ok(e.members.every((m) => m.focus < DEFAULT_RING_POLICY.minFocus / 3 && m.linkedMembers === 5));
  });

  test('six on one server, one vote each among a popular author’s fans, are found at a third of the score', () => {
    const w = new World();
    w.background(300);
    const t = T0 + 5 * DAY;
    // Two popular authors, 40 fans each over their three uploads.
    for (const author of ['pop', 'fav'])
      w.fans(
        40,
        (i) => `${author}${i % 3}`,
        author,
        (i) => t + i * 20 * 60_000,
      );
    // One operator's camouflaged accounts on its server, and a family of three on one home network voting alike for
    // another popular author: both browse 40 authors and vote once for their author, hours apart.
    const crowd = (prefix: string, n: number, net: string, author: string) =>
      Array.from({ length: n }, (_, i) => {
        const u = w.account(`${prefix}${i}`, { createdAt: T0 - 600 * DAY, votes: 200 });
        for (let k = 0; k < 40; k++)
          w.vote(u, `${prefix}b${i}.${k}`, `w${(i * 40 + k) % 97}`, 1, T0 + k * HOUR, net, 'chrome');
        w.vote(u, `${author}${i % 3}`, author, 1, t + i * 3 * HOUR, net, 'chrome');
        return u;
      });
    const ring = crowd('k', 6, 'dc8', 'pop');
    crowd('fam', 3, 'flat1', 'fav');
    const found = w.detect();
    assert.equal(found.length, 1, JSON.stringify(found.map((g) => [g.accounts, g.evidence.score])));
    assert.deepEqual(found[0]!.accounts, [...ring].sort());
    const e = found[0]!.evidence;
    assert.ok(e.score < DEFAULT_RING_POLICY.minScore && e.score >= DEFAULT_RING_POLICY.minScore / 3, String(e.score));
    assert.equal(e.linkedAccounts, 6);
  });

  test("another ring's browsing proxies that voted once on the target are left out of a proxy ring's group", () => {
    const w = new World();
    w.background(300);
    const t = T0 + 3 * DAY;
    let proxy = 0;
    const ring = Array.from({ length: 6 }, (_, i) =>
      w.account(`y${i}`, { createdAt: t - 3 * HOUR, signupNet: `proxy${proxy++}` }),
    );
    ring.forEach((u, i) => {
      for (const p of ['s1', 's2', 's3', 's4'])
        w.vote(u, p, 'client', 1, t + i * 5 * 60_000, `proxy${proxy++}`, 'chrome');
      for (const a of ['e1', 'e2']) w.vote(u, `${a}p`, a, 1, t + 2 * HOUR, `proxy${proxy++}`, 'chrome');
    });
    // Old accounts on proxies, each vote from a fresh one, voting widely; one vote each on the client's upload.
    const strays = ['z0', 'z1'].map((id) => w.account(id, { createdAt: T0 - 500 * DAY, votes: 300 }));
    strays.forEach((u, i) => {
      for (let k = 0; k < 40; k++) w.vote(u, `v${i}.${k}`, `w${k}`, 1, T0 + k * 4 * HOUR, `proxy${proxy++}`, 'chrome');
      w.vote(u, 's1', 'client', 1, t + 3 * HOUR, `proxy${proxy++}`, 'chrome');
    });
    const found = w.detect();
    const group = found.find((g) => g.evidence.target.id === 'client');
    assert.ok(group, JSON.stringify(found));
    assert.deepEqual(group.accounts, [...ring].sort());
    assert.ok(group.evidence.confidence >= 0.75, String(group.evidence.confidence));
    assert.ok(found.every((g) => strays.every((z) => !g.accounts.includes(z))));
  });

  test("a server's accounts in one session, among other operators' browsing proxies, are judged on their own", () => {
    const w = new World();
    w.background(300);
    const t = T0 + 5 * DAY;
    w.fans(
      90,
      (i) => `pop${i % 3}`,
      'pop',
      (i) => t + i * 20 * 60_000,
    );
    let proxy = 0;
    // Each browses 40 authors and votes once for the popular author: six of one operator's server in one session,
    // a neighbour on the same network days later, and four accounts of other operators on rented proxies.
    let n = 0;
    const browser = (id: string, net: () => string, upload: string, at: number) => {
      const u = w.account(id, { createdAt: T0 - 600 * DAY, votes: 200 });
      n++;
      for (let k = 0; k < 40; k++) w.vote(u, `${id}b${k}`, `w${(n * 40 + k) % 97}`, 1, T0 + k * HOUR, net(), 'chrome');
      w.vote(u, upload, 'pop', 1, at, net(), 'chrome');
      return u;
    };
    const ring = Array.from({ length: 6 }, (_, i) => browser(`k${i}`, () => 'dc8', 'pop0', t + i * 20 * 60_000));
    const neighbour = browser('nb', () => 'dc8', 'pop0', t + 3 * DAY);
    const strays = Array.from({ length: 4 }, (_, i) =>
      browser(`z${i}`, () => `proxy${proxy++}`, 'pop0', t + (i * 7 + 2) * HOUR),
    );
    const found = w.detect();
    const group = found.find((g) => g.accounts.includes('k0'));
    assert.ok(group, JSON.stringify(found.map((g) => [g.accounts, g.evidence.score])));
    assert.deepEqual(group.accounts, [...ring].sort());
    assert.ok(group.evidence.score < DEFAULT_RING_POLICY.minScore, String(group.evidence.score));
    assert.ok(found.every((g) => [neighbour, ...strays].every((z) => !g.accounts.includes(z))));
  });

  test('fewer accounts than minAccounts are never a ring; self-votes do not count', () => {
    const w = new World();
    w.account('x', { createdAt: T0 });
    w.vote('x', 'u1', 'x', 1, T0, 'n', 'chrome');
    w.vote('y', 'u1', 'x', 1, T0, 'n', 'chrome');
    assert.deepEqual(w.detect(), []);
    assert.deepEqual(
      detectVoteRings([], () => undefined),
      [],
    );
  });
});
