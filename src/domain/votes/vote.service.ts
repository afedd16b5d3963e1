/**
 * One vote per user per upload: `fucks` (+1), `does_not_fuck` (−1) or `none` (retract). Voting again
 * with another value moves the vote; the same value is a no-op. Counters move inside the same
 * transaction as the vote row, by SQL arithmetic, so they stay exact under any concurrency.
 */
import { errors } from '../errors.ts';
import { isUuid } from '../ids.ts';
import type { Clock } from '../clock.ts';
import type { ClientFacts } from '../client-facts.ts';
import type { Principal } from '../users.ts';
import type { ModerationState, VoteValue } from '../uploads/upload.types.ts';
import { assertReachable } from '../moderation/access.ts';
import { assertOldEnough } from '../account-age.ts';
import type { VotedUpload } from '../feeds/feed.service.ts';

/** Checks the (locked) upload before a vote is written; throws to refuse it (nothing is written). */
export type VoteGuard = (upload: { id: string; userId: string; moderation: ModerationState }) => void;

export type VoteInput = VoteValue | 'none';

export interface VoteOutcome {
  uploadId: string;
  vote: VoteValue | null;
  upvotes: number;
  downvote_count: number;
}

export interface VoteStore {
  /**
   * Sets the user's vote (+1, −1, or 0 to retract), with what was seen of the client (kept on the vote row as
   * evidence for the vote-ring detector); null when the upload does not exist.
   */
  cast(
    userId: string,
    uploadId: string,
    value: 1 | -1 | 0,
    at: Date,
    guard?: VoteGuard,
    client?: ClientFacts,
  ): Promise<{
    value: 1 | -1 | 0;
    upvotes: number;
    downvotes: number;
    changed: boolean;
    /** When changed: the upload as the listings it is in name it (what the feed cache invalidates). */
    target?: VotedUpload;
  } | null>;
  myVote(uploadId: string, userId: string): Promise<VoteValue | null>;
}

const VALUE: Readonly<Record<VoteInput, 1 | -1 | 0>> = { fucks: 1, does_not_fuck: -1, none: 0 };

export class VoteService {
  readonly #votes: VoteStore;
  readonly #clock: Clock;
  readonly #onChanged: () => Promise<void>;
  readonly #onVoted: ((u: VotedUpload) => Promise<void>) | null;
  /** VOTE_MIN_ACCOUNT_AGE in seconds: younger accounts cannot vote (0: no rule). */
  readonly #minAccountAgeSeconds: number;

  constructor(deps: {
    votes: VoteStore;
    clock: Clock;
    /** A vote changed what public pages show (when the store does not say of which upload, or no onVoted). */
    onChanged?: () => Promise<void>;
    /** A vote changed the counts (and ranks) of upload `u`: invalidates only what that changes. */
    onVoted?: (u: VotedUpload) => Promise<void>;
    minAccountAgeSeconds?: number;
  }) {
    this.#votes = deps.votes;
    this.#clock = deps.clock;
    this.#onChanged = deps.onChanged ?? (async () => {});
    this.#onVoted = deps.onVoted ?? null;
    this.#minAccountAgeSeconds = deps.minAccountAgeSeconds ?? 0;
  }

  /** `client`: the voter's network hash and user-agent family as the gateway saw them (issue 45). */
  async vote(principal: Principal, uploadId: string, vote: VoteInput, client?: ClientFacts): Promise<VoteOutcome> {
    // Not a UUID: a malformed field (API.md Votes), not an unknown upload.
    if (!isUuid(uploadId)) throw errors.invalid('uploadId must be a UUID (the id of an upload)');
    // A too young account cannot vote (API.md Moderation); taking back a vote it has stays allowed.
    const now = this.#clock.now();
    if (vote !== 'none')
      assertOldEnough(principal.accountCreatedAt, this.#minAccountAgeSeconds, now, {
        action: 'vote',
        variable: 'VOTE_MIN_ACCOUNT_AGE',
      });
    // Held uploads take votes from their owner and admins only; removed ones from nobody (API.md Moderation).
    const r = await this.#votes.cast(
      principal.userId,
      uploadId,
      VALUE[vote],
      now,
      (u) => {
        assertReachable(u, principal);
        if (u.moderation === 'removed') throw errors.removed(`upload ${uploadId} was removed by the moderators`);
      },
      client,
    );
    if (!r) throw errors.notFound(`upload ${uploadId} does not exist`);
    if (r.changed) await (r.target && this.#onVoted ? this.#onVoted(r.target) : this.#onChanged());
    return {
      uploadId,
      vote: r.value === 1 ? 'fucks' : r.value === -1 ? 'does_not_fuck' : null,
      upvotes: r.upvotes,
      downvote_count: r.downvotes,
    };
  }

  myVote(uploadId: string, userId: string): Promise<VoteValue | null> {
    return this.#votes.myVote(uploadId, userId);
  }
}
