/**
 * Vote rings in the moderation queue (API.md Moderation, "Vote rings"; issues 27 and 45). A periodic job reads the
 * recent votes with the facts the service recorded (each vote's network hash and user-agent family, each voter's
 * sign-up facts and other activity: vote-facts.ts), runs the detector (../votes/vote-rings.ts) and queues each
 * candidate as a `vote_ring` item, once: a group already open, or dismissed with the same accounts and target, is
 * not queued again (several processes may run the job at once; the store's unique key settles a race). A moderator
 * voids the ring's votes (every vote of its accounts leaves the counts, kept aside, and each upload's counters move
 * by exactly those votes, in one transaction) or dismisses it; a void is restored, within VOTE_RING_RESTORE_DAYS,
 * by `restore`. Void and restore each write one modlog line `void_votes`.
 */
import type { PageStart } from '../feeds/cursor.ts';
import { createHash } from 'node:crypto';
import { errors } from '../errors.ts';
import type { Clock } from '../clock.ts';
import { isUuid } from '../ids.ts';
import type { Principal, UserRecord } from '../users.ts';
import type { AccountFacts } from '../votes/vote-facts.ts';
import { detectVoteRings, type RingCandidate, type RingPolicy, type RingVote } from '../votes/vote-rings.ts';

/** The evidence as the queue shows it (snake_case, times as ISO strings). */
export interface VoteRingEvidenceView {
  target: { type: 'author' | 'upload'; id: string };
  direction: 'up' | 'down';
  votes: number;
  target_share: number;
  focus: number;
  similarity: number;
  burst_share: number;
  burst: { from: string; to: string };
  young_accounts: number;
  median_account_age_hours: number | null;
  score: number;
  /** The surge path's evidence (null when found by focus; absent on items stored before it existed). */
  surge?: {
    window: { from: string; to: string };
    down_share: number;
    window_votes: number;
    preceding_votes: number;
    delay_hours: number;
  } | null;
  window: { from: string; to: string };
  /** Issue 45 (absent on items stored before): what links the accounts besides their votes. */
  confidence?: number;
  suspect_share?: number;
  shared_networks?: number;
  linked_accounts?: number;
  proxy_like_accounts?: number;
  dormant_accounts?: number;
  only_vote_accounts?: number;
  common_ua?: { family: string; share: number; chance: number } | null;
  members?: VoteRingMemberView[];
}

/** Per account, why it is in the group (vote-rings.ts MemberEvidence, snake_case, hours). */
export interface VoteRingMemberView {
  account: string;
  reasons: string[];
  shared_networks: number;
  linked_members: number;
  proxy_like: 'strong' | 'weak' | null;
  in_excess: boolean;
  dormant: boolean;
  only_votes: boolean;
  age_at_first_vote_hours: number | null;
  first_vote_offset_hours: number;
  focus: number;
  similarity: number;
  ua: string | null;
  suspicion: number;
}

export interface NewVoteRing {
  /** SHA-256 of the target, the direction and the sorted accounts. */
  key: string;
  /** `type:id:direction`. */
  targetKey: string;
  accounts: string[];
  evidence: VoteRingEvidenceView;
}

/** What a moderator asks for: `restore` undoes a `void`. */
export type VoteRingAction = 'void' | 'dismiss' | 'restore';

export interface VoteRingRecord {
  id: string;
  status: 'open' | 'closed';
  /** The accounts that still exist, as users. */
  accounts: Array<Pick<UserRecord, 'id' | 'username' | 'role' | 'createdAt'>>;
  evidence: VoteRingEvidenceView;
  createdAt: Date;
  closedAt: Date | null;
  closedBy: { id: string; username: string } | null;
  /** `restore`: it was voided, then restored (the void's moderator and reason stay in closedBy/reason). */
  action: VoteRingAction | null;
  reason: string | null;
  voidedVotes: number | null;
  /** When a voided item was restored, by whom, how many votes came back and how many were skipped. */
  restoredAt: Date | null;
  restoredBy: { id: string; username: string } | null;
  restoredVotes: number | null;
  skippedVotes: number | null;
}

export interface VoteRingItemView {
  kind: 'vote_ring';
  id: string;
  status: 'open' | 'closed';
  accounts: Array<{ id: string; username: string; role: 'user' | 'admin'; created_at: string }>;
  evidence: VoteRingEvidenceView;
  created_at: string;
  closed_at: string | null;
  closed_by: { id: string; username: string } | null;
  action: VoteRingAction | null;
  reason: string | null;
  voided_votes: number | null;
  restored_at: string | null;
  restored_by: { id: string; username: string } | null;
  restored_votes: number | null;
  skipped_votes: number | null;
  /** Until when a voided item can be restored (null: not voided, or restored already). */
  restorable_until: string | null;
}

/** The votes of the window, with the facts recorded of each vote and of each voter. */
export interface RecentVotes {
  votes: RingVote[];
  facts: Map<string, AccountFacts>;
}

/** What a restore did: the votes put back, and those skipped (the voter voted again there, or the upload is gone). */
export interface RestoreOutcome {
  record: VoteRingRecord;
  restored: number;
  skipped: number;
  uploads: number;
}

export interface VoteRingStore {
  /**
   * Votes cast or changed since `since` (self-votes included; the detector skips them), each with its network hash
   * and user-agent family, and the facts of each voter (creation, sign-up facts, uploads, reports, votes).
   */
  recentVotes(since: Date): Promise<RecentVotes>;
  /**
   * Queues the rings not open already nor dismissed with the same key; returns how many it queued. A ring whose
   * target has an open item sharing half that item's accounts or more is the same ring seen again (grown or
   * shrunk): that item takes the union of the accounts and the new evidence instead.
   */
  add(rings: NewVoteRing[], at: Date): Promise<number>;
  count(status: 'open' | 'closed'): Promise<number>;
  /** Open: oldest first; closed: most recently closed first; from `start` (past a cursor's position, or an offset). */
  list(status: 'open' | 'closed', start: PageStart, limit: number): Promise<VoteRingRecord[]>;
  /**
   * Closes an open item with `action`; `void` first moves every vote of its accounts out of the votes table into
   * the kept votes (flagged with the item, for `restore`), moves each affected upload's counters (and ranks) by
   * exactly those votes and appends the modlog line `void_votes`, in the same transaction. Null when there is no
   * such item; `closed` (nothing changed) when it was closed before.
   */
  close(
    id: string,
    action: 'void' | 'dismiss',
    opts: { moderator: { id: string; username: string }; reason: string; at: Date },
  ): Promise<{ record: VoteRingRecord; voided: number; uploads: number } | 'closed' | null>;
  /**
   * Puts a voided item's votes back, in one transaction: each upload locked in id order, each kept vote inserted
   * again unless its voter has a vote on that upload now (theirs wins) or the upload was removed, and the counters
   * moved by exactly what came back. `not_voided` when the item was not voided (or was restored already),
   * `expired` when it was voided before `voidedAfter`. Null when there is no such item.
   */
  restore(
    id: string,
    opts: { moderator: { id: string; username: string }; reason: string; at: Date; voidedAfter: Date },
  ): Promise<RestoreOutcome | 'not_voided' | 'expired' | null>;
  /**
   * Clears the client facts recorded before `factsBefore` (sign-up and vote network hashes, user-agent families)
   * and deletes the voided votes kept since before `voidedBefore` (past the restore limit). Returns the rows changed.
   */
  purge(opts: { factsBefore: Date; voidedBefore: Date }): Promise<{ facts: number; voided: number }>;
}

export interface VoteRingEvents {
  /** The job queued `n` new items. */
  queued?(n: number): void;
  /** A moderator acted on an item (for the log and the metrics); `votes`: voided, or restored. */
  acted?(info: { id: string; action: VoteRingAction; moderator: string; accounts: number; votes: number }): void;
  onChanged?(): Promise<void>;
}

export interface VoteRingConfig {
  /** How far back the detector reads votes (ms). */
  windowMs: number;
  policy: RingPolicy;
  /** VOTE_FACTS_RETENTION (ms): client facts older than this are cleared by the purge. */
  factsRetentionMs?: number;
  /** VOTE_RING_RESTORE_DAYS (ms): how long a void can be restored; its kept votes are purged after. */
  restoreMs?: number;
}

const DAY = 86_400_000;
/** The defaults of VOTE_FACTS_RETENTION and VOTE_RING_RESTORE_DAYS. */
const DEFAULT_FACTS_RETENTION_MS = 30 * DAY;
const DEFAULT_RESTORE_MS = 30 * DAY;

const HOUR = 3600_000;

export class VoteRingService {
  readonly #store: VoteRingStore;
  readonly #clock: Clock;
  readonly #config: VoteRingConfig;
  readonly #events: VoteRingEvents;

  constructor(deps: { store: VoteRingStore; clock: Clock; config: VoteRingConfig; events?: VoteRingEvents }) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#config = deps.config;
    this.#events = deps.events ?? {};
  }

  /** One run of the job: detect over the window, queue what is new. Returns how many items it queued. */
  async detect(): Promise<number> {
    const now = this.#clock.now();
    const since = new Date(now.getTime() - this.#config.windowMs);
    const { votes, facts } = await this.#store.recentVotes(since);
    const rings = detectVoteRings(votes, (u) => facts.get(u), this.#config.policy);
    const window = { from: since.toISOString(), to: now.toISOString() };
    const queued = await this.#store.add(
      rings.map((r) => toNew(r, window)),
      now,
    );
    if (queued) this.#events.queued?.(queued);
    return queued;
  }

  /**
   * The retention purge (every process, in the housekeeping loop): client facts older than VOTE_FACTS_RETENTION
   * are cleared, voided votes kept longer than VOTE_RING_RESTORE_DAYS are deleted.
   */
  purge(): Promise<{ facts: number; voided: number }> {
    const now = this.#clock.now().getTime();
    return this.#store.purge({
      factsBefore: new Date(now - (this.#config.factsRetentionMs ?? DEFAULT_FACTS_RETENTION_MS)),
      voidedBefore: new Date(now - this.#restoreMs),
    });
  }

  get #restoreMs(): number {
    return this.#config.restoreMs ?? DEFAULT_RESTORE_MS;
  }

  count(status: 'open' | 'closed'): Promise<number> {
    return this.#store.count(status);
  }

  async list(status: 'open' | 'closed', start: PageStart, limit: number): Promise<VoteRingItemView[]> {
    return (await this.#store.list(status, start, limit)).map((r) => itemView(r, this.#restoreMs));
  }

  /**
   * `POST /api/admin/vote-rings/{id}`: 404 unknown, 409 `conflict` when already closed (void, dismiss), when not
   * voided or restored already (restore), or when voided longer ago than VOTE_RING_RESTORE_DAYS (restore).
   */
  async act(
    principal: Principal,
    id: string,
    input: { action: VoteRingAction; reason: string },
  ): Promise<VoteRingItemView> {
    if (!isUuid(id)) throw errors.notFound('no such vote ring: the id is not a UUID');
    if (input.action === 'restore') return this.#restore(principal, id, input.reason);
    const outcome = await this.#store.close(id, input.action, {
      moderator: { id: principal.userId, username: principal.username },
      reason: input.reason,
      at: this.#clock.now(),
    });
    if (!outcome) throw errors.notFound(`vote ring ${id} does not exist`);
    if (outcome === 'closed') throw errors.conflict(`vote ring ${id} is closed already`);
    this.#events.acted?.({
      id,
      action: input.action,
      moderator: principal.username,
      accounts: outcome.record.accounts.length,
      votes: outcome.voided,
    });
    if (outcome.voided) await this.#events.onChanged?.();
    return itemView(outcome.record, this.#restoreMs);
  }

  async #restore(principal: Principal, id: string, reason: string): Promise<VoteRingItemView> {
    const now = this.#clock.now();
    const days = Math.round(this.#restoreMs / DAY);
    const outcome = await this.#store.restore(id, {
      moderator: { id: principal.userId, username: principal.username },
      reason,
      at: now,
      voidedAfter: new Date(now.getTime() - this.#restoreMs),
    });
    if (!outcome) throw errors.notFound(`vote ring ${id} does not exist`);
    if (outcome === 'not_voided')
      throw errors.conflict(`vote ring ${id} has no voided votes to restore (not voided, or restored already)`);
    if (outcome === 'expired')
      throw errors.conflict(
        `vote ring ${id} was voided more than ${days} days ago (VOTE_RING_RESTORE_DAYS): its votes can no longer ` +
          'be restored',
      );
    this.#events.acted?.({
      id,
      action: 'restore',
      moderator: principal.username,
      accounts: outcome.record.accounts.length,
      votes: outcome.restored,
    });
    if (outcome.restored) await this.#events.onChanged?.();
    return itemView(outcome.record, this.#restoreMs);
  }
}

const hours = (ms: number) => Math.round((ms / HOUR) * 10) / 10;

function toNew(r: RingCandidate, window: { from: string; to: string }): NewVoteRing {
  const e = r.evidence;
  const key = createHash('sha256')
    .update(`${e.target.type}:${e.target.id}:${e.direction}:${r.accounts.join(',')}`)
    .digest('hex');
  return {
    key,
    targetKey: `${e.target.type}:${e.target.id}:${e.direction}`,
    accounts: r.accounts,
    evidence: {
      target: e.target,
      direction: e.direction,
      votes: e.votes,
      target_share: e.targetShare,
      focus: e.focus,
      similarity: e.similarity,
      burst_share: e.burstShare,
      burst: { from: new Date(e.burst.from).toISOString(), to: new Date(e.burst.to).toISOString() },
      young_accounts: e.youngAccounts,
      median_account_age_hours:
        e.medianAccountAgeMs === null ? null : Math.round((e.medianAccountAgeMs / HOUR) * 10) / 10,
      score: e.score,
      surge: e.surge && {
        window: {
          from: new Date(e.surge.window.from).toISOString(),
          to: new Date(e.surge.window.to).toISOString(),
        },
        down_share: e.surge.downShare,
        window_votes: e.surge.windowVotes,
        preceding_votes: e.surge.precedingVotes,
        delay_hours: Math.round((e.surge.delayMs / HOUR) * 10) / 10,
      },
      window,
      confidence: e.confidence,
      suspect_share: e.suspectShare,
      shared_networks: e.sharedNetworks,
      linked_accounts: e.linkedAccounts,
      proxy_like_accounts: e.proxyLikeAccounts,
      dormant_accounts: e.dormantAccounts,
      only_vote_accounts: e.onlyVoteAccounts,
      common_ua: e.commonUa,
      members: e.members.map((m) => ({
        account: m.account,
        reasons: m.reasons,
        shared_networks: m.sharedNetworks,
        linked_members: m.linkedMembers,
        proxy_like: m.proxyLike,
        in_excess: m.inExcess,
        dormant: m.dormant,
        only_votes: m.onlyVotes,
        age_at_first_vote_hours: m.ageAtFirstVoteMs === null ? null : hours(m.ageAtFirstVoteMs),
        first_vote_offset_hours: hours(m.firstVoteOffsetMs),
        focus: m.focus,
        similarity: m.similarity,
        ua: m.ua,
        suspicion: m.suspicion,
      })),
    },
  };
}

function itemView(r: VoteRingRecord, restoreMs: number): VoteRingItemView {
  return {
    kind: 'vote_ring',
    id: r.id,
    status: r.status,
    accounts: r.accounts.map((u) => ({
      id: u.id,
      username: u.username,
      role: u.role,
      created_at: u.createdAt.toISOString(),
    })),
    evidence: r.evidence,
    created_at: r.createdAt.toISOString(),
    closed_at: r.closedAt?.toISOString() ?? null,
    closed_by: r.closedBy,
    action: r.action,
    reason: r.reason,
    voided_votes: r.voidedVotes,
    restored_at: r.restoredAt?.toISOString() ?? null,
    restored_by: r.restoredBy,
    restored_votes: r.restoredVotes,
    skipped_votes: r.skippedVotes,
    restorable_until:
      r.action === 'void' && r.closedAt ? new Date(r.closedAt.getTime() + restoreMs).toISOString() : null,
  };
}
