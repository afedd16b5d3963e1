/**
 * The vote-ring detector (src/domain/votes/vote-rings.ts) on small hand-made windows: a ring is found with the
 * right evidence, honest co-voting is not accused, a ring among a target's honest fans is reported without them.
 * Its recall and false accusations at scale are measured in bench/vote-rings.bench.ts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AccountFacts } from '../../src/domain/votes/vote-facts.ts';
import { DEFAULT_RING_POLICY, detectVoteRings, type RingVote } from '../../src/domain/votes/vote-rings.ts';

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const T0 = Date.UTC(2026, 10, 20);

/** Account facts from creation times alone (vote-facts.ts). */
function facts(created: Map<string, number>): (u: string) => AccountFacts | undefined {
  return (u) => {
    const c = created.get(u);
    return c === undefined
      ? undefined
      : { createdAt: c, signupNet: null, signupUa: null, uploads: 0, reports: 0, votes: 0 };
  };
}

/** Honest background: `n` voters, each voting a few uploads of many authors, spread over days, old accounts. */
function background(n: number, created: Map<string, number>): RingVote[] {
  const votes: RingVote[] = [];
  for (let i = 0; i < n; i++) {
    const user = `h${i}`;
    created.set(user, T0 - 400 * DAY);
    for (let k = 0; k < 8; k++) {
      const upload = (i * 7 + k * 13) % 200;
      votes.push({
        userId: user,
        uploadId: `p${upload}`,
        authorId: `a${upload % 40}`,
        value: (i + k) % 5 === 0 ? -1 : 1,
        at: T0 + ((i * 37 + k * 11) % 240) * HOUR,
      });
    }
  }
  return votes;
}

describe('detectVoteRings', () => {
  test('young accounts upvoting every upload of one author within an hour are one ring, with the evidence', () => {
    const created = new Map<string, number>();
    const votes = background(300, created);
    const ring = Array.from({ length: 6 }, (_, i) => `r${i}`);
    const t = T0 + 5 * DAY;
    ring.forEach((u, i) => {
      created.set(u, t - 2 * HOUR);
      for (const p of ['q1', 'q2', 'q3'])
        votes.push({ userId: u, uploadId: p, authorId: 'boosted', value: 1, at: t + i * 60_000 });
    });
    const found = detectVoteRings(votes, facts(created));
    assert.equal(found.length, 1, JSON.stringify(found));
    const [only] = found;
    assert.deepEqual(only!.accounts, [...ring].sort());
    const e = only!.evidence;
    assert.deepEqual(e.target, { type: 'author', id: 'boosted' });
    assert.equal(e.direction, 'up');
    assert.equal(e.votes, 18);
    assert.equal(e.targetShare, 1);
    assert.equal(e.focus, 1);
    assert.equal(e.similarity, 1);
    assert.equal(e.burstShare, 1);
    assert.equal(e.youngAccounts, 6);
    assert.equal(e.medianAccountAgeMs, 2 * HOUR + 3 * 60_000);
    assert.deepEqual(e.burst, { from: t, to: t + DEFAULT_RING_POLICY.burstMs });
    assert.ok(e.score >= DEFAULT_RING_POLICY.minScore);
  });

  test('a burst of downvotes on one upload from fresh accounts is found; the upload is the target', () => {
    const created = new Map<string, number>();
    const votes = background(300, created);
    const t = T0 + 3 * DAY;
    for (let i = 0; i < 8; i++) {
      created.set(`d${i}`, t - HOUR);
      votes.push({ userId: `d${i}`, uploadId: 'p7', authorId: 'a7', value: -1, at: t + i * 120_000 });
    }
    const found = detectVoteRings(votes, facts(created));
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.deepEqual(found[0]!.evidence.target, { type: 'upload', id: 'p7' });
    assert.equal(found[0]!.evidence.direction, 'down');
    assert.deepEqual(found[0]!.accounts, Array.from({ length: 8 }, (_, i) => `d${i}`).sort());
  });

  test('a camouflaged downvote ring on one popular upload is found by its surge; its honest downvoters are not', () => {
    const created = new Map<string, number>();
    const votes = background(300, created);
    // A popular upload: 60 old accounts vote on it in its first day, a third of them down (honest dislike), each
    // with a few votes elsewhere.
    for (let i = 0; i < 60; i++) {
      const user = `fan${i}`;
      created.set(user, T0 - 500 * DAY);
      votes.push({
        userId: user,
        uploadId: 'hot',
        authorId: 'star',
        value: i % 3 === 0 ? -1 : 1,
        at: T0 + i * 20 * 60_000,
      });
      for (let k = 0; k < 4; k++)
        votes.push({
          userId: user,
          uploadId: `p${(i * 3 + k * 7) % 200}`,
          authorId: `a${k}`,
          value: 1,
          at: T0 + k * DAY,
        });
    }
    // Four days later: eight old accounts downvote it within a day, each hiding behind eight upvotes elsewhere (their
    // focus on it, 1/9, is below minFocus).
    const ring = Array.from({ length: 8 }, (_, i) => `c${i}`);
    ring.forEach((u, i) => {
      created.set(u, T0 - 300 * DAY);
      votes.push({ userId: u, uploadId: 'hot', authorId: 'star', value: -1, at: T0 + 4 * DAY + i * 2 * HOUR });
      for (let k = 0; k < 8; k++)
        votes.push({
          userId: u,
          uploadId: `p${(i * 11 + k * 13) % 200}`,
          authorId: `a${k}`,
          value: 1,
          at: T0 + k * HOUR,
        });
    });
    const found = detectVoteRings(votes, facts(created));
    assert.equal(found.length, 1, JSON.stringify(found));
    const [only] = found;
    assert.deepEqual(only!.accounts, [...ring].sort());
    const e = only!.evidence;
    assert.deepEqual(e.target, { type: 'upload', id: 'hot' });
    assert.equal(e.direction, 'down');
    assert.ok(e.focus < DEFAULT_RING_POLICY.minFocus);
    assert.ok(e.surge);
    assert.equal(e.surge.downShare, 1);
    assert.equal(e.surge.windowVotes, 8);
    assert.equal(e.surge.precedingVotes, 0);
    assert.deepEqual(e.surge.window, { from: T0 + 4 * DAY, to: T0 + 4 * DAY + DEFAULT_RING_POLICY.surgeMs });
  });

  test('honest downvoters of a disliked popular upload are not accused: their downvotes come with its traffic', () => {
    const created = new Map<string, number>();
    const votes = background(300, created);
    // A disliked upload: 80 old accounts in its first day and a half, 60 % down, one vote each; a trickle after.
    for (let i = 0; i < 90; i++) {
      const user = `v${i}`;
      created.set(user, T0 - 400 * DAY);
      const at = i < 80 ? T0 + i * 40 * 60_000 : T0 + 3 * DAY + (i - 80) * 7 * HOUR;
      votes.push({ userId: user, uploadId: 'meh', authorId: 'b', value: i % 5 < 3 ? -1 : 1, at });
    }
    assert.deepEqual(detectVoteRings(votes, facts(created)), []);
  });

  test('honest voters are not accused: spread votes, and friends who often upvote one author among others', () => {
    const created = new Map<string, number>();
    const votes = background(2000, created);
    // Five old friends: each upvotes two or three of their friend's eight uploads, on different days, and votes
    // plenty elsewhere.
    for (let f = 0; f < 5; f++) {
      const user = `friend${f}`;
      created.set(user, T0 - 900 * DAY);
      for (let k = 0; k < 3; k++) {
        votes.push({
          userId: user,
          uploadId: `fa${(f + k * 3) % 8}`,
          authorId: 'friend-author',
          value: 1,
          at: T0 + (f * 31 + k * 47) * HOUR,
        });
      }
      for (let k = 0; k < 12; k++)
        votes.push({
          userId: user,
          uploadId: `p${(f * 17 + k * 5) % 200}`,
          authorId: 'a1',
          value: 1,
          at: T0 + k * DAY,
        });
    }
    assert.deepEqual(detectVoteRings(votes, facts(created)), []);
  });

  test("a ring among a target's honest fans is reported without the fans", () => {
    const created = new Map<string, number>();
    const votes = background(300, created);
    // Fans: old accounts, each upvoting one of the author's four uploads at its own time, among other votes.
    for (let i = 0; i < 6; i++) {
      created.set(`fan${i}`, T0 - 300 * DAY);
      votes.push({ userId: `fan${i}`, uploadId: `s${i % 4}`, authorId: 'star', value: 1, at: T0 + i * 9 * HOUR });
      votes.push({ userId: `fan${i}`, uploadId: `p${i}`, authorId: `a${i}`, value: 1, at: T0 + i * 5 * HOUR });
    }
    const ring = Array.from({ length: 10 }, (_, i) => `r${i}`);
    ring.forEach((u, i) => {
      created.set(u, T0 - 200 * DAY);
      for (const p of ['s0', 's1', 's2', 's3'])
        votes.push({ userId: u, uploadId: p, authorId: 'star', value: 1, at: T0 + 2 * DAY + i * 5 * 60_000 });
    });
    const found = detectVoteRings(votes, facts(created));
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.deepEqual(found[0]!.accounts, [...ring].sort());
    assert.equal(found[0]!.evidence.youngAccounts, 0);
  });

  test('fewer accounts than minAccounts are never a ring; self-votes do not count', () => {
    const created = new Map<string, number>([['x', T0]]);
    const votes: RingVote[] = [
      { userId: 'x', uploadId: 'u1', authorId: 'x', value: 1, at: T0 },
      { userId: 'y', uploadId: 'u1', authorId: 'x', value: 1, at: T0 },
    ];
    assert.deepEqual(detectVoteRings(votes, facts(created)), []);
    assert.deepEqual(
      detectVoteRings([], () => undefined),
      [],
    );
  });
});
