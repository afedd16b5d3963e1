/**
 * Vote-ring detection (issues 27 and 45): groups of accounts one operator runs to push one author or one upload up
 * or down. Pure: fed with a window of votes (each with its network hash and user-agent family) and the voters'
 * facts (vote-facts.ts: creation, sign-up network, uploads, reports, lifetime votes), it returns candidate rings
 * with the evidence a moderator reads, per account.
 *
 * Votes alone cannot tell a ring from an author's fans (issue 45: notified fans vote within the hour, pile-ons
 * downvote together, friends upvote each other), so the vote pattern (CopyCatch-like: Beutel et al., WWW 2013)
 * only proposes; what names an account is what links it to the others: a network few other accounts use (an
 * operator's server or home, not a campus or a carrier's NAT), votes each from a network used once (rented
 * proxies), or a shape improbably common among the target's voters (dormant or new accounts that only vote). No
 * single signal decides: a shared network is also a household's, and proxies share none. See detectVoteRings for
 * the steps, RingEvidence.confidence for the decision, and bench/vote-rings.md for what it achieves and misses.
 *
 * Linear in the votes, plus a sort per target.
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
  /**
   * The group's vote-pattern score needed to be reported (six terms, each 0..1: see RingEvidence.score); a third of
   * it for a group of ONE_OPERATOR accounts or more that one network links (one linked component), also such a
   * component of a larger group, cut to its accounts that voted in one session (judged on its own besides the group).
   */
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
  /**
   * Two candidates are linked by a network (sign-up or vote) when at least this share of the accounts seen on it
   * are candidates of the same target: a ring's own server or home net, not a campus or a carrier's NAT, whose
   * many other accounts vote elsewhere.
   */
  linkShare: number;
  /**
   * An account at least `youngMs` old at its first vote in the window with at most this many votes before the
   * window is dormant (bought, farmed, or made and left idle).
   */
  dormantVotes: number;
  /** A candidate is a suspect at this suspicion or more (MemberEvidence.suspicion). */
  minSuspicion: number;
  /** A group is reported at this confidence or more (RingEvidence.confidence). */
  minConfidence: number;
}

export const DEFAULT_RING_POLICY: RingPolicy = {
  minAccounts: 3,
  minFocus: 0.15,
  youngMs: 7 * 24 * 3600_000,
  burstMs: 3600_000,
  minScore: 1.5,
  surgeMs: 24 * 3600_000,
  surgeMinAccounts: 4,
  surgeMinDownShare: 0.55,
  surgeVsPreceding: 1,
  surgeMinDelayMs: 12 * 3600_000,
  linkShare: 0.5,
  dormantVotes: 12,
  minSuspicion: 2,
  minConfidence: 0.45,
};

/** Why one account is in a group: what a moderator reads to judge it (issue 45). */
export interface MemberEvidence {
  account: string;
  /** The reasons in words, strongest first (e.g. "shares 2 networks with 7 members"). */
  reasons: string[];
  /** Networks (sign-up or vote) it shares with other members that few other accounts use. */
  sharedNetworks: number;
  /** Members it is linked to through those networks (its component, itself excluded). */
  linkedMembers: number;
  /**
   * Its votes in the window come each from a network it used once and not its sign-up network, networks few
   * accounts use (rented residential proxies): 'strong' when four or more (three when it signed up on such a
   * network too) and 80 % of its votes do, 'weak' when all of fewer do and it signed up on such a network or
   * cast two (one vote away from home, a café, a new lease: common among honest accounts alone).
   */
  proxyLike: 'strong' | 'weak' | null;
  /**
   * Its weak trait (weakly proxy-like, or dormant and only voting) is improbably common among the target's
   * candidates (binomial chance under 1/1000 against the window's voters): the group shares it, by design.
   */
  inExcess: boolean;
  /** At least youngMs old at its first vote in the window, at most `dormantVotes` votes before the window. */
  dormant: boolean;
  /** It never uploaded nor reported. */
  onlyVotes: boolean;
  /** From its creation to its first vote on the target (ms; null when unknown). */
  ageAtFirstVoteMs: number | null;
  /** Its first vote on the target relative to the group's median first vote (ms; negative: earlier). */
  firstVoteOffsetMs: number;
  /** Share of its window votes that went to the target. */
  focus: number;
  /** Jaccard similarity of its set of the target's uploads with the group's common set. */
  similarity: number;
  /** The user-agent family of its votes (the most recent one read; null unknown). */
  ua: string | null;
  /**
   * The sum of: linked 2, proxy-like 2 (weak 0.5, 1.5 when weak proxies are in excess among the target's
   * candidates and it is dormant or young), dormant 1 (2 when dormant vote-only accounts are in excess there and
   * it cast 60 % of its window votes or more on the target), young 0.5, only votes 0.5; "in excess" counts only for
   * a candidate that voted on one of the target's uploads within 6 h of two others with a trait (a session), or,
   * for a weak proxy, that came back to two or more of the target's uploads with 75 % of its votes on it, as two
   * others with a trait did (a drip ring). Members are the candidates at policy.minSuspicion or more.
   */
  suspicion: number;
}

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
   * The vote pattern: targetShare + burstShare + focus + young share + breadth (similarity, over two uploads or
   * more) + size (log2(accounts / minAccounts) / 3, at most 1): each in [0, 1].
   */
  score: number;
  /**
   * Set when the group was found by the surge path (null otherwise): downvotes on one upload, long after its
   * first votes, that far outnumber its upvotes in the same window and its traffic of the window before.
   */
  surge: RingSurge | null;
  /**
   * How sure the detector is that this is one operator's accounts, in [0, 1]. When at least half the members are
   * linked by networks few others use or vote from proxies (and they are not newcomers voting widely: half of
   * them young with a mean focus under 0.6, friends who joined together): 0.75 + 0.25 · min(1, score / 4).
   * Otherwise, shape alone: 0.75 · (share of members dormant or young, only voting, focus ≥ 0.5) ·
   * min(1, suspectShare / 0.3) · min(1, score / 3) + 0.25 · (how unlikely their common user-agent family is by
   * chance: 0 at one chance in ten, 1 at one in a thousand). Not a calibrated probability: bench/vote-rings.md
   * gives what it held.
   */
  confidence: number;
  /** Of the target's candidates (voters with at least minFocus of their votes on it), the share that are members. */
  suspectShare: number;
  /** Networks shared by two members or more that few other accounts use. */
  sharedNetworks: number;
  /** Members linked to others by such networks. */
  linkedAccounts: number;
  /** Members whose votes come from proxy-like networks (MemberEvidence.proxyLike, strong or weak). */
  proxyLikeAccounts: number;
  /** Members older than youngMs with (almost) no votes before the window. */
  dormantAccounts: number;
  /** Members that never uploaded nor reported. */
  onlyVoteAccounts: number;
  /**
   * The members' most common user-agent family, its share among them, and the chance that as many of this many
   * accounts share it given its share among all the window's voters (small: unlikely by chance).
   */
  commonUa: { family: string; share: number; chance: number } | null;
  /** Per account, why it is there (sorted by account). */
  members: MemberEvidence[];
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
  /** When it voted on each of `items` (same order). */
  times: number[];
  suspicion: number;
  /**
   * A candidate only by EQUIPPED_FOCUS (under a third of minFocus of its window votes on the target): in the
   * group when linked to an earnest candidate or among faint ones only (a camouflaged ring), not counted in the
   * target's trait excesses (another ring's accounts browsing a popular author are not its voters' base).
   */
  faint: boolean;
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

/** P(X ≥ k) for X ~ Binomial(n, p), summed in log space (n is a group's size: small). */
function binomialTail(k: number, n: number, p: number): number {
  if (k <= 0) return 1;
  if (p <= 0) return 0;
  if (p >= 1) return 1;
  let logC = 0;
  for (let i = 0; i < k; i++) logC += Math.log(n - i) - Math.log(i + 1);
  let term = Math.exp(logC + k * Math.log(p) + (n - k) * Math.log(1 - p));
  let sum = 0;
  for (let i = k; i <= n; i++) {
    sum += term;
    term *= ((n - i) / (i + 1)) * (p / (1 - p));
  }
  return Math.min(1, sum);
}

/**
 * The candidate rings among `votes`, strongest first; a group that overlaps a stronger one by half its accounts
 * or more is dropped (the same ring seen from its author and from one upload). `facts` gives an account's facts
 * (vote-facts.ts), undefined when unknown (then neither young, dormant nor only-voting, and no sign-up network).
 *
 * Three steps, each linear in the votes (plus sorts per target):
 * 1. Per account: its networks (sign-up and each vote's) and how many accounts each network is seen with; the
 *    votes from networks it used once, that are not its sign-up network and that few accounts use (proxies);
 *    its shape (dormant, young, only votes). A network many accounts use (a campus, a carrier's NAT) links nobody.
 * 2. Per target (author or upload, direction): the candidates (focus ≥ minFocus, EQUIPPED_FOCUS with a proxy or
 *    a server's or home's network); linked ones (a network on which at least linkShare of the accounts seen are
 *    candidates of this target, components of three or more); each candidate's suspicion (MemberEvidence); the
 *    suspects form the group, judged by its vote pattern (score) and its confidence. Honest fans, however tight in
 *    time, are not suspects: they vote from their own homes, from the same networks day after day, have a history
 *    and often upload or report.
 * 3. The surge path (downvotes on one upload its traffic does not explain), its downvoters filtered the same way.
 */
export function detectVoteRings(
  votes: readonly RingVote[],
  facts: (userId: string) => AccountFacts | undefined,
  policy: RingPolicy = DEFAULT_RING_POLICY,
): RingCandidate[] {
  const users = new Interner();
  const uploads = new Interner();
  const authors = new Interner();
  const nets = new Interner();
  const n = votes.length;
  const vUser = new Int32Array(n);
  const vUpload = new Int32Array(n);
  const vNet = new Int32Array(n);
  const total: number[] = [];
  const byAuthor = new Map<number, number[]>();
  const byUpload = new Map<number, number[]>();
  const uploadVotes: number[] = [];
  const authorVotes: number[] = [];
  const downs: number[] = [];
  const uaOf: (string | null)[] = [];
  const uploadAuthor: number[] = [];
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
    vNet[i] = v.net ? nets.of(v.net) : -1;
    uploadAuthor[p] = a;
    total[u] = (total[u] ?? 0) + 1;
    uploadVotes[p] = (uploadVotes[p] ?? 0) + 1;
    authorVotes[a] = (authorVotes[a] ?? 0) + 1;
    if (v.ua) uaOf[u] = v.ua;
    else if (uaOf[u] === undefined) uaOf[u] = null;
    if (v.value < 0) downs[u] = (downs[u] ?? 0) + 1;
    if (v.userId === v.authorId) continue;
    const dir = v.value > 0 ? 1 : 0;
    push(byAuthor, a * 2 + dir, i);
    push(byUpload, p * 2 + dir, i);
  }

  // Step 1: per account (the targets' authors too: a network they share links nobody).
  const authorUser = authors.names.map((a) => users.of(a));
  const U = users.names.length;
  const created = new Float64Array(U).fill(NaN);
  const signup = new Int32Array(U).fill(-1);
  const onlyVotes = new Uint8Array(U);
  const participates = new Uint8Array(U);
  const dormant = new Uint8Array(U);
  // Each account's first vote in the window.
  const firstAt = new Float64Array(U).fill(Infinity);
  for (let i = 0; i < n; i++) if (votes[i]!.at < firstAt[vUser[i]!]!) firstAt[vUser[i]!] = votes[i]!.at;
  for (let u = 0; u < U; u++) {
    const f = facts(users.names[u]!);
    if (!f) continue;
    created[u] = f.createdAt;
    if (f.signupNet) signup[u] = nets.of(f.signupNet);
    if (f.uploads === 0 && f.reports === 0) onlyVotes[u] = 1;
    else participates[u] = 1;
    // Dormant: at least youngMs old at its first vote in the window (an account made and left idle counts, not only
    // one older than the window) with (almost) no votes before the window.
    if (firstAt[u]! - f.createdAt >= policy.youngMs && f.votes - total[u]! <= policy.dormantVotes) dormant[u] = 1;
  }
  // (account, network) pairs: votes from it (0: the sign-up network only), and the accounts seen per network.
  const NETS = nets.names.length + 1;
  const pairVotes = new Map<number, number>();
  const netAccounts = new Int32Array(NETS);
  const netsOf: number[][] = Array.from({ length: U }, () => []);
  const see = (u: number, net: number, vote: boolean) => {
    const key = u * NETS + net;
    const c = pairVotes.get(key);
    if (c === undefined) {
      pairVotes.set(key, vote ? 1 : 0);
      netAccounts[net]!++;
      netsOf[u]!.push(net);
    } else if (vote) pairVotes.set(key, c + 1);
  };
  for (let u = 0; u < U; u++) if (signup[u]! >= 0) see(u, signup[u]!, false);
  for (let i = 0; i < n; i++) if (vNet[i]! >= 0) see(vUser[i]!, vNet[i]!, true);
  // Proxy-like: the votes from a network used once, not the sign-up one, that few accounts use.
  const oneOff = new Int32Array(U);
  const netVotes = new Int32Array(U);
  for (let u = 0; u < U; u++) {
    for (const net of netsOf[u]!) {
      const c = pairVotes.get(u * NETS + net)!;
      netVotes[u]! += c;
      if (c === 1 && net !== signup[u] && netAccounts[net]! <= QUIET_NET) oneOff[u]!++;
    }
  }
  const proxyKind = (u: number): 'strong' | 'weak' | null => {
    const k = oneOff[u]!;
    const votesWithNet = netVotes[u]!;
    // One vote away from a sign-up network that was itself quiet (a proxy's), or two or more from one-off networks;
    // not a carrier sign-up and then a vote from home (a newcomer on its phone first).
    const quietSignup = signup[u]! >= 0 && netAccounts[signup[u]!]! <= QUIET_NET;
    // Strong: four such votes or more, or three when the sign-up was on a quiet network too (an honest account
    // votes from home again and again; three votes from a home, a café and another café happen).
    if (k >= (quietSignup ? STRONG_PROXY - 1 : STRONG_PROXY) && k >= 0.8 * votesWithNet) return 'strong';
    if (k >= 1 && k === votesWithNet && (quietSignup || k >= 2)) return 'weak';
    return null;
  };
  const proxies: ('strong' | 'weak' | null)[] = Array.from({ length: U }, (_, u) => proxyKind(u));
  const proxyOf = (u: number) => proxies[u] ?? null;
  // Accounts with infrastructure of their own: proxy-like, or on a network shared by a handful of accounts (3 to
  // SMALL_NET: a server's, a home's; not a campus's or a carrier's). Their focus floor is EQUIPPED_FOCUS: a
  // camouflaged ring's accounts spread their votes, and what links them is the network.
  const equipped = new Uint8Array(U);
  for (let u = 0; u < U; u++) {
    if (proxyOf(u) === 'strong') equipped[u] = 1;
    else for (const net of netsOf[u]!) if (netAccounts[net]! >= 3 && netAccounts[net]! <= SMALL_NET) equipped[u] = 1;
  }
  // Base rates of the weak traits among the window's voters.
  let baseWeak = 0;
  let baseDormantOnly = 0;
  for (let u = 0; u < U; u++) {
    if (proxyOf(u) === 'weak') baseWeak++;
    if (dormant[u] && onlyVotes[u]) baseDormantOnly++;
  }
  baseWeak = Math.max(baseWeak, 1) / Math.max(U, 1);
  baseDormantOnly = Math.max(baseDormantOnly, 1) / Math.max(U, 1);
  // User agents: the share of each family among the window's voters (the chance of a common family).
  const uaShare = new Map<string, number>();
  let uaKnown = 0;
  for (let u = 0; u < U; u++) {
    const ua = uaOf[u];
    if (!ua) continue;
    uaKnown++;
    uaShare.set(ua, (uaShare.get(ua) ?? 0) + 1);
  }

  const found: RingCandidate[] = [];
  const faint = (m: Member) => m.faint;
  const isYoung = (u: number, first: number) => first - created[u]! < policy.youngMs;

  /** Step 2's suspicion of each candidate, and the members linked to it (index lists). */
  function suspicions(all: Member[], author: number): { linked: number[][]; shared: number[]; excess: boolean[] } {
    // The author's own networks: a household or a dorm upvoting one of its own is not a ring's server.
    const authorNets = new Set(author >= 0 ? netsOf[author] : []);
    // Networks on which at least linkShare of the accounts seen are candidates here: union the candidates on them.
    const onNet = new Map<number, number[]>();
    all.forEach((m, idx) => {
      for (const net of netsOf[m.user]!) {
        const list = onNet.get(net);
        if (list) list.push(idx);
        else onNet.set(net, [idx]);
      }
    });
    const parent = all.map((_, i) => i);
    const find = (x: number): number => {
      while (parent[x] !== x) x = parent[x] = parent[parent[x]!]!;
      return x;
    };
    const shared = new Array<number>(all.length).fill(0);
    // Accounts made or bought to vote: dormant or new, and only voting.
    const shaped = all.map(
      (m) => !faint(m) && onlyVotes[m.user] === 1 && (dormant[m.user] === 1 || isYoung(m.user, m.first)),
    );
    const nShaped = shaped.reduce((k, x) => k + (x ? 1 : 0), 0);
    for (const [net, idx] of onNet) {
      // Three candidates or more: two is a proxy's exit on someone's home network, or a couple.
      if (idx.length < 3 || authorNets.has(net)) continue;
      let on = idx;
      if (idx.length < policy.linkShare * netAccounts[net]!) {
        // A busy network (a carrier's NAT, a campus) links the shaped candidates on it only when they are far more
        // than its share of the window's voters predicts (an operator's phone behind the NAT): students and fans
        // on it have histories or uploads, and a carrier's share is spread over every target alike.
        // Counted by the votes cast from it, not by sign-ups (newcomers sign up on their phones, then vote at home).
        on = idx.filter((i) => shaped[i] && pairVotes.get(all[i]!.user * NETS + net)! > 0);
        if (on.length < 3 || binomialTail(on.length, nShaped, netAccounts[net]! / U) >= BUSY_NET_CHANCE) continue;
        // Of those, the ones that voted on one of the target's uploads within COTIME of two others of them, or came
        // back to it with two others (repeatedWith): an operator's phone works its accounts together; a dormant
        // lurker behind the same NAT voting the target days apart from them rode along before.
        const onSet = new Set(on);
        const together = cotimedWith(all, (_, i) => onSet.has(i));
        const back = repeatedWith(all, (_, i) => onSet.has(i));
        on = on.filter((i) => together[i] || back[i]);
        if (on.length < 3) continue;
      }
      for (const i of on) shared[i]!++;
      for (let k = 1; k < on.length; k++) parent[find(on[k]!)] = find(on[0]!);
    }
    const comps = new Map<number, number[]>();
    all.forEach((_, i) => {
      const r = find(i);
      const c = comps.get(r);
      if (c) c.push(i);
      else comps.set(r, [i]);
    });
    const linked: number[][] = all.map(() => []);
    for (const c of comps.values())
      if (c.length >= 3 && !mutual(c.map((i) => all[i]!.user)) && !newCreators(c.map((i) => all[i]!)))
        for (const i of c) linked[i] = c;
    // Traits honest voters have now and then, in excess among this target's candidates (vs. the window's voters):
    // weakly proxy-like (one vote from a network other than the sign-up one) and dormant accounts that only vote.
    // A weak trait counts only for a candidate that voted on one of the target's uploads within COTIME of two
    // others with a trait (weak, strong, dormant vote-only): an operator's accounts vote in sessions; an honest
    // lurker passing by the target days apart from them is not theirs.
    const traitOf = (m: Member, i: number) =>
      !faint(m) &&
      (proxyOf(m.user) !== null || (dormant[m.user] === 1 && onlyVotes[m.user] === 1) || linked[i]!.length > 0);
    const cotimed = cotimedWith(all, traitOf);
    const repeated = repeatedWith(all, traitOf);
    let weak = 0;
    let dormantOnly = 0;
    let focused = 0;
    all.forEach((m, i) => {
      if (faint(m)) return;
      focused++;
      if (proxyOf(m.user) === 'weak' && (cotimed[i] || repeated[i])) weak++;
      if (!cotimed[i]) return;
      if (dormant[m.user] && onlyVotes[m.user]) dormantOnly++;
    });
    const weakExcess = binomialTail(weak, focused, baseWeak) < TRAIT_CHANCE;
    const dormantExcess = binomialTail(dormantOnly, focused, baseDormantOnly) < TRAIT_CHANCE;
    const excess = all.map(() => false);
    all.forEach((m, i) => {
      const u = m.user;
      const proxy = proxyOf(u);
      // A weak proxy in excess counts for an account made or bought to vote (dormant or new), not for one with a
      // history that voted once from a café.
      const weakIn =
        proxy === 'weak' && weakExcess && (cotimed[i]! || repeated[i]!) && (dormant[u] === 1 || isYoung(u, m.first));
      // Dormant vote-only accounts in excess count for those that voted mostly for the target (a bought account
      // votes for what it is paid to; a dormant fan back for a day votes for other authors as well).
      const dormantIn =
        dormant[u] === 1 && onlyVotes[u] === 1 && dormantExcess && cotimed[i]! && m.count >= DORMANT_FOCUS * total[u]!;
      let s = 0;
      if (linked[i]!.length) s += 2;
      if (proxy === 'strong') s += 2;
      else if (proxy === 'weak') s += 0.5 + (weakIn ? 1 : 0);
      if (dormant[u]) s += 1 + (dormantIn ? 1 : 0);
      excess[i] = weakIn || dormantIn;
      if (!Number.isNaN(created[u]!) && isYoung(u, m.first)) s += 0.5;
      if (onlyVotes[u]) s += 0.5;
      m.suspicion = s;
    });
    return { linked, shared, excess };
  }

  /**
   * Friends, not a ring: most of them are new accounts (created within NEW_CREATOR_MS of their first vote on the
   * target) that posted or reported something (people who joined together to share pictures; an operator's new
   * accounts only vote).
   */
  function newCreators(group: Member[]): boolean {
    let k = 0;
    for (const m of group) if (participates[m.user] && m.first - created[m.user]! < NEW_CREATOR_MS) k++;
    return k * 2 >= group.length;
  }

  /**
   * Friends, not a ring: two or more of these accounts are authors upvoted by others of them in the window (a
   * circle that posts and votes for each other; a ring's accounts do not post).
   */
  function mutual(group: number[]): boolean {
    const set = new Set(group);
    let upvoted = 0;
    for (const u of group) {
      const a = authors.ids.get(users.names[u]!);
      const list = a === undefined ? undefined : byAuthor.get(a * 2 + 1);
      if (list?.some((i) => set.has(vUser[i]!)) && ++upvoted >= 2) return true;
    }
    return false;
  }

  /**
   * Per candidate: whether it voted on one of the target's uploads within COTIME of at least two other candidates
   * with `trait` (one pass over the target's votes sorted per upload).
   */
  function cotimedWith(all: Member[], trait: (m: Member, i: number) => boolean): boolean[] {
    const perUpload = new Map<number, { at: number; i: number }[]>();
    all.forEach((m, i) => {
      if (!trait(m, i)) return;
      m.items.forEach((p, k) => {
        const list = perUpload.get(p);
        const e = { at: m.times[k]!, i };
        if (list) list.push(e);
        else perUpload.set(p, [e]);
      });
    });
    const out = all.map(() => false);
    for (const list of perUpload.values()) {
      if (list.length < 3) continue;
      list.sort((x, y) => x.at - y.at);
      for (let k = 0, lo = 0, hi = 0; k < list.length; k++) {
        while (list[k]!.at - list[lo]!.at > COTIME) lo++;
        while (hi + 1 < list.length && list[hi + 1]!.at - list[k]!.at <= COTIME) hi++;
        if (hi - lo >= 2) out[list[k]!.i] = true;
      }
    }
    return out;
  }

  /**
   * Per candidate with `trait`: whether it voted on REPEAT_ITEMS or more of the target's uploads with REPEAT_FOCUS
   * of its window votes on the target, as did at least two other candidates with `trait` (a drip ring's accounts
   * come back to the same author on several days, never three in one session; a lurker who once voted from a café
   * does not come back, and a fan votes for others too).
   */
  function repeatedWith(all: Member[], trait: (m: Member, i: number) => boolean): boolean[] {
    const out = all.map(
      (m, i) => trait(m, i) && m.count >= REPEAT_FOCUS * total[m.user]! && new Set(m.items).size >= REPEAT_ITEMS,
    );
    let k = 0;
    for (const x of out) if (x) k++;
    return k >= 3 ? out : all.map(() => false);
  }

  // Votes per voter on the target at hand (candidatesOf), zeroed again after each target.
  const onTarget = new Int32Array(U);
  /**
   * The voters on a target whose focus makes them candidates, each with its votes on it, in order of first vote.
   * Counted first and built only for those: most voters on a popular target are not candidates, and a Member with
   * two arrays per voter and target was a quarter of the detector's time.
   */
  const candidatesOf = (list: number[], minFocus: number): Member[] => {
    const voters: number[] = [];
    for (const i of list) if (onTarget[vUser[i]!]!++ === 0) voters.push(vUser[i]!);
    const members = new Map<number, Member>();
    for (const u of voters) {
      const focus = onTarget[u]! / total[u]!;
      if (focus >= minFocus || (equipped[u] && focus >= Math.min(minFocus, EQUIPPED_FOCUS)))
        members.set(u, {
          user: u,
          count: 0,
          first: Infinity,
          items: [],
          times: [],
          suspicion: 0,
          faint: focus * 3 < minFocus,
        });
      onTarget[u] = 0;
    }
    if (members.size)
      for (const i of list) {
        const m = members.get(vUser[i]!);
        if (!m) continue;
        const at = votes[i]!.at;
        m.count++;
        if (at < m.first) m.first = at;
        m.items.push(vUpload[i]!);
        m.times.push(at);
      }
    return [...members.values()];
  };

  /** The suspects among `all`, with their per-account evidence, or null when too few. */
  function suspectsOf(
    all: Member[],
    author: number,
  ): {
    group: Member[];
    evidence: Map<number, Omit<MemberEvidence, 'firstVoteOffsetMs' | 'similarity'>>;
    anchored: Set<number>;
    /** Per linked candidate, its component (the same array for all its members). */
    components: Map<number, number[]>;
  } | null {
    const { linked, shared, excess } = suspicions(all, author);
    // Faint candidates linked by a network to one that is not: the same operator's accounts (once per component).
    const components = new Map<number, number[]>();
    const anchored = new Set<number>();
    const earnestIn = new Map<number[], boolean>();
    all.forEach((m, i) => {
      const c = linked[i]!;
      if (!c.length) return;
      components.set(m.user, c);
      let a = earnestIn.get(c);
      if (a === undefined) earnestIn.set(c, (a = c.some((j) => !faint(all[j]!))));
      if (a) anchored.add(m.user);
    });
    const group: Member[] = [];
    const evidence = new Map<number, Omit<MemberEvidence, 'firstVoteOffsetMs' | 'similarity'>>();
    all.forEach((m, i) => {
      if (m.suspicion < policy.minSuspicion) return;
      group.push(m);
      const u = m.user;
      const proxy = proxyOf(u);
      const age = Number.isNaN(created[u]!) ? null : m.first - created[u]!;
      const reasons: string[] = [];
      if (linked[i]!.length)
        reasons.push(`shares ${shared[i]} network(s) few others use with ${linked[i]!.length - 1} other candidate(s)`);
      if (proxy) reasons.push(`${proxy === 'strong' ? '' : 'weakly '}proxy-like: each vote from a network used once`);
      if (excess[i]) reasons.push("its trait is improbably common among the target's voters");
      if (dormant[u]) reasons.push(`dormant: ${policy.dormantVotes} votes or fewer before the window`);
      if (age !== null && age < policy.youngMs)
        reasons.push(`created ${Math.round(age / 3600_000)} h before its first vote on the target`);
      if (onlyVotes[u]) reasons.push('never uploaded nor reported');
      evidence.set(u, {
        account: users.names[u]!,
        reasons,
        sharedNetworks: shared[i]!,
        linkedMembers: Math.max(0, linked[i]!.length - 1),
        proxyLike: proxy,
        inExcess: excess[i]!,
        dormant: dormant[u] === 1,
        onlyVotes: onlyVotes[u] === 1,
        ageAtFirstVoteMs: age,
        focus: round(m.count / total[u]!),
        ua: uaOf[u] ?? null,
        suspicion: m.suspicion,
      });
    });
    // A core linked by networks or on proxies: the others (weak traits alone, e.g. dormant fans lifted by the
    // core's excess) are passers-by.
    const core = group.filter((m) => {
      const e = evidence.get(m.user)!;
      return e.linkedMembers > 0 || e.proxyLike === 'strong' || (e.proxyLike === 'weak' && e.inExcess);
    });
    if (core.length >= policy.minAccounts && core.length < group.length)
      return { group: core, evidence, anchored, components };
    if (group.length < policy.minAccounts) return null;
    if (core.length < policy.minAccounts) {
      // Shape alone: keep the members whose first votes fall in the densest `shapeMs` (an operator's session),
      // when they are half the group or more; the others are dormant or new fans passing by.
      group.sort((x, y) => x.first - y.first);
      let best = 0;
      let bestLo = 0;
      for (let lo = 0, hi = 0; hi < group.length; hi++) {
        while (group[hi]!.first - group[lo]!.first > SHAPE_MS) lo++;
        if (hi - lo + 1 > best) [best, bestLo] = [hi - lo + 1, lo];
      }
      if (best * 2 >= group.length && best >= policy.minAccounts)
        return { group: group.slice(bestLo, bestLo + best), evidence, anchored, components };
    }
    return { group, evidence, anchored, components };
  }

  const judge = (type: 'author' | 'upload', key: number, list: number[], targetVotes: number) => {
    if (list.length < policy.minAccounts) return;
    const all = candidatesOf(list, policy.minFocus);
    if (all.length < policy.minAccounts) return;
    const target = Math.floor(key / 2);
    const s = suspectsOf(all, authorUser[type === 'author' ? target : uploadAuthor[target]!]!);
    if (!s) return;
    // Faint candidates (equipped, under a third of minFocus on the target: another ring's accounts browsing, or a
    // camouflaged ring) leave a group most of whose members voted for the target in earnest.
    let group = s.group.sort((x, y) => x.first - y.first);
    const stray = (m: Member) => faint(m) && !s.anchored.has(m.user);
    const strays = group.filter(stray).length;
    const earnest = group.length - strays;
    if (strays && earnest >= policy.minAccounts && earnest * 2 >= group.length) group = group.filter((m) => !stray(m));
    let candidates = group.filter(faint).length;
    for (const m of all) if (!faint(m)) candidates++;
    // One operator's accounts by their network (every member in one linked component of ONE_OPERATOR accounts or
    // more: a server's or an operator's home, not a household) need a third of the score: a camouflaged ring's
    // pattern is what it hides (low focus, spread in time, a popular author's small share).
    const comp = s.components.get(group[0]!.user);
    const oneOperator =
      group.length >= ONE_OPERATOR && comp !== undefined && group.every((m) => s.components.get(m.user) === comp);
    if (!oneOperator) {
      // A group mixing several operators' accounts (camouflaged rings browsing a popular author, each other's
      // target among them): each linked component of ONE_OPERATOR members or more in it is judged on its own too.
      const parts = new Map<number[], Member[]>();
      for (const m of group) {
        const c = s.components.get(m.user);
        if (!c) continue;
        const list = parts.get(c);
        if (list) list.push(m);
        else parts.set(c, [m]);
      }
      for (const linkedPart of parts.values()) {
        if (linkedPart.length < ONE_OPERATOR || linkedPart.length === group.length) continue;
        // Of a part, the accounts that voted on one of the target's uploads within COTIME of two others of it: an
        // operator works its accounts in sessions (a neighbour on the same home network votes on its own time).
        const together = cotimedWith(linkedPart, () => true);
        const part = linkedPart.filter((_, i) => together[i]);
        if (part.length >= ONE_OPERATOR) report(type, key, part, targetVotes, candidates, s, true);
      }
    }
    report(type, key, group, targetVotes, candidates, s, oneOperator);
  };

  const report = (
    type: 'author' | 'upload',
    key: number,
    group: Member[],
    targetVotes: number,
    candidates: number,
    s: NonNullable<ReturnType<typeof suspectsOf>>,
    oneOperator: boolean,
  ) => {
    const target = Math.floor(key / 2);
    const ev = evidenceOf(group, targetVotes, candidates, s.evidence);
    if (ev.confidence < policy.minConfidence) return;
    if (ev.score < (oneOperator ? policy.minScore / 3 : policy.minScore)) return;
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
   * where downvotes most outnumber upvotes (two pointers over the upload's sorted times); its candidates are the
   * downvoters in it whose only downvote (in all the votes read) it is, and its members the suspects among them.
   * Reported when they are `surgeMinAccounts` or more, the window is mostly down, holds `surgeVsPreceding` times
   * the votes of the window before (plus one) and opens `surgeMinDelayMs` or more after the upload's first vote.
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
    const all: Member[] = [];
    for (let k = lo; k < hi; k++) {
      const u = vUser[down[k]!]!;
      // Their only downvote: a ring member's trace; honest voters passing by dislike other uploads too.
      if (downs[u]! <= 1)
        all.push({
          user: u,
          count: 1,
          first: at(down[k]!),
          items: [p],
          times: [at(down[k]!)],
          suspicion: 0,
          faint: false,
        });
    }
    if (all.length < fewest) return;
    const s = suspectsOf(all, authorUser[uploadAuthor[p]!]!);
    if (!s || s.group.length < fewest) return;
    const ev = evidenceOf(s.group, uploadVotes[p]!, all.length, s.evidence);
    if (ev.confidence < policy.minConfidence) return;
    found.push({
      accounts: s.group.map((m) => users.names[m.user]!).sort(),
      evidence: {
        target: { type: 'upload', id: uploads.names[p]! },
        direction: 'down',
        ...ev,
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
    const union = mine.size + common.size - inter;
    return union ? inter / union : 0;
  }

  function evidenceOf(
    group: Member[],
    targetVotes: number,
    candidates: number,
    perAccount: Map<number, Omit<MemberEvidence, 'firstVoteOffsetMs' | 'similarity'>>,
  ): Omit<RingEvidence, 'target' | 'direction' | 'surge'> {
    const burst = burstOf(group);
    const burstShare = burst.members / group.length;
    const from = group[burst.lo]!.first;
    const common = commonSet(group);
    let similarity = 0;
    const sims = group.map((m) => (common.size ? jaccard(m, common) : 0));
    for (const x of sims) similarity += x;
    similarity /= group.length;
    let ringVotes = 0;
    let focus = 0;
    let young = 0;
    let linked = 0;
    let proxies = 0;
    let dormants = 0;
    let only = 0;
    let shapeHits = 0;
    let coreCount = 0;
    const ages: number[] = [];
    const uaCount = new Map<string, number>();
    const netsShared = new Set<number>();
    const memberSet = new Set(group.map((m) => m.user));
    for (const m of group) {
      ringVotes += m.count;
      focus += m.count / total[m.user]!;
      const c = created[m.user]!;
      const youngHere = !Number.isNaN(c) && m.first - c < policy.youngMs;
      if (!Number.isNaN(c)) {
        ages.push(m.first - c);
        if (youngHere) young++;
      }
      const e = perAccount.get(m.user)!;
      if (e.linkedMembers) linked++;
      if (e.proxyLike) proxies++;
      if (e.linkedMembers || e.proxyLike === 'strong' || (e.proxyLike === 'weak' && e.inExcess)) coreCount++;
      if (e.dormant) dormants++;
      if (e.onlyVotes) only++;
      // The shape of an account made or bought to vote: dormant or new, only voting, and voting narrowly (a new
      // account voting widely is a newcomer finding its way).
      if ((e.dormant || youngHere) && e.onlyVotes && e.focus >= 0.5) shapeHits++;
      const ua = uaOf[m.user];
      if (ua) uaCount.set(ua, (uaCount.get(ua) ?? 0) + 1);
    }
    // Networks two members or more share (and few others use).
    const perNet = new Map<number, number>();
    for (const m of group) for (const net of netsOf[m.user]!) perNet.set(net, (perNet.get(net) ?? 0) + 1);
    for (const [net, c] of perNet) if (c >= 3 && c >= policy.linkShare * netAccounts[net]!) netsShared.add(net);
    void memberSet;
    focus /= group.length;
    const targetShare = ringVotes / targetVotes;
    ages.sort((x, y) => x - y);
    const breadth = Math.min(1, (common.size - 1) / 2) * similarity;
    const size = Math.min(1, Math.log2(group.length / policy.minAccounts) / 3);
    const score = targetShare + burstShare + focus + young / group.length + breadth + size;
    let commonUa: RingEvidence['commonUa'] = null;
    let uaTerm = 0;
    if (uaCount.size) {
      const [family, k] = [...uaCount].sort((x, y) => y[1] - x[1])[0]!;
      const known = [...uaCount.values()].reduce((x, y) => x + y, 0);
      const chance = binomialTail(k, known, (uaShare.get(family) ?? 0) / Math.max(1, uaKnown));
      commonUa = { family, share: round(k / known), chance: Number(chance.toPrecision(3)) };
      // One chance in a thousand or less counts fully; one in ten not at all.
      uaTerm = Math.max(0, Math.min(1, (-Math.log10(Math.max(chance, 1e-12)) - 1) / 2));
    }
    // New accounts that share a network but vote widely beyond the target: a circle of newcomers (friends who
    // joined together), not an operator's accounts, which vote for what they are paid to.
    const newcomers = young * 2 >= group.length && focus < 0.6;
    const suspectShare = group.length / candidates;
    const confidence =
      coreCount * 2 >= group.length && !newcomers
        ? // Infrastructure: most members share an operator's networks or vote from proxies.
          0.75 + 0.25 * Math.min(1, score / 4)
        : // Shape alone: all of them dormant or new and only voting, much of the target's voters, in a pattern.
          0.75 * (shapeHits / group.length) * Math.min(1, suspectShare / 0.3) * Math.min(1, score / 3) + 0.25 * uaTerm;
    const median = group[Math.floor(group.length / 2)]!.first;
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
      confidence: round(confidence),
      suspectShare: round(suspectShare),
      sharedNetworks: netsShared.size,
      linkedAccounts: linked,
      proxyLikeAccounts: proxies,
      dormantAccounts: dormants,
      onlyVoteAccounts: only,
      commonUa,
      members: group
        .map((m, i) => ({
          ...perAccount.get(m.user)!,
          firstVoteOffsetMs: m.first - median,
          similarity: round(sims[i]!),
        }))
        .sort((x, y) => (x.account < y.account ? -1 : x.account > y.account ? 1 : 0)),
    };
  }

  for (const [key, list] of byAuthor) judge('author', key, list, authorVotes[Math.floor(key / 2)]!);
  for (const [key, list] of byUpload) judge('upload', key, list, uploadVotes[Math.floor(key / 2)]!);
  for (const [key, list] of byUpload) if (key % 2 === 0) surge(key / 2, list, byUpload.get(key + 1));

  // Strongest first; drop a group that half-overlaps one already kept.
  found.sort(
    (x, y) =>
      y.evidence.confidence - x.evidence.confidence ||
      y.evidence.score - x.evidence.score ||
      y.accounts.length - x.accounts.length ||
      // On a tie (the same accounts), the more telling item: a surge, then one upload rather than its author.
      (y.evidence.surge ? 1 : 0) - (x.evidence.surge ? 1 : 0) ||
      (y.evidence.target.type === 'upload' ? 1 : 0) - (x.evidence.target.type === 'upload' ? 1 : 0),
  );
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

/** A network seen with more accounts than this in the window is not a proxy's (a campus, a NAT, a café chain). */
const QUIET_NET = 20;
/** Votes from as many one-off networks make an account strongly proxy-like (an honest one votes from home). */
const STRONG_PROXY = 4;
/**
 * The focus floor of a candidate with infrastructure of its own (proxy-like, or on a server's or a home's network):
 * one vote on the target in fifty. A camouflaged ring's accounts cast 1–2 ring votes among 10–40 browsing ones
 * (a focus of 0.03–0.1): at 0.05 many of a ring's members were no candidates (seed 1 found 67 of 92 camouflaged
 * rings seen, 75 at 0.02, no more honest accounts named); what names them is still the network they share or
 * their proxies, not their focus (bench/vote-rings.md, third round).
 */
const EQUIPPED_FOCUS = 0.02;
/**
 * A group this large or larger, all of it one linked component, is one operator's (a household is fewer): it is
 * reported at a third of minScore (bench/vote-rings.md, third round: on seeds 1 and 3 camouflaged rings 74 → 84 of
 * 92 and 65 → 71 of 102, no honest account more); so is such a component within a larger group, cut to its accounts
 * that voted in one session (fourth round: seed 3 camouflaged 71 → 75, no honest account more). Three would find
 * three rings more there (groups of 3–4 left of a ring) and name families on one home network, which the bench's
 * population does not model.
 */
const ONE_OPERATOR = 5;
/** A network seen with 3 to this many accounts is a handful's (a server, a home), not a campus's or a NAT's. */
const SMALL_NET = 60;
/** A trait is in excess among a target's candidates when as many would have it by chance less often than this. */
const TRAIT_CHANCE = 1e-3;
/** A group judged by shape alone keeps the members whose first votes fall within this of each other (ms). */
const SHAPE_MS = 6 * 3600_000;
/** Candidates whose votes on one upload fall within this of each other voted in one session (ms). */
const COTIME = 6 * 3600_000;
/** A new account that uploads (NEW_CREATOR_MS old or less at its first vote on the target) is a newcomer. */
const NEW_CREATOR_MS = 30 * 24 * 3600_000;
/** Shaped candidates on a busy network link when as many would be on it by chance less often than this. */
const BUSY_NET_CHANCE = 1e-6;
/** A candidate that voted on this many of the target's uploads or more came back to it (repeatedWith)… */
const REPEAT_ITEMS = 2;
/** …with at least this share of its window votes on the target (an operator's account votes for what it is paid to). */
const REPEAT_FOCUS = 0.75;
/** A dormant vote-only account in excess counts when at least this share of its window votes went to the target. */
const DORMANT_FOCUS = 0.6;
const round = (x: number) => Math.round(x * 1000) / 1000;
