/** The minimum account age rule (VOTE_MIN_ACCOUNT_AGE, REPORT_MIN_ACCOUNT_AGE) and how it writes durations. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertOldEnough, formatDuration } from '../../src/domain/account-age.ts';

const NOW = new Date('2026-11-27T12:00:00.000Z');
const HOUR = 3600;
const ago = (seconds: number) => new Date(NOW.getTime() - seconds * 1000);

describe('minimum account age', () => {
  const rule = { action: 'vote', variable: 'VOTE_MIN_ACCOUNT_AGE' };
  const refusal = (createdAt: Date, minAge: number) => {
    try {
      assertOldEnough(createdAt, minAge, NOW, rule);
      return null;
    } catch (e) {
      return e as { code: string; status: number; message: string };
    }
  };
  test('0 is no rule; an account exactly as old as the rule passes', () => {
    assert.equal(refusal(NOW, 0), null);
    assert.equal(refusal(ago(HOUR), HOUR), null);
  });
  test('a younger account: 403 account_too_new naming the rule and when it becomes old enough', () => {
    const e = refusal(ago(20 * 60), HOUR);
    assert.equal(e?.code, 'account_too_new');
    assert.equal(e?.status, 403);
    assert.match(e?.message ?? '', /younger than 1h cannot vote \(VOTE_MIN_ACCOUNT_AGE\)/);
    assert.match(e?.message ?? '', /from 2026-11-27T12:40:00\.000Z/);
  });
  test('durations read as they are written', () => {
    assert.equal(formatDuration(90), '1m30s');
    assert.equal(formatDuration(24 * HOUR), '1d');
    assert.equal(formatDuration(HOUR), '1h');
    assert.equal(formatDuration(45), '45s');
    assert.equal(formatDuration(0), '0s');
  });
});
