/**
 * A seeded population of voters for the vote-ring benchmark (bench/vote-rings.bench.ts): honest voters with
 * realistic habits, and planted rings of several strategies. Everything is drawn from one seed, so a population is
 * reproducible and two seeds give two independent populations (tune on one, report on the other).
 *
 * Honest habits: activity heavy-tailed (Pareto, most accounts vote a few times, a few hundreds of times); authors'
 * popularity Zipf-like and uploads' appeal log-normal, so votes pile onto popular authors' uploads; votes come soon
 * after an upload (exponential delay, mean 8 h) and follow a daily rhythm; 30 % of voters belong to a circle of
 * 3–8 friends, one of them an author the others upvote now and then (honest co-voting: the hard negative); most
 * accounts are months or years old, 5 % were created during the window; about 20 % of votes are down.
 */
import type { RingVote } from '../../src/domain/votes/vote-rings.ts';
import { seededRandom } from '../../test/support/fixtures.ts';

export const STRATEGIES = [
  'up-author-burst-young',
  'up-author-aged',
  'up-author-drip',
  'up-author-camouflage',
  'down-upload-burst-young',
  'down-upload-aged-camouflage',
] as const;
export type Strategy = (typeof STRATEGIES)[number];

export interface PlantedRing {
  strategy: Strategy;
  size: number;
  accounts: string[];
}

export interface Population {
  votes: RingVote[];
  created: Map<string, number>;
  honest: number;
  rings: PlantedRing[];
  windowMs: number;
  now: number;
}

const HOUR = 3600_000;
const DAY = 24 * HOUR;

/** Draws an index proportional to `weights` (cumulative sums + binary search). */
function sampler(weights: number[], rand: () => number) {
  const cum = new Float64Array(weights.length);
  let sum = 0;
  weights.forEach((w, i) => (cum[i] = sum += w));
  return () => {
    const x = rand() * sum;
    let lo = 0;
    let hi = cum.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cum[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

export function generatePopulation(opts: {
  seed: number;
  honest?: number;
  authors?: number;
  uploads?: number;
  /** Mean votes per honest voter in the window. */
  meanVotes?: number;
  sizes?: number[];
  /** Rings per size and strategy. */
  perCell?: number;
  days?: number;
}): Population {
  const rand = seededRandom(opts.seed);
  const honest = opts.honest ?? 100_000;
  const nAuthors = opts.authors ?? Math.round(honest / 10);
  const nUploads = opts.uploads ?? Math.round(honest / 2);
  const meanVotes = opts.meanVotes ?? 10;
  const days = opts.days ?? 14;
  const windowMs = days * DAY;
  const now = Date.UTC(2026, 10, 27);
  const start = now - windowMs;
  const normal = () => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  // Daily rhythm: a time pushed towards the evening (votes are three times likelier at 20:00 than at 04:00).
  const rhythm = (t: number) => {
    for (let i = 0; i < 4; i++) {
      const hour = (t % DAY) / HOUR;
      const p = (2 + Math.cos(((hour - 20) / 24) * 2 * Math.PI)) / 3;
      if (rand() < p) return t;
      t += rand() * 6 * HOUR;
    }
    return t;
  };

  const votes: RingVote[] = [];
  const created = new Map<string, number>();
  const user = (i: number) => `h${i}`;
  for (let i = 0; i < honest; i++) {
    // 5 % created during the window, the rest 1 month to 3 years before it.
    created.set(user(i), rand() < 0.05 ? start + rand() * windowMs * 0.9 : start - (30 + rand() * 1065) * DAY);
  }
  // Authors are honest users (the first nAuthors); popularity Zipf-like.
  const authorWeight = Array.from({ length: nAuthors }, (_, i) => 1 / Math.pow(i + 1, 0.9));
  const pickAuthor = sampler(authorWeight, rand);
  const uploadAuthor = new Int32Array(nUploads);
  const uploadAt = new Float64Array(nUploads);
  const uploadUp = new Float64Array(nUploads);
  const appeal: number[] = [];
  const byAuthor = new Map<number, number[]>();
  for (let p = 0; p < nUploads; p++) {
    const a = pickAuthor();
    uploadAuthor[p] = a;
    uploadAt[p] = start + rand() * windowMs;
    uploadUp[p] = 0.6 + rand() * 0.35;
    appeal.push(authorWeight[a]! * Math.exp(normal()));
    const list = byAuthor.get(a);
    if (list) list.push(p);
    else byAuthor.set(a, [p]);
  }
  const pickUpload = sampler(appeal, rand);
  const uploadId = (p: number) => `p${p}`;
  const authorId = (a: number) => user(a);

  const cast = (userId: string, p: number, value: 1 | -1, at: number) =>
    votes.push({ userId, uploadId: uploadId(p), authorId: authorId(uploadAuthor[p]!), value, at });

  // Friend circles: 30 % of voters, circles of 3–8, each around an author (an honest ring of fans).
  const circleOf = new Int32Array(honest).fill(-1);
  const circleAuthor: number[] = [];
  for (let i = 0; i < honest;) {
    const size = 3 + Math.floor(rand() * 6);
    if (rand() < 0.3) {
      const c = circleAuthor.length;
      circleAuthor.push(Math.floor(rand() * nAuthors));
      for (let k = 0; k < size && i + k < honest; k++) circleOf[i + k] = c;
    }
    i += size;
  }

  for (let i = 0; i < honest; i++) {
    const u = user(i);
    const born = created.get(u)!;
    // Pareto activity, shape 1.3 (mean ≈ meanVotes), at least one vote, at most 2 000.
    const activity = Math.min(2000, Math.ceil(((meanVotes * 0.3) / 1.3) * Math.pow(1 - rand(), -1 / 1.3)));
    const seen = new Set<number>();
    const circle = circleOf[i]!;
    for (let k = 0; k < activity; k++) {
      let p: number;
      if (circle >= 0 && rand() < 0.3) {
        const theirs = byAuthor.get(circleAuthor[circle]!) ?? [];
        if (!theirs.length) continue;
        p = theirs[Math.floor(rand() * theirs.length)]!;
      } else p = pickUpload();
      if (seen.has(p)) continue;
      seen.add(p);
      const at = rhythm(Math.max(uploadAt[p]!, born) + -Math.log(1 - rand()) * 8 * HOUR);
      if (at > now) continue;
      const friendly = circle >= 0 && uploadAuthor[p] === circleAuthor[circle];
      cast(u, p, friendly || rand() < uploadUp[p]! ? 1 : -1, at);
    }
  }

  // Rings.
  const rings: PlantedRing[] = [];
  const sizes = opts.sizes ?? [3, 5, 10, 20, 50];
  const perCell = opts.perCell ?? 10;
  let ringUser = 0;
  // Targets: authors of middling popularity with 2–12 uploads in the window (a ring boosts a nobody); any upload.
  const smallAuthors = [...byAuthor.entries()].filter(([a, l]) => a > nAuthors / 20 && l.length >= 2 && l.length <= 12);
  for (const strategy of STRATEGIES) {
    for (const size of sizes) {
      for (let r = 0; r < perCell; r++) {
        const accounts = Array.from({ length: size }, () => `r${ringUser++}`);
        const aged = !strategy.includes('young');
        const t0 = start + (0.3 + rand() * 0.6) * windowMs;
        for (const a of accounts)
          created.set(a, aged ? start - (60 + rand() * 600) * DAY : t0 - (0.5 + rand() * 48) * HOUR);
        const camouflage = strategy.includes('camouflage') ? 3 + Math.floor(rand() * 8) : 0;
        if (strategy.startsWith('up-author')) {
          const [, list] = smallAuthors[Math.floor(rand() * smallAuthors.length)]!;
          const drip = strategy.endsWith('drip');
          for (const a of accounts) {
            for (const p of list) {
              // Burst: within an hour of the operation (or of the upload, if later); drip: spread over 4 days.
              const base = Math.max(uploadAt[p]!, drip ? start : t0);
              const at = base + rand() * (drip ? 4 * DAY : HOUR);
              if (at <= now) cast(a, p, 1, at);
            }
          }
        } else {
          // Against one upload: a random upload posted before the operation.
          let p = pickUpload();
          for (let k = 0; k < 20 && uploadAt[p]! > t0; k++) p = pickUpload();
          for (const a of accounts) cast(a, p, -1, Math.max(t0, uploadAt[p]!) + rand() * (aged ? DAY : HOUR));
        }
        for (const a of accounts) {
          for (let k = 0; k < camouflage; k++) {
            const p = pickUpload();
            cast(a, p, 1, Math.min(now, uploadAt[p]! + rand() * 2 * DAY));
          }
        }
        rings.push({ strategy, size, accounts });
      }
    }
  }
  votes.sort((x, y) => x.at - y.at);
  return { votes, created, honest, rings, windowMs, now };
}
