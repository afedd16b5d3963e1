import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/** The moderation queue's vote-ring items (migration m011): accounts and evidence as JSON text. */
export const VoteRing = defineEntity({
  name: 'VoteRing',
  tableName: 'vote_rings',
  properties: {
    id: p.uuid().primary(),
    /** SHA-256 of target, direction and sorted accounts: unique among open items (a partial index). */
    ringKey: p.string().length(64),
    /** `type:id:direction` of the ring's target. */
    targetKey: p.string().length(128),
    status: p.string().length(8).$type<'open' | 'closed'>().default('open'),
    /** JSON array of user ids, as text. */
    accounts: p.text(),
    /** JSON object, as text: the evidence as the queue shows it. */
    evidence: p.text(),
    createdAt: p.datetime(3),
    closedAt: p.datetime(3).nullable(),
    closedBy: p.uuid().nullable(),
    /** `restore`: voided, then restored (m026). */
    action: p.string().length(8).$type<'void' | 'dismiss' | 'restore'>().nullable(),
    reason: p.text().nullable(),
    voidedVotes: p.integer().nullable(),
    /** m026: the restore of a voided item. */
    restoredAt: p.datetime(3).nullable(),
    restoredBy: p.uuid().nullable(),
    restoredVotes: p.integer().nullable(),
    skippedVotes: p.integer().nullable(),
  },
});
export type IVoteRing = InferEntity<typeof VoteRing>;
