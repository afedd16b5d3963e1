/** API.md Moderation, "Vote rings": the queue's `vote_ring` items and the action on them. */
import { z } from 'zod';
import { boundedText } from './common.schemas.ts';

const reason = boundedText('reason', { max: 500, trim: true });

export const VoteRingBody = z
  .object({
    action: z
      .enum(['void', 'dismiss', 'restore'], { error: 'action must be void, dismiss or restore' })
      .describe(
        "`void`: every vote of the ring's accounts leaves the counts, kept aside (counts stay exact); `dismiss`: " +
          "closes the item; `restore`: puts a voided item's votes back (within `VOTE_RING_RESTORE_DAYS`; a voter " +
          'who voted again on the same upload since keeps the new vote, and removed uploads are skipped).',
      )
      .meta({ examples: ['void'] }),
    reason: reason.default('').meta({ examples: ['ring boosting one author'] }),
  })
  .meta({ examples: [{ action: 'void', reason: 'ring boosting one author' }] });

const Account = z.object({
  id: z.uuid(),
  username: z.string(),
  role: z.enum(['user', 'admin']),
  created_at: z.iso.datetime(),
});

const share = z.number().min(0).max(1);

export const VoteRingEvidence = z.object({
  target: z
    .object({ type: z.enum(['author', 'upload']), id: z.uuid() })
    .describe('What the ring voted on: every upload of one author (a user id), or one upload.'),
  direction: z.enum(['up', 'down']),
  votes: z.int().nonnegative().describe("The ring's votes on the target in the window."),
  target_share: share.describe("Of the target's votes in the window, the share the ring cast."),
  focus: share.describe("Mean share of each member's votes in the window that went to the target."),
  similarity: share.describe("Mean Jaccard similarity of the members' sets of the target's uploads."),
  burst_share: share.describe('Share of the members whose first vote on the target falls in `burst`.'),
  burst: z.object({ from: z.iso.datetime(), to: z.iso.datetime() }),
  young_accounts: z.int().nonnegative().describe('Members younger than 7 days at their first vote on the target.'),
  median_account_age_hours: z.number().nonnegative().nullable(),
  score: z.number().min(0).max(6).describe('target_share + burst_share + focus + young share + breadth + size.'),
  surge: z
    .object({
      window: z.object({ from: z.iso.datetime(), to: z.iso.datetime() }),
      down_share: share.describe("Of the upload's votes in `window`, the share that is down."),
      window_votes: z.int().nonnegative().describe("The upload's votes in `window` (both directions)."),
      preceding_votes: z.int().nonnegative().describe("The upload's votes in the window of the same length before."),
      delay_hours: z.number().nonnegative().describe("From the upload's first vote to the window's start."),
    })
    .nullable()
    .optional()
    .describe(
      'Set when the ring was found by its surge (downvotes on one upload that its traffic does not explain, ' +
        "members whose focus is low); null when found by the members' focus; absent on items found before.",
    ),
  window: z
    .object({ from: z.iso.datetime(), to: z.iso.datetime() })
    .describe('The votes the detector read (`VOTE_RING_WINDOW`).'),
  // Issue 45: what links the accounts besides their votes. Absent on items found before.
  confidence: share
    .optional()
    .describe(
      'How sure the detector is that one operator runs these accounts (0..1; not a calibrated probability): ' +
        '0.75 and up when most members share networks few others use or vote from proxies; below, from their ' +
        'shape alone (dormant or new, only voting, much of the target, in a pattern).',
    ),
  suspect_share: share
    .optional()
    .describe("Of the target's candidate voters (those with a large share of their votes on it), the members' share."),
  shared_networks: z
    .int()
    .nonnegative()
    .optional()
    .describe(
      'Networks (keyed hashes of /24 or /48, never an address) shared by three members or more that few others use.',
    ),
  linked_accounts: z.int().nonnegative().optional().describe('Members linked to others by such networks.'),
  proxy_like_accounts: z
    .int()
    .nonnegative()
    .optional()
    .describe('Members whose votes each come from a network used once, not their sign-up one (rented proxies).'),
  dormant_accounts: z
    .int()
    .nonnegative()
    .optional()
    .describe('Members older than 7 days with (almost) no votes before the window.'),
  only_vote_accounts: z.int().nonnegative().optional().describe('Members that never uploaded nor reported.'),
  common_ua: z
    .object({
      family: z.string(),
      share: share,
      chance: share.describe('The chance that as many members share it, given its share among all voters.'),
    })
    .nullable()
    .optional()
    .describe("The members' most common user-agent family."),
  members: z
    .array(
      z.object({
        account: z.uuid(),
        reasons: z.array(z.string()).describe('Why the account is here, in words, strongest first.'),
        shared_networks: z.int().nonnegative(),
        linked_members: z.int().nonnegative(),
        proxy_like: z.enum(['strong', 'weak']).nullable(),
        in_excess: z
          .boolean()
          .describe(
            "Its weak trait (weakly proxy-like, dormant vote-only) is improbably common among the target's voters.",
          ),
        dormant: z.boolean(),
        only_votes: z.boolean(),
        age_at_first_vote_hours: z.number().nonnegative().nullable(),
        first_vote_offset_hours: z.number().describe("Its first vote on the target relative to the group's median."),
        focus: share,
        similarity: share,
        ua: z.string().nullable(),
        suspicion: z.number(),
      }),
    )
    .optional()
    .describe('Per account, why it is in the group (sorted by account).'),
});

export const VoteRingItem = z.object({
  kind: z.literal('vote_ring'),
  id: z.uuid(),
  status: z.enum(['open', 'closed']),
  accounts: z.array(Account).describe('The accounts of the ring (those that still exist).'),
  evidence: VoteRingEvidence,
  created_at: z.iso.datetime(),
  closed_at: z.iso.datetime().nullable(),
  closed_by: z.object({ id: z.uuid(), username: z.string() }).nullable(),
  action: z
    .enum(['void', 'dismiss', 'restore'])
    .nullable()
    .describe('`restore`: voided, then restored (`closed_by` and `reason` stay those of the void).'),
  reason: z.string().nullable(),
  voided_votes: z.int().nonnegative().nullable().describe('`void`: how many votes went.'),
  restored_at: z.iso.datetime().nullable().describe('When a voided item was restored.'),
  restored_by: z.object({ id: z.uuid(), username: z.string() }).nullable(),
  restored_votes: z.int().nonnegative().nullable().describe('`restore`: how many voided votes came back.'),
  skipped_votes: z
    .int()
    .nonnegative()
    .nullable()
    .describe(
      '`restore`: voided votes not put back: the voter had voted again on that upload (the new vote stays), ' +
        'or the upload was removed or deleted.',
    ),
  restorable_until: z.iso
    .datetime()
    .nullable()
    .describe('A voided item: until when `restore` is accepted (`VOTE_RING_RESTORE_DAYS` after the void).'),
});
