/**
 * A seeded community for the vote-ring benchmark (issue 45): 28 days of votes with the per-vote network and
 * user-agent family and the per-account facts (src/domain/votes/vote-facts.ts) the service records, honest
 * behaviours that look like rings (the hard negatives), and planted rings of eleven strategies on three kinds of
 * infrastructure. Written from what real communities and real rings do, not from the detector: nothing here reads
 * src/domain/votes/vote-rings.ts beyond its vote type.
 *
 * Honest accounts (`h…`), about 100k at the default size:
 * - Activity heavy-tailed (Pareto votes per day, mean ≈ 0.6), votes soon after an upload (exponential, mean 10 h)
 *   on a daily cycle (3× likelier at 20:00 than 04:00), the vote rate limit (20 an hour, RATE_LIMIT_VOTE) enforced
 *   on every account; ~18 % down, more on weak uploads. Ages: 1 month to 4 years, 6 % created during the 28 days.
 *   Lifetime facts: most never upload or report (lurkers), authors upload, ~8 % report; a history of votes before
 *   the window proportional to age and activity, and 20 % of old accounts were dormant (little history).
 * - Networks: a home /24 from a large residential pool (a few collisions), 20 % moved to another home net on some
 *   day; 12 % are mobile-only behind a carrier NAT (8 carriers × 4 nets, thousands of accounts per net: kind
 *   `carrier-nat`); 35 % of the others vote from a carrier net now and then; 6 % are students whose votes come
 *   70 % from their university's one /24 (15 universities: kind `university-net`); 3 % of votes from a one-off net
 *   (a café, a hotel). The sign-up network is known only for accounts created within the retention (90 days).
 * - User agents: chrome 55 %, safari 28 %, firefox 8 %, edge 6 %, samsung 2 %, other 1 %, one per account, 15 %
 *   with a second one.
 * Hard negatives (an account may be several kinds; `ordinary` is none of them):
 * - `notified-fan`, `superfan`: followers of the 400 most popular authors; on each new upload a follower is
 *   notified and votes within the hour with some chance (a superfan almost always, within minutes).
 * - `pile-on`: 30 bad uploads linked elsewhere; 12–72 h later 20–300 users downvote them over a day or three
 *   (85 % existing accounts, 15 % who signed up from the link).
 * - `viral-signup`: 8 viral uploads; 100–800 people sign up within two days, upvote it and half of them some of
 *   the author's other uploads in the same visit, then vote a little like anyone.
 * - `same-day-friends`: 300 groups of 3–8 who join the same day (40 % from one network: a dorm, a flat), upload
 *   1–3 pictures each and upvote each other's within hours.
 * - `new-follower`: 40 creators each found by 30–300 new followers (a quarter of them new accounts) who binge 3–10
 *   uploads of the back catalog in one visit.
 * - `tag-community`: 25 communities of 50–600 accounts around 8–30 authors, 40 % of their votes inside.
 * - `power-user`: 0.5 % voting 30–150 times a day, always at the rate limit's edge.
 *
 * Rings (`r…`; the authors they make up: `m…`, neither honest nor a ring member): sizes 3, 5, 10, 20, 50, `perCell`
 * rings per size and strategy, each starting at a random time in the 28 days. Strategies: see RING_STRATEGIES.
 * Infrastructure, per ring: `datacenter` (all members on 1–3 rented server nets), `proxy` (rented residential
 * proxies: every sign-up and every vote from a fresh residential net, the same pool honest homes come from), `own`
 * (the operator's home net and phone, a carrier NAT shared with thousands of honest accounts). User agents: one
 * family for all (often chrome; sometimes a script's `python`/`other`), or a spoofed realistic mix.
 */
import type { AccountFacts } from '../../src/domain/votes/vote-facts.ts';
import type { RingVote } from '../../src/domain/votes/vote-rings.ts';
import { seededRandom } from '../../test/support/fixtures.ts';

export const RING_STRATEGIES = [
  /** Upvote every upload of an author the operator made up (a new account posting 2–8 uploads). */
  'boost-new-author',
  /** Upvote the new uploads of an existing author with a real audience (popularity rank 30–2000). */
  'boost-existing-author',
  /** Upvote one upload of a made-up author. */
  'single-upload-new',
  /** Upvote one upload of an existing author. */
  'single-upload-existing',
  /** Each upload of the target gets a fresh 40–60 % of the ring. */
  'rotating',
  /** Over 21–28 days, a few members a day at evening hours, each upload of the target voted bit by bit. */
  'drip',
  /** Downvote every new upload of one existing author (a rival). */
  'downvote-author',
  /** A script: every member on every upload within two minutes of each other. */
  'lockstep',
  /** Bought aged accounts (1–4 years, dormant, sign-up net long gone) boosting an author. */
  'aged-bought',
  /** Upvote one author and downvote a competitor's uploads. */
  'boost-and-downvote',
  /** Aged accounts that also vote on popular uploads like honest users (15–60 votes each), boost 70 % of uploads. */
  'camouflaged',
] as const;
export type RingStrategy = (typeof RING_STRATEGIES)[number];

export const HARD_NEGATIVES = [
  'ordinary',
  'notified-fan',
  'superfan',
  'pile-on',
  'viral-signup',
  'same-day-friends',
  'new-follower',
  'tag-community',
  'power-user',
  'university-net',
  'carrier-nat',
] as const;
export type HardNegative = (typeof HARD_NEGATIVES)[number];

export type Infrastructure = 'datacenter' | 'proxy' | 'own';

export interface CommunityRing {
  strategy: RingStrategy;
  size: number;
  infra: Infrastructure;
  accounts: string[];
  /** When its first and last ring vote fall (a job run sees it when half its members vote inside its window). */
  from: number;
  to: number;
  /** Per member, the times of its ring votes (to tell which runs see it). */
  ringVotes: Map<string, number[]>;
}

export interface Community {
  /** All votes, sorted by time. */
  votes: RingVote[];
  /** Facts as of time `t` (lifetime counts include what happened before `t`). */
  factsAt(t: number): (userId: string) => AccountFacts | undefined;
  /** Honest accounts: id → bitmask over HARD_NEGATIVES (bit 0, ordinary, when none). */
  honestKinds: Map<string, number>;
  rings: CommunityRing[];
  start: number;
  end: number;
}

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const RETENTION = 90 * DAY;
const RATE = 20;

function sampler(weights: ArrayLike<number>, rand: () => number) {
  const cum = new Float64Array(weights.length);
  let sum = 0;
  for (let i = 0; i < weights.length; i++) cum[i] = sum += weights[i]!;
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

interface Account {
  id: string;
  created: number;
  kinds: number;
  home: string;
  /** A second home net from `moved` on (a new lease), or null. */
  home2: string | null;
  moved: number;
  carrier: number;
  /** Share of votes from the carrier. */
  mobile: number;
  uni: number;
  ua: string;
  ua2: string | null;
  uploadsBefore: number;
  reports: number;
  history: number;
  /** Proxy/datacenter ring members: their nets. */
  ringInfra: Infrastructure | null;
  ringNets: string[];
  signupNet: string | null;
  uploadTimes: number[];
}

export function generateCommunity(opts: {
  seed: number;
  honest?: number;
  perCell?: number;
  sizes?: number[];
}): Community {
  const rand = seededRandom(opts.seed);
  const N = opts.honest ?? 100_000;
  const perCell = opts.perCell ?? 8;
  const sizes = opts.sizes ?? [3, 5, 10, 20, 50];
  const end = Date.UTC(2026, 10, 28);
  const start = end - 28 * DAY;
  const uni = (a: number, b: number) => a + rand() * (b - a);
  const int = (a: number, b: number) => Math.floor(uni(a, b + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const normal = () => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  const expo = (mean: number) => -Math.log(1 - rand()) * mean;
  const bit = (k: HardNegative) => 1 << HARD_NEGATIVES.indexOf(k);
  // Daily cycle: push a time towards the evening.
  const rhythm = (t: number) => {
    for (let i = 0; i < 4; i++) {
      const hour = (((t % DAY) + DAY) % DAY) / HOUR;
      if (rand() < (2 + Math.cos(((hour - 20) / 24) * 2 * Math.PI)) / 3) return t;
      t += rand() * 6 * HOUR;
    }
    return t;
  };
  const residential = () => `res${Math.floor(rand() * 3 * N * 4)}`;
  const carriers = Array.from({ length: 8 }, (_, c) => Array.from({ length: 4 }, (_, k) => `car${c}.${k}`));
  const carrierWeight = [30, 22, 15, 12, 8, 6, 4, 3];
  const pickCarrier = sampler(carrierWeight, rand);
  const universities = Array.from({ length: 15 }, (_, k) => `uni${k}`);
  const uaFamilies = ['chrome', 'safari', 'firefox', 'edge', 'samsung', 'other'];
  const pickUaIndex = sampler([55, 28, 8, 6, 2, 1], rand);
  const pickUa = () => uaFamilies[pickUaIndex()]!;

  const accounts: Account[] = [];
  const byId = new Map<string, Account>();
  const newAccount = (id: string, created: number, kinds = 0): Account => {
    const studentish = rand() < 0.06;
    const mobileOnly = !studentish && rand() < 0.12;
    const a: Account = {
      id,
      created,
      kinds: kinds | (studentish ? bit('university-net') : 0) | (mobileOnly ? bit('carrier-nat') : 0),
      home: residential(),
      home2: rand() < 0.2 ? residential() : null,
      moved: start + rand() * 28 * DAY,
      carrier: pickCarrier(),
      mobile: mobileOnly ? 1 : rand() < 0.35 ? uni(0.1, 0.5) : 0,
      uni: studentish ? Math.floor(rand() * universities.length) : -1,
      ua: pickUa(),
      ua2: rand() < 0.15 ? pickUa() : null,
      uploadsBefore: 0,
      reports: rand() < 0.08 ? int(1, 10) : 0,
      history: 0,
      ringInfra: null,
      ringNets: [],
      signupNet: null,
      uploadTimes: [],
    };
    // Votes before the 28 days: none for an account created during them.
    const age = Math.max(0, start - created);
    const dormant = rand() < 0.2;
    a.history = dormant ? int(0, 5) : Math.round((age / DAY) * 0.3 * Math.exp(normal()));
    a.uploadsBefore = rand() < 0.25 ? Math.round(Math.exp(normal() * 1.2)) : 0;
    accounts.push(a);
    byId.set(id, a);
    return a;
  };
  /** The network an honest account votes from at `t`. */
  const netOf = (a: Account, t: number): string => {
    if (a.ringInfra === 'proxy') return residential();
    if (a.ringNets.length) return pick(a.ringNets);
    const x = rand();
    if (x < 0.03) return `cafe${Math.floor(rand() * 1e7)}`;
    if (a.uni >= 0 && rand() < 0.7) return universities[a.uni]!;
    if (rand() < a.mobile) return pick(carriers[a.carrier]!);
    return a.home2 && t >= a.moved ? a.home2 : a.home;
  };
  const uaOf = (a: Account) => (a.ua2 && rand() < 0.3 ? a.ua2 : a.ua);

  for (let i = 0; i < N; i++) {
    const created = rand() < 0.06 ? start + rand() * 27 * DAY : start - uni(30, 1460) * DAY;
    newAccount(`h${i}`, created);
  }

  // Authors: the first 10 % of accounts, popularity Zipf-like; uploads through the 28 days (and a back catalog
  // from before, which new followers and rings also vote on).
  const nAuthors = Math.round(N / 10);
  const authorWeight = Float64Array.from({ length: nAuthors }, (_, i) => 1 / Math.pow(i + 5, 0.9));
  const uAuthor: string[] = [];
  const uAt: number[] = [];
  const uAppeal: number[] = [];
  const uUp: number[] = [];
  const uploadsOf = new Map<string, number[]>();
  const addUpload = (author: string, at: number, appeal: number, up = uni(0.7, 0.97)) => {
    const p = uAuthor.length;
    uAuthor.push(author);
    uAt.push(at);
    uAppeal.push(appeal);
    uUp.push(up);
    const list = uploadsOf.get(author);
    if (list) list.push(p);
    else uploadsOf.set(author, [p]);
    return p;
  };
  for (let i = 0; i < nAuthors; i++) {
    const a = accounts[i]!;
    const n = Math.min(60, Math.round(Math.pow(1 - rand(), -1 / 1.5) * 2));
    a.uploadsBefore += n * 3;
    for (let k = 0; k < n; k++) {
      const at = start - 14 * DAY + rand() * 42 * DAY;
      if (at < Math.max(a.created, start - 14 * DAY)) continue;
      addUpload(a.id, at, authorWeight[i]! * Math.exp(normal()));
    }
  }

  const votes: RingVote[] = [];
  const ringOwned = new Set<string>();
  const cast = (a: Account, p: number, value: 1 | -1, at: number) => {
    if (at > end || at < a.created || a.id === uAuthor[p]) return;
    votes.push({ userId: a.id, uploadId: `p${p}`, authorId: uAuthor[p]!, value, at, net: netOf(a, at), ua: uaOf(a) });
  };

  // --- Rings first (their made-up authors' uploads join the pool honest voters browse). ---
  const rings: CommunityRing[] = [];
  const ringPairs = new Map<string, CommunityRing>();
  const infraOf = (): Infrastructure => {
    const x = rand();
    return x < 0.3 ? 'datacenter' : x < 0.75 ? 'proxy' : 'own';
  };
  const existingAuthor = (lo: number, hi: number) => {
    for (;;) {
      const i = int(lo, Math.min(hi, nAuthors - 1));
      if ((uploadsOf.get(`h${i}`)?.length ?? 0) >= 2) return `h${i}`;
    }
  };
  interface Plan {
    ring: CommunityRing;
    members: Account[];
    run: () => void;
  }
  const plans: Plan[] = [];
  let ringNo = 0;
  for (const strategy of RING_STRATEGIES) {
    for (const size of sizes) {
      for (let r = 0; r < perCell; r++) {
        const id = ringNo++;
        const infra = infraOf();
        const t0 = start + rand() * (strategy === 'drip' ? 14 : 26) * DAY;
        const aged =
          strategy === 'aged-bought' || strategy === 'camouflaged' || (rand() < 0.5 && strategy !== 'lockstep');
        const dc = Array.from({ length: int(1, 3) }, (_, k) => `dc${id}.${k}`);
        const ownNets = [residential(), pick(carriers[pickCarrier()]!)];
        const oneUa = rand() < 0.5 ? (rand() < 0.7 ? 'chrome' : pick(['python', 'other', 'firefox'])) : null;
        const members: Account[] = [];
        for (let k = 0; k < size; k++) {
          const created =
            strategy === 'aged-bought'
              ? start - uni(365, 1460) * DAY
              : aged
                ? start - uni(60, 900) * DAY
                : t0 - uni(0.5, 72) * HOUR;
          const m = newAccount(`r${id}.${k}`, created);
          m.kinds = 0;
          m.ringInfra = infra;
          m.ringNets = infra === 'datacenter' ? dc : infra === 'own' ? ownNets : [];
          m.ua = oneUa ?? pickUa();
          m.ua2 = null;
          m.reports = strategy === 'camouflaged' && rand() < 0.1 ? 1 : 0;
          m.uploadsBefore = rand() < (strategy === 'camouflaged' ? 0.4 : 0.12) ? int(1, 3) : 0;
          m.history =
            strategy === 'camouflaged'
              ? Math.round(((end - created) / DAY) * 0.2 * Math.exp(normal()))
              : aged
                ? int(0, 12)
                : 0;
          members.push(m);
        }
        const made = (n: number, spreadDays: number) => {
          const author = newAccount(`m${id}`, t0 - uni(1, 5) * DAY);
          ringOwned.add(author.id);
          author.kinds = 0;
          const list: number[] = [];
          for (let k = 0; k < n; k++)
            list.push(addUpload(author.id, t0 + rand() * spreadDays * DAY, 2e-4 * Math.exp(normal())));
          return author.id;
        };
        let target: string;
        let single = -1;
        if (strategy === 'boost-new-author' || (strategy === 'lockstep' && rand() < 0.5)) target = made(int(2, 8), 5);
        else if (strategy === 'single-upload-new') {
          target = made(1, 0);
          single = uploadsOf.get(target)![0]!;
        } else if (strategy === 'single-upload-existing') {
          target = existingAuthor(20, 3000);
          const list = uploadsOf.get(target)!;
          single = list[Math.floor(rand() * list.length)]!;
        } else if (strategy === 'boost-and-downvote' && rand() < 0.5) target = made(int(2, 6), 5);
        else target = existingAuthor(30, 2000);
        const competitor = strategy === 'boost-and-downvote' ? existingAuthor(30, 2000) : null;
        const ring: CommunityRing = {
          strategy,
          size,
          infra,
          accounts: members.map((m) => m.id),
          from: Infinity,
          to: -Infinity,
          ringVotes: new Map(),
        };
        rings.push(ring);
        const ringCast = (m: Account, p: number, value: 1 | -1, at: number) => {
          const before = votes.length;
          cast(m, p, value, at);
          if (votes.length > before) ringPairs.set(`${m.id}\u0000p${p}`, ring);
        };
        // The uploads a ring works on: the target's uploads posted in the operation's week, or its back catalog
        // at the start (an author with nothing new).
        const workOn = (author: string, days: number, atLeast = 1) => {
          const all = uploadsOf.get(author) ?? [];
          const fresh = all.filter((p) => uAt[p]! >= t0 && uAt[p]! < t0 + days * DAY).map((p) => ({ p, at: uAt[p]! }));
          if (fresh.length >= atLeast) return fresh;
          const back = all
            .filter((p) => uAt[p]! < t0)
            .slice(-6)
            .map((p) => ({ p, at: t0 + rand() * days * DAY }));
          return [...fresh, ...back];
        };
        const run = () => {
          const onEach = (
            author: string,
            value: 1 | -1,
            share: () => number,
            lag: () => number,
            spread: () => number,
            days = 7,
            atLeast = 1,
          ) => {
            for (const { p, at } of workOn(author, days, atLeast)) {
              const base = at + lag();
              const s = share();
              for (const m of members) if (rand() < s) ringCast(m, p, value, rhythm(base) + spread());
            }
          };
          const all = () => 1;
          switch (strategy) {
            case 'single-upload-new':
            case 'single-upload-existing': {
              const base = Math.max(t0, uAt[single]!) + uni(0, 3) * HOUR;
              for (const m of members) ringCast(m, single, 1, base + expo(40 * MIN));
              break;
            }
            case 'rotating':
              onEach(
                target,
                1,
                () => uni(0.4, 0.6),
                () => uni(0, 4) * HOUR,
                () => expo(45 * MIN),
              );
              break;
            case 'drip': {
              const days = uni(21, 28);
              const list = (uploadsOf.get(target) ?? []).filter((p) => uAt[p]! < t0 + days * DAY);
              for (const m of members) {
                for (const p of list) {
                  if (rand() < 0.3) continue;
                  const from = Math.max(uAt[p]!, t0);
                  const day = Math.floor(rand() * Math.max(1, (t0 + days * DAY - from) / DAY));
                  const at = from + day * DAY;
                  ringCast(m, p, 1, at - (at % DAY) + uni(18, 23) * HOUR);
                }
              }
              break;
            }
            case 'downvote-author':
              onEach(
                target,
                -1,
                () => uni(0.85, 1),
                () => uni(0, 6) * HOUR,
                () => expo(60 * MIN),
              );
              break;
            case 'lockstep':
              onEach(
                target,
                1,
                all,
                () => uni(0, 2) * HOUR,
                () => rand() * 2 * MIN,
              );
              break;
            case 'camouflaged':
              for (const m of members) browse(m, start, uni(0.5, 2.2), null);
              // Over two weeks, at least four uploads (the back catalog when the author posts less).
              onEach(
                target,
                1,
                () => 0.7,
                () => uni(0, 12) * HOUR,
                () => expo(4 * HOUR),
                14,
                4,
              );
              break;
            case 'boost-and-downvote':
              onEach(
                target,
                1,
                () => uni(0.8, 1),
                () => uni(0, 4) * HOUR,
                () => expo(60 * MIN),
              );
              onEach(
                competitor!,
                -1,
                () => uni(0.8, 1),
                () => uni(0, 6) * HOUR,
                () => expo(60 * MIN),
              );
              break;
            default:
              // boost-new-author, boost-existing-author, aged-bought
              onEach(
                target,
                1,
                () => uni(0.85, 1),
                () => uni(0, 4) * HOUR,
                () => expo(60 * MIN),
              );
          }
        };
        plans.push({ ring, members, run });
        for (const m of members) {
          m.signupNet = infra === 'proxy' ? residential() : netOf(m, m.created);
          ringOwned.add(m.id);
        }
      }
    }
  }

  // --- Honest behaviours. ---
  const honest = accounts.filter((a) => a.id.startsWith('h'));
  const pickUpload = sampler(uAppeal, rand);
  // Ordinary browsing: Pareto votes per day; power users at the rate limit's edge.
  const browse = (a: Account, from: number, perDay: number, community: number[] | null) => {
    const days = Math.max(0, (end - Math.max(from, a.created)) / DAY);
    const n = Math.round(perDay * days * (0.6 + rand() * 0.8));
    const seen = new Set<number>();
    for (let k = 0; k < n; k++) {
      const p = community && rand() < 0.4 ? pick(community) : pickUpload();
      if (seen.has(p)) continue;
      seen.add(p);
      const at = rhythm(Math.max(uAt[p]!, a.created, from) + expo(10 * HOUR));
      cast(a, p, rand() < uUp[p]! ? 1 : -1, at);
    }
  };
  const communityOf = new Map<Account, number[]>();
  for (let c = 0; c < 25; c++) {
    const authors = Array.from({ length: int(8, 30) }, () => `h${int(50, nAuthors - 1)}`);
    const ups = authors.flatMap((x) => uploadsOf.get(x) ?? []);
    const size = int(50, 600);
    for (let k = 0; k < size; k++) {
      const a = pick(honest);
      a.kinds |= bit('tag-community');
      communityOf.set(a, ups);
    }
  }
  for (const a of honest) {
    const power = rand() < 0.005;
    if (power) a.kinds |= bit('power-user');
    const perDay = power ? uni(30, 150) : Math.min(20, 0.18 * Math.pow(1 - rand(), -1 / 1.4));
    browse(a, start - 7 * DAY, perDay, communityOf.get(a) ?? null);
  }

  // Followers of the 400 most popular authors: notified of each new upload.
  const pickActive = () => honest[Math.floor(Math.pow(rand(), 1) * honest.length)]!;
  for (let i = 0; i < 400; i++) {
    const author = `h${i}`;
    const list = (uploadsOf.get(author) ?? []).filter((p) => uAt[p]! >= start - 7 * DAY);
    const followers = Math.max(15, Math.round(3000 * (authorWeight[i]! / authorWeight[0]!)));
    for (let f = 0; f < followers; f++) {
      const a = pickActive();
      const superfan = rand() < 0.05;
      a.kinds |= bit(superfan ? 'superfan' : 'notified-fan');
      const chance = superfan ? 0.85 : 0.08;
      for (const p of list) {
        if (rand() >= chance) continue;
        const delay = superfan
          ? Math.exp(Math.log(4 * MIN) + normal())
          : Math.min(3 * HOUR, Math.exp(Math.log(15 * MIN) + normal()));
        cast(a, p, 1, uAt[p]! + delay);
      }
    }
  }

  // Honest pile-ons on bad uploads linked elsewhere.
  for (let k = 0; k < 30; k++) {
    const author = `h${int(100, nAuthors - 1)}`;
    const at = start + uni(1, 25) * DAY;
    const p = addUpload(author, at, 1e-5, 0.3);
    const link = at + uni(12, 72) * HOUR;
    const span = uni(24, 72) * HOUR;
    const n = int(20, 300);
    for (let j = 0; j < n; j++) {
      const when = link + Math.pow(rand(), 2) * span;
      const a = rand() < 0.15 ? newAccount(`h${accounts.length}`, when - expo(30 * MIN), 0) : pickActive();
      if (!a.signupNet && a.created > end - RETENTION - 28 * DAY) a.signupNet = netOf(a, a.created);
      a.kinds |= bit('pile-on');
      cast(a, p, rand() < 0.9 ? -1 : 1, when + (a.created > link ? 2 * MIN : 0));
      if (a.created > link) browse(a, when, 0.3, null);
    }
  }

  // Viral sign-ups.
  for (let k = 0; k < 8; k++) {
    const author = existingAuthor(500, nAuthors - 1);
    const at = start + uni(1, 25) * DAY;
    const p = addUpload(author, at, 1e-5, 0.97);
    const others = uploadsOf.get(author)!.filter((q) => q !== p && uAt[q]! < at);
    const n = int(100, 800);
    for (let j = 0; j < n; j++) {
      const when = at + Math.pow(rand(), 1.5) * 48 * HOUR;
      const a = newAccount(`h${accounts.length}`, when, bit('viral-signup'));
      cast(a, p, 1, when + expo(5 * MIN));
      if (rand() < 0.5) for (const q of others) if (rand() < 0.5) cast(a, q, 1, when + uni(2, 20) * MIN);
      if (rand() < 0.6) browse(a, when, 0.3, null);
    }
  }

  // Same-day friends.
  for (let g = 0; g < 300; g++) {
    const day = start + uni(0, 26) * DAY;
    const shared = rand() < 0.4 ? residential() : null;
    const group = Array.from({ length: int(3, 8) }, () => {
      const a = newAccount(`h${accounts.length}`, day + rand() * 6 * HOUR, bit('same-day-friends'));
      if (shared) a.home = shared;
      return a;
    });
    const theirs = group.flatMap((a) =>
      Array.from({ length: int(1, 3) }, () => ({ a, p: addUpload(a.id, a.created + uni(0, 10) * DAY, 3e-4) })),
    );
    for (const { a, p } of theirs) {
      for (const f of group) if (f !== a && rand() < 0.8) cast(f, p, 1, rhythm(uAt[p]! + expo(3 * HOUR)));
      a.uploadsBefore = 0;
    }
    for (const a of group) browse(a, a.created, 0.4, null);
  }

  // A creator's new followers binge the back catalog.
  for (let k = 0; k < 40; k++) {
    const author = existingAuthor(50, 3000);
    const list = uploadsOf.get(author)!;
    const n = int(30, 300);
    for (let j = 0; j < n; j++) {
      const when = rhythm(start + rand() * 28 * DAY);
      const a = rand() < 0.25 ? newAccount(`h${accounts.length}`, when - expo(DAY), 0) : pickActive();
      a.kinds |= bit('new-follower');
      const binge = int(3, 10);
      let t = when;
      for (let b = 0; b < binge; b++) {
        const p = pick(list);
        if (uAt[p]! > t) continue;
        cast(a, p, 1, (t += uni(0.3, 3) * MIN));
      }
    }
  }

  for (const plan of plans) plan.run();

  // Sign-up networks (known within the retention), the vote rate limit, the sort.
  for (const a of accounts)
    if (!a.signupNet && a.created > end - RETENTION - 28 * DAY)
      a.signupNet = a.ringInfra === 'proxy' ? residential() : netOf(a, a.created);
  votes.sort((x, y) => x.at - y.at);
  const recent = new Map<string, number[]>();
  const kept: RingVote[] = [];
  const seenPair = new Set<string>();
  for (const v of votes) {
    const pair = `${v.userId}\u0000${v.uploadId}`;
    if (seenPair.has(pair)) continue;
    let q = recent.get(v.userId);
    if (!q) recent.set(v.userId, (q = []));
    while (q.length && v.at - q[0]! >= HOUR) q.shift();
    if (q.length >= RATE) continue;
    q.push(v.at);
    seenPair.add(pair);
    kept.push(v);
  }
  // A ring's votes are those that survived the limit.
  for (const v of kept) {
    const ring = ringPairs.get(`${v.userId}\u0000${v.uploadId}`);
    if (!ring) continue;
    ring.from = Math.min(ring.from, v.at);
    ring.to = Math.max(ring.to, v.at);
    const list = ring.ringVotes.get(v.userId);
    if (list) list.push(v.at);
    else ring.ringVotes.set(v.userId, [v.at]);
  }

  const honestKinds = new Map<string, number>();
  for (const a of accounts) if (a.id.startsWith('h')) honestKinds.set(a.id, a.kinds || bit('ordinary'));
  // Per account, the times of its votes (lifetime vote counts as of a job run) and its uploads' times.
  const voteTimes = new Map<string, number[]>();
  for (const v of kept) {
    const l = voteTimes.get(v.userId);
    if (l) l.push(v.at);
    else voteTimes.set(v.userId, [v.at]);
  }
  for (let p = 0; p < uAuthor.length; p++) byId.get(uAuthor[p]!)?.uploadTimes.push(uAt[p]!);
  const countUpTo = (xs: number[] | undefined, t: number) => {
    if (!xs) return 0;
    let lo = 0;
    let hi = xs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (xs[mid]! <= t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  for (const a of accounts) a.uploadTimes.sort((x, y) => x - y);
  return {
    votes: kept,
    factsAt: (t) => (id) => {
      const a = byId.get(id);
      if (!a || a.created > t) return undefined;
      return {
        createdAt: a.created,
        signupNet: a.created > t - RETENTION ? a.signupNet : null,
        signupUa: a.created > t - RETENTION ? a.ua : null,
        uploads: a.uploadsBefore + countUpTo(a.uploadTimes, t),
        reports: a.reports,
        votes: a.history + countUpTo(voteTimes.get(id), t),
      };
    },
    honestKinds,
    rings,
    start,
    end,
  };
}
