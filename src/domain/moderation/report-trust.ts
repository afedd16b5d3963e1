/**
 * Report trust (API.md Reports): only reporters that pass this rule count toward `REPORT_HOLD_THRESHOLD`, so that
 * accounts registered a moment ago cannot hold an upload by themselves; their reports still reach the queue.
 * A reporter is trusted when the account is at least `minAgeSeconds` old and has some history: at least
 * `minUploads` accepted uploads (visible: neither held nor removed) or at least `minVotes` votes. A history leg
 * set to 0 is off; with both off, age alone decides.
 */
export interface ReportTrustRule {
  /** REPORT_TRUST_MIN_AGE, in seconds (0: any age). */
  minAgeSeconds: number;
  /** REPORT_TRUST_MIN_UPLOADS (0: this leg is off). */
  minUploads: number;
  /** REPORT_TRUST_MIN_VOTES (0: this leg is off). */
  minVotes: number;
}

/** What the rule reads of a reporter. Counts may be capped at the rule's minimums (the store counts no further). */
export interface ReporterHistory {
  createdAt: Date;
  /** Uploads of theirs that are visible now. */
  acceptedUploads: number;
  /** Votes of theirs that stand now. */
  votes: number;
}

/** API.md's default: at least 24 hours old and at least one accepted upload or 10 votes. */
export const DEFAULT_REPORT_TRUST: Readonly<ReportTrustRule> = Object.freeze({
  minAgeSeconds: 24 * 3600,
  minUploads: 1,
  minVotes: 10,
});

export function isTrustedReporter(rule: ReportTrustRule, reporter: ReporterHistory, now: Date): boolean {
  const oldEnough = now.getTime() - reporter.createdAt.getTime() >= rule.minAgeSeconds * 1000;
  if (!oldEnough) return false;
  if (rule.minUploads <= 0 && rule.minVotes <= 0) return true;
  return (
    (rule.minUploads > 0 && reporter.acceptedUploads >= rule.minUploads) ||
    (rule.minVotes > 0 && reporter.votes >= rule.minVotes)
  );
}

/**
 * Whether reports hold this upload automatically now: it is visible, and no moderator approved it (a visible
 * upload a moderator acted on was approved: approval is the only action that leaves it visible). After an approval
 * the same pattern again needs a moderator: the reports reach the queue, and nothing holds it by itself.
 */
export function reportsMayHold(upload: { moderation: string; moderatedAt: Date | null }): boolean {
  return upload.moderation === 'visible' && upload.moderatedAt === null;
}

/** How many of these reporters count toward the threshold. */
export function trustedCount(rule: ReportTrustRule, reporters: readonly ReporterHistory[], now: Date): number {
  return reporters.filter((r) => isTrustedReporter(rule, r, now)).length;
}
