/**
 * Minimum account age (API.md Moderation): an operator may require `VOTE_MIN_ACCOUNT_AGE` /
 * `REPORT_MIN_ACCOUNT_AGE`; a younger account gets 403 `account_too_new`, naming the rule and when the account
 * becomes old enough.
 */
import { errors } from './errors.ts';

/** `90s`, `15m`, `24h`, `7d`, or a combination in the largest units that divide it (`1h30m`). */
export function formatDuration(seconds: number): string {
  if (seconds <= 0) return '0s';
  const parts: string[] = [];
  let rest = seconds;
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) parts.push(`${n}${unit}`);
    rest -= n * size;
  }
  return parts.join('');
}

/**
 * Throws 403 `account_too_new` when an account created at `createdAt` is younger than `minAgeSeconds` at `now`
 * (0: no rule). `action` and `variable` name what is refused and the setting that refuses it.
 */
export function assertOldEnough(
  createdAt: Date,
  minAgeSeconds: number,
  now: Date,
  rule: { action: string; variable: string },
): void {
  if (minAgeSeconds <= 0) return;
  const oldEnoughAt = new Date(createdAt.getTime() + minAgeSeconds * 1000);
  if (now.getTime() >= oldEnoughAt.getTime()) return;
  throw errors.accountTooNew(
    `accounts younger than ${formatDuration(minAgeSeconds)} cannot ${rule.action} (${rule.variable}); ` +
      `this account can from ${oldEnoughAt.toISOString()}`,
  );
}
