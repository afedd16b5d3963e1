/**
 * The default HUMAN_THRESHOLD of the shipped detector (CenterNet: a 320 px first look, and HUMAN_SECOND_LOOK=boxes, a
 * closer look whose score decides where the first look is unsure): the "sure" score, refused at or above. Issue 32:
 * the lowest score with false rejects ≤ 0.3 % in every people-free kind of the tuning part (0.40), plus 0.02, by
 * research/person-filter-eval.ts (held-out figures: bench/person-filter.md). It was 0.30 (research/detector-eval.ts),
 * which is now the review score below.
 */
export const CALIBRATED_BOXES_THRESHOLD = 0.42;
/**
 * The default HUMAN_REVIEW_THRESHOLD (issue 32's gray zone: from it up to CALIBRATED_BOXES_THRESHOLD an upload is
 * held for a moderator): today's former threshold, so every person refused before is refused or held now (the
 * highest score keeping that on the tuning part was 0.35; research/person-filter-eval.ts, bench/person-filter.md).
 */
export const CALIBRATED_REVIEW_THRESHOLD = 0.3;
/** The default HUMAN_THRESHOLD with HUMAN_SECOND_LOOK=off (the first look alone), tuned the same way. */
export const CALIBRATED_FIRST_LOOK_THRESHOLD = 0.15;

/** What happens to an image in which the detector finds a person (HUMAN_POLICY). */
export type HumanPolicy = 'reject' | 'flag' | 'hold' | 'off';

/**
 * What an accepted image's person score asks of moderation: `flag` and `hold` queue it for review when the score
 * is at or above the threshold, and `hold` keeps it out of every listing until a moderator approves it.
 */
export function personReview(
  policy: HumanPolicy,
  threshold: number,
  score: number | null,
): { flag: boolean; hold: boolean } {
  const found = score !== null && score >= threshold && (policy === 'flag' || policy === 'hold');
  return { flag: found, hold: found && policy === 'hold' };
}

/**
 * Why an image is refused for showing a person, or null when the policy lets it in. One rule for images the
 * workers score now and for bytes already stored (and scored) under another upload.
 */
export function personRefusal(policy: HumanPolicy, threshold: number, score: number | null): string | null {
  if (policy !== 'reject' || score === null || score < threshold) return null;
  return (
    `a person was detected (score ${score.toFixed(3)}, threshold ${threshold}); ` +
    'images showing people are not accepted'
  );
}
