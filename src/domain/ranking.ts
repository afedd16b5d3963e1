/**
 * Feed orders (docs/architecture.md, "Feeds, votes and caching", writes them out):
 * - top:  score = upvotes − downvotes
 * - hot:  sign(s)·log10(max(|s|, 1)) + (t − t0) / 45000  (Reddit): every 12.5 h of age costs a factor of ten in score.
 *         It does not depend on "now", so it is stored and indexed, and moved with every vote.
 * - best: the lower bound of the Wilson score interval for the share of upvotes, z = 1.28 (80 %).
 */
export const HOT_EPOCH_SECONDS = 1_700_000_000;
export const HOT_DECAY_SECONDS = 45_000;
export const WILSON_Z = 1.28;

export function hotRank(score: number, createdAt: Date): number {
  const order = Math.log10(Math.max(Math.abs(score), 1));
  return Math.sign(score) * order + (createdAt.getTime() / 1000 - HOT_EPOCH_SECONDS) / HOT_DECAY_SECONDS;
}

export function wilsonLowerBound(up: number, down: number, z = WILSON_Z): number {
  const n = up + down;
  if (n === 0) return 0;
  const p = up / n;
  const z2 = z * z;
  return (p + z2 / (2 * n) - z * Math.sqrt((p * (1 - p) + z2 / (4 * n)) / n)) / (1 + z2 / n);
}
