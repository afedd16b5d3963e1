/**
 * Vote-ring detection (issue 27): groups of accounts that vote in lockstep for one author or against one upload.
 * Pure: fed with a window of votes and the voters' account creation times, it returns candidate rings with the
 * evidence a moderator reads. CopyCatch-like (Beutel et al., WWW 2013: users acting on the same targets within the
 * same time window), reduced to what a vote ring does here: it concentrates on ONE target.
 *
 * Linear in the votes (plus a sort per target): every vote goes to two buckets, (author, direction) and (upload,
 * direction); per bucket the voters that put a large share of their own votes there (their focus) are the
 * candidates. Their lockstep (the share of them whose first vote on the target falls in the densest `burstMs`
 * window, and how alike their sets of the target's uploads are), the share of the target's votes they cast, their
 * focus, how young their accounts are and how many they are make a score in [0, 6]; a group at or above
 * `minScore` with at least `minAccounts` accounts is a candidate. Members out of step with the rest (other
 * uploads, far less focus, old among young) are pruned first.
 *
 * A second path, the surge, judges the target instead of each member's focus (a ring that hides its one downvote
 * among upvotes elsewhere has little): per upload, the `surgeMs` window where its downvotes most outnumber its
 * upvotes; reported when the window is mostly down, opens well after the upload's first vote, holds more votes
 * than the window before it, and at least `surgeMinAccounts` of its downvoters cast no other downvote. Thresholds:
 * bench/vote-rings.md (tuned on one generated population, reported on another).
 */
import type { AccountFacts } from './vote-facts.ts';

export interface RingVote {
  userId: string;
  uploadId: string;
  /** The upload's author. */
  authorId: string;
  value: 1 | -1;
  /** When the vote was cast (ms since epoch). */
  at: number;
  /** The keyed hash of the voter's network when voting (vote-facts.ts; null or absent: unknown). */
  net?: string | null;
  /** The voter's user-agent family when voting (null or absent: unknown). */
  ua?: string | null;
}

export interface RingPolicy {
  /** The fewest accounts a ring has. */
  minAccounts: number;
  /** A voter is a candidate of a target when at least this share of their votes in the window went to it. */
  minFocus: number;
  /** An account younger than this at its first vote on the target counts as young (ms). */
  youngMs: number;
  /** The burst window (ms): the share of the group whose first vote on the target falls in the densest one. */
  burstMs: number;
  /** The group's score needed to be reported (six terms, each 0..1: see RingEvidence.score). */
  minScore: number;
  /**
   * The second path, a surge of downvotes on one upload (see RingEvidence.surge), which judges the target rather
   * than each member's focus: the window (ms) in which the downvotes are counted.
   */
  surgeMs: number;
  /** The fewest accounts of a surge (downvoters in the window whose only downvote it is; at least minAccounts). */
  surgeMinAccounts: number;
  /** Of the upload's votes in the surge window, the share that is down. */
  surgeMinDownShare: number;
  /** The window's votes must be at least this many times the votes of the window before it, plus one. */
  surgeVsPreceding: number;
  /** The window opens at least this long after the upload's first vote (its organic traffic came first; ms). */
  surgeMinDelayMs: number;
}

export const DEFAULT_RING_POLICY: RingPolicy = {
  minAccounts: 3,
  minFocus: 0.15,
  youngMs: 7 * 24 * 3600_000,
  burstMs: 3600_000,
  minScore: 2.8,
  surgeMs: 24 * 3600_000,
  surgeMinAccounts: 4,
  surgeMinDownShare: 0.55,
  surgeVsPreceding: 1,
  surgeMinDelayMs: 12 * 3600_000,
};

export interface RingEvidence {
  target: { type: 'author' | 'upload'; id: string };
  direction: 'up' | 'down';
  /** The ring's votes on the target (in the window). */
  votes: number;
  /** Of the target's votes in the window (both directions), the share the ring cast. */
  targetShare: number;
  /** Mean share of each member's votes in the window that went to the target. */
  focus: number;
  /** Mean Jaccard similarity of each member's set of the target's uploads with the ring's common set (1: identical). */
  similarity: number;
  /** Share of the members whose first vote on the target falls in the burst window below. */
  burstShare: number;
  burst: { from: number; to: number };
  /** Members younger than `youngMs` at their first vote on the target. */
  youngAccounts: number;
  /** Median account age at the first vote on the target (ms; null when no creation time is known). */
  medianAccountAgeMs: number | null;
  /**
   * targetShare + burstShare + focus + young share + breadth (similarity, over two uploads or more) + size
   * (log2(accounts / minAccounts) / 3, at most 1): each in [0, 1].
   */
  score: number;
  /**
   * Set when the group was found by the surge path (null otherwise): downvotes on one upload, long after its
   * first votes, that far outnumber its upvotes in the same window and its traffic of the window before.
   */
  surge: RingSurge | null;
}

export interface RingSurge {
  /** The window in which the members downvoted. */
  window: { from: number; to: number };
  /** Of the upload's votes in the window, the share that is down. */
  downShare: number;
  /** The upload's votes (both directions) in the window. */
  windowVotes: number;
  /** The upload's votes in the window of the same length before it (its organic traffic then). */
  precedingVotes: number;
  /** From the upload's first vote to the window's start (ms). */
  delayMs: number;
}

export interface RingCandidate {
  /** Sorted. */
  accounts: string[];
  evidence: RingEvidence;
}

interface Member {
  user: number;
  count: number;
  first: number;
  items: number[];
}

/** Interns strings to dense integers (every map below is keyed by numbers). */
class Interner {
  readonly ids = new Map<string, number>();
  readonly names: string[] = [];
  of(s: string): number {
    let i = this.ids.get(s);
    if (i === undefined) {
      i = this.names.length;
      this.ids.set(s, i);
      this.names.push(s);
    }
    return i;
  }
}

/**
 * The candidate rings among `votes`, strongest first; a group that overlaps a stronger one by half its accounts
 * or more is dropped (the same ring seen from its author and from one upload). `facts` gives an account's facts
 * (vote-facts.ts; its creation time in ms), undefined when unknown (not young then).
 */
export function detectVoteRings(
  votes: readonly RingVote[],
  facts: (userId: string) => AccountFacts | undefined,
  policy: RingPolicy = DEFAULT_RING_POLICY,
): RingCandidate[] {
  const users = new Interner();
  const uploads = new Interner();
  const authors = new Interner();
  const n = votes.length;
  const vUser = new Int32Array(n);
  const vUpload = new Int32Array(n);
  const total: number[] = [];
  // Buckets: (author, direction) and (upload, direction), each a list of vote indexes.
  const byAuthor = new Map<number, number[]>();
  const byUpload = new Map<number, number[]>();
  // Votes per upload (both directions): the denominator of the target share.
  const uploadVotes: number[] = [];
  const authorVotes: number[] = [];
  // Downvotes per voter: the surge path's members cast at least half of theirs on the target.
  const downs: number[] = [];
  const push = (m: Map<number, number[]>, k: number, i: number) => {
    const list = m.get(k);
    if (list) list.push(i);
    else m.set(k, [i]);
  };
  for (let i = 0; i < n; i++) {
    const v = votes[i]!;
    const u = users.of(v.userId);
    const p = uploads.of(v.uploadId);
    const a = authors.of(v.authorId);
    vUser[i] = u;
    vUpload[i] = p;
    total[u] = (total[u] ?? 0) + 1;
    uploadVotes[p] = (uploadVotes[p] ?? 0) + 1;
    authorVotes[a] = (authorVotes[a] ?? 0) + 1;
    if (v.value < 0) downs[u] = (downs[u] ?? 0) + 1;
    if (v.userId === v.authorId) continue;
    const dir = v.value > 0 ? 1 : 0;
    push(byAuthor, a * 2 + dir, i);
    push(byUpload, p * 2 + dir, i);
  }

  const created = new Float64Array(users.names.length).fill(NaN);
  users.names.forEach((name, i) => {
    const c = facts(name)?.createdAt;
    if (c !== undefined) created[i] = c;
  });

  const found: RingCandidate[] = [];
  const judge = (type: 'author' | 'upload', key: number, list: number[], targetVotes: number) => {
    if (list.length < policy.minAccounts) return;
    const members = new Map<number, Member>();
    for (const i of list) {
      const u = vUser[i]!;
      const at = votes[i]!.at;
      const m = members.get(u);
      if (m) {
        m.count++;
        if (at < m.first) m.first = at;
        m.items.push(vUpload[i]!);
      } else members.set(u, { user: u, count: 1, first: at, items: [vUpload[i]!] });
    }
    const all: Member[] = [];
    for (const m of members.values()) if (m.count / total[m.user]! >= policy.minFocus) all.push(m);
    if (all.length < policy.minAccounts) return;

    // Lockstep in time: the densest burst window of first votes (two pointers over the sorted times). The group is
    // all the candidates, or only those in that window when that scores higher (a ring among a target's fans).
    all.sort((x, y) => x.first - y.first);
    const burst = burstOf(all);
    const whole = evidenceOf(all, targetVotes);
    const core =
      burst.members < all.length && burst.members >= policy.minAccounts
        ? all.slice(burst.lo, burst.lo + burst.members)
        : null;
    const tight = core ? evidenceOf(core, targetVotes) : null;
    let [group, ev] = tight && tight.score > whole.score ? [core!, tight] : [all, whole];
    // A ring among a target's honest voters: keep the members in lockstep with the rest (the common set of two
    // uploads or more, the group's youth), and judge them alone.
    const kept = prune(group);
    if (kept.length < group.length) {
      if (kept.length < policy.minAccounts) return;
      group = kept;
      ev = evidenceOf(group, targetVotes);
    }
    if (ev.score < policy.minScore) return;
    const target = Math.floor(key / 2);
    found.push({
      accounts: group.map((m) => users.names[m.user]!).sort(),
      evidence: {
        target: { type, id: type === 'author' ? authors.names[target]! : uploads.names[target]! },
        direction: key % 2 === 1 ? 'up' : 'down',
        ...ev,
        surge: null,
      },
    });
  };

  /**
   * The surge path: downvotes on one upload that its organic traffic does not explain (a ring that hides behind
   * other votes, so that no member's focus stands out). The window of `surgeMs` opening at one of its downvotes
   * where downvotes most outnumber upvotes (two pointers over the upload's sorted times); its members are the
   * downvoters in it whose only downvote (in all the votes read) it is. Reported when they are `surgeMinAccounts`
   * or more, the window is mostly down, holds `surgeVsPreceding` times the votes of the window before (plus one)
   * and opens `surgeMinDelayMs` or more after the upload's first vote (an upload's first hours are its busiest).
   */
  const surge = (p: number, downList: number[] | undefined, upList: number[] | undefined) => {
    const fewest = Math.max(policy.minAccounts, policy.surgeMinAccounts);
    if (!downList || downList.length < fewest) return;
    const at = (i: number) => votes[i]!.at;
    const down = [...downList].sort((x, y) => at(x) - at(y));
    const up = upList ? [...upList].sort((x, y) => at(x) - at(y)) : [];
    const W = policy.surgeMs;
    let best = -Infinity;
    let lo = 0;
    let hi = 0;
    let ups = 0;
    for (let i = 0, j = 0, a = 0, b = 0; i < down.length; i++) {
      const from = at(down[i]!);
      while (j < down.length && at(down[j]!) - from <= W) j++;
      while (a < up.length && at(up[a]!) < from) a++;
      if (b < a) b = a;
      while (b < up.length && at(up[b]!) - from <= W) b++;
      if (j - i - (b - a) > best) {
        best = j - i - (b - a);
        lo = i;
        hi = j;
        ups = b - a;
      }
    }
    const downsIn = hi - lo;
    const windowVotes = downsIn + ups;
    const downShare = downsIn / windowVotes;
    if (downsIn < fewest || downShare < policy.surgeMinDownShare) return;
    const from = at(down[lo]!);
    const first = Math.min(at(down[0]!), up.length ? at(up[0]!) : Infinity);
    if (from - first < policy.surgeMinDelayMs) return;
    let preceding = 0;
    for (const list of [down, up]) for (const i of list) if (at(i) < from && at(i) >= from - W) preceding++;
    if (windowVotes < policy.surgeVsPreceding * (preceding + 1)) return;
    let group: Member[] = [];
    for (let k = lo; k < hi; k++) {
      const u = vUser[down[k]!]!;
      // Their only downvote: a ring member's trace; honest voters passing by dislike other uploads too.
      if (downs[u]! <= 1) group.push({ user: u, count: 1, first: at(down[k]!), items: [p] });
    }
    // Youth in lockstep: when two thirds of them are young (or old), the others are passers-by.
    const isYoung = (m: Member) => m.first - created[m.user]! < policy.youngMs;
    const young = group.filter(isYoung);
    const old = group.filter((m) => !isYoung(m));
    if (young.length * 3 >= group.length * 2) group = young;
    else if (old.length * 3 >= group.length * 2) group = old;
    if (group.length < fewest) return;
    found.push({
      accounts: group.map((m) => users.names[m.user]!).sort(),
      evidence: {
        target: { type: 'upload', id: uploads.names[p]! },
        direction: 'down',
        ...evidenceOf(group, uploadVotes[p]!),
        surge: {
          window: { from, to: from + W },
          downShare: round(downShare),
          windowVotes,
          precedingVotes: preceding,
          delayMs: from - first,
        },
      },
    });
  };

  /** The densest burst window of first votes in `group` (sorted by first vote): its first index and size. */
  function burstOf(group: Member[]): { members: number; lo: number } {
    let best = 0;
    let bestLo = 0;
    for (let lo = 0, hi = 0; hi < group.length; hi++) {
      while (group[hi]!.first - group[lo]!.first > policy.burstMs) lo++;
      if (hi - lo + 1 > best) {
        best = hi - lo + 1;
        bestLo = lo;
      }
    }
    return { members: best, lo: bestLo };
  }

  function prune(group: Member[]): Member[] {
    const common = commonSet(group);
    let out = group;
    if (common.size >= 2) out = out.filter((m) => jaccard(m, common) >= SAME_UPLOADS);
    const focusOf = (m: Member) => m.count / total[m.user]!;
    const focuses = out.map(focusOf).sort((x, y) => x - y);
    const mid = focuses[Math.floor(focuses.length / 2)] ?? 0;
    out = out.filter((m) => focusOf(m) >= SAME_FOCUS * mid);
    const isYoung = (m: Member) => m.first - created[m.user]! < policy.youngMs;
    const young = out.filter(isYoung);
    if (young.length * 3 >= out.length * 2) out = young;
    return out;
  }

  function commonSet(group: Member[]): Set<number> {
    const freq = new Map<number, number>();
    for (const m of group) for (const p of new Set(m.items)) freq.set(p, (freq.get(p) ?? 0) + 1);
    const common = new Set<number>();
    for (const [p, c] of freq) if (c * 2 >= group.length) common.add(p);
    return common;
  }

  function jaccard(m: Member, common: Set<number>): number {
    const mine = new Set(m.items);
    let inter = 0;
    for (const p of mine) if (common.has(p)) inter++;
    return inter / (mine.size + common.size - inter);
  }

  function evidenceOf(group: Member[], targetVotes: number): Omit<RingEvidence, 'target' | 'direction' | 'surge'> {
    const burst = burstOf(group);
    const burstShare = burst.members / group.length;
    const from = group[burst.lo]!.first;
    // Lockstep in what: the common set is the uploads at least half the group voted; each member's Jaccard with it.
    const common = commonSet(group);
    let similarity = 0;
    if (common.size) {
      for (const m of group) similarity += jaccard(m, common);
      similarity /= group.length;
    }
    let ringVotes = 0;
    let focus = 0;
    let young = 0;
    const ages: number[] = [];
    for (const m of group) {
      ringVotes += m.count;
      focus += m.count / total[m.user]!;
      const c = created[m.user]!;
      if (!Number.isNaN(c)) {
        ages.push(m.first - c);
        if (m.first - c < policy.youngMs) young++;
      }
    }
    focus /= group.length;
    const targetShare = ringVotes / targetVotes;
    ages.sort((x, y) => x - y);
    // Lockstep in what counts only over two uploads or more (one upload is everyone's common set).
    const breadth = Math.min(1, (common.size - 1) / 2) * similarity;
    const size = Math.min(1, Math.log2(group.length / policy.minAccounts) / 3);
    const score = targetShare + burstShare + focus + young / group.length + breadth + size;
    return {
      votes: ringVotes,
      targetShare: round(targetShare),
      focus: round(focus),
      similarity: round(similarity),
      burstShare: round(burstShare),
      burst: { from, to: from + policy.burstMs },
      youngAccounts: young,
      medianAccountAgeMs: ages.length ? ages[Math.floor(ages.length / 2)]! : null,
      score: round(score),
    };
  }
  for (const [key, list] of byAuthor) judge('author', key, list, authorVotes[Math.floor(key / 2)]!);
  for (const [key, list] of byUpload) judge('upload', key, list, uploadVotes[Math.floor(key / 2)]!);
  for (const [key, list] of byUpload) if (key % 2 === 0) surge(key / 2, list, byUpload.get(key + 1));

  // Strongest first; drop a group that half-overlaps one already kept.
  found.sort((x, y) => y.evidence.score - x.evidence.score || y.accounts.length - x.accounts.length);
  const kept: RingCandidate[] = [];
  const owner = new Map<string, number>();
  for (const ring of found) {
    const seen = new Map<number, number>();
    for (const a of ring.accounts) {
      const k = owner.get(a);
      if (k !== undefined) seen.set(k, (seen.get(k) ?? 0) + 1);
    }
    if ([...seen.values()].some((c) => c * 2 >= ring.accounts.length)) continue;
    for (const a of ring.accounts) if (!owner.has(a)) owner.set(a, kept.length);
    kept.push(ring);
  }
  return kept;
}

/** Pruning (tuned on seed 1): a member's Jaccard with the common set, and its focus over the group's median focus. */
const SAME_UPLOADS = 0.75;
const SAME_FOCUS = 0.6;
const round = (x: number) => Math.round(x * 1000) / 1000;
