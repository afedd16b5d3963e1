/**
 * The rules behind sybil-resistant moderation that need no database: which reporters count toward the automatic
 * hold, when reports may still hold an upload, and what the public modlog may name.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { publiclyNamed } from '../../src/domain/moderation/moderation.types.ts';
import {
  DEFAULT_REPORT_TRUST,
  isTrustedReporter,
  reportsMayHold,
  trustedCount,
} from '../../src/domain/moderation/report-trust.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';

const NOW = new Date('2026-11-27T12:00:00.000Z');
const HOUR = 3600;
const ago = (seconds: number) => new Date(NOW.getTime() - seconds * 1000);
const reporter = (ageSeconds: number, acceptedUploads = 0, votes = 0) => ({
  createdAt: ago(ageSeconds),
  acceptedUploads,
  votes,
});

describe('report trust', () => {
  test('the default: at least 24 hours old and at least one accepted upload or 10 votes', () => {
    const rule = DEFAULT_REPORT_TRUST;
    assert.deepEqual(rule, { minAgeSeconds: 24 * HOUR, minUploads: 1, minVotes: 10 });
    const cases: Array<[string, ReturnType<typeof reporter>, boolean]> = [
      ['registered seconds ago, with history', reporter(5, 3, 50), false],
      ['one second short of a day, with an upload', reporter(24 * HOUR - 1, 1, 0), false],
      ['a day old, with an upload', reporter(24 * HOUR, 1, 0), true],
      ['a day old, with 10 votes', reporter(24 * HOUR, 0, 10), true],
      ['a day old, with 9 votes and no upload', reporter(24 * HOUR, 0, 9), false],
      ['a year old, no history at all', reporter(365 * 24 * HOUR), false],
    ];
    for (const [what, r, trusted] of cases) assert.equal(isTrustedReporter(rule, r, NOW), trusted, what);
  });

  test('a history leg at 0 is off; with both off, age alone decides; all at 0 trusts everyone', () => {
    const votesOnly = { minAgeSeconds: HOUR, minUploads: 0, minVotes: 5 };
    assert.equal(isTrustedReporter(votesOnly, reporter(2 * HOUR, 9, 0), NOW), false, 'uploads do not count');
    assert.equal(isTrustedReporter(votesOnly, reporter(2 * HOUR, 0, 5), NOW), true);
    const ageOnly = { minAgeSeconds: HOUR, minUploads: 0, minVotes: 0 };
    assert.equal(isTrustedReporter(ageOnly, reporter(HOUR), NOW), true);
    assert.equal(isTrustedReporter(ageOnly, reporter(HOUR - 1), NOW), false);
    const none = { minAgeSeconds: 0, minUploads: 0, minVotes: 0 };
    assert.equal(isTrustedReporter(none, reporter(0), NOW), true);
  });

  test('trustedCount counts only those that pass', () => {
    const rs = [reporter(5), reporter(2 * 24 * HOUR, 1), reporter(2 * 24 * HOUR, 0, 12), reporter(10, 1, 10)];
    assert.equal(trustedCount(DEFAULT_REPORT_TRUST, rs, NOW), 2);
    assert.equal(trustedCount(DEFAULT_REPORT_TRUST, [], NOW), 0);
  });

  test('reports hold only a visible upload no moderator approved', () => {
    assert.equal(reportsMayHold({ moderation: 'visible', moderatedAt: null }), true);
    assert.equal(reportsMayHold({ moderation: 'visible', moderatedAt: ago(60) }), false, 'approved once');
    assert.equal(reportsMayHold({ moderation: 'held', moderatedAt: null }), false);
    assert.equal(reportsMayHold({ moderation: 'removed', moderatedAt: ago(60) }), false);
  });
});

describe('the public modlog', () => {
  const line = (upload: { isPrivate: boolean; moderation: 'visible' | 'held' | 'removed' } | null) => ({
    target: { type: 'upload' as const, id: 'u1' },
    upload,
  });
  test('names a public upload that is visible or removed; never a private, held or deleted one', () => {
    assert.equal(publiclyNamed(line({ isPrivate: false, moderation: 'visible' })), true);
    assert.equal(publiclyNamed(line({ isPrivate: false, moderation: 'removed' })), true, 'removed while public');
    assert.equal(publiclyNamed(line({ isPrivate: false, moderation: 'held' })), false);
    for (const moderation of ['visible', 'held', 'removed'] as const)
      assert.equal(publiclyNamed(line({ isPrivate: true, moderation })), false, `private, ${moderation}`);
    assert.equal(publiclyNamed(line(null)), false, 'deleted since');
  });
  test('names users and blocklist entries', () => {
    assert.equal(publiclyNamed({ target: { type: 'user', id: 'x' } }), true);
    assert.equal(publiclyNamed({ target: { type: 'blocklist', id: 'x' } }), true);
  });
});

describe('configuration', () => {
  // JWT_SECRET is given: nothing is written into the folder, made once and removed after.
  const dataDir = mkdtempSync(join(tmpdir(), 'pixvote-trust-config-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));
  const base = () => ({ DATA_DIR: dataDir, JWT_SECRET: 'z'.repeat(48) });
  test("defaults: API.md's report trust, no minimum ages", () => {
    const c = loadConfig(base());
    assert.deepEqual(c.reportTrust, { minAgeSeconds: 24 * HOUR, minUploads: 1, minVotes: 10 });
    assert.equal(c.voteMinAccountAgeSeconds, 0);
    assert.equal(c.reportMinAccountAgeSeconds, 0);
  });
  test('durations like the other duration variables, and 0', () => {
    const c = loadConfig({
      ...base(),
      REPORT_TRUST_MIN_AGE: '0',
      REPORT_TRUST_MIN_UPLOADS: '0',
      REPORT_TRUST_MIN_VOTES: '25',
      VOTE_MIN_ACCOUNT_AGE: '7d',
      REPORT_MIN_ACCOUNT_AGE: '90s',
    });
    assert.deepEqual(c.reportTrust, { minAgeSeconds: 0, minUploads: 0, minVotes: 25 });
    assert.equal(c.voteMinAccountAgeSeconds, 7 * 24 * HOUR);
    assert.equal(c.reportMinAccountAgeSeconds, 90);
  });
  test('bad values are named in one error', () => {
    assert.throws(
      () =>
        loadConfig({
          ...base(),
          REPORT_TRUST_MIN_AGE: 'a day',
          REPORT_TRUST_MIN_VOTES: '-1',
          VOTE_MIN_ACCOUNT_AGE: '1w',
        }),
      (e: unknown) =>
        e instanceof ConfigError &&
        /REPORT_TRUST_MIN_AGE=a day: expected a duration/.test(e.message) &&
        /REPORT_TRUST_MIN_VOTES=-1: expected a non-negative integer/.test(e.message) &&
        /VOTE_MIN_ACCOUNT_AGE=1w: expected a duration/.test(e.message),
    );
  });
});
