import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { User } from './user.entity.ts';
import { Upload } from './upload.entity.ts';

/** One vote per user per upload: the composite primary key is the rule. value is +1 (fucks) or −1 (does_not_fuck). */
export const Vote = defineEntity({
  name: 'Vote',
  tableName: 'votes',
  properties: {
    user: () => p.manyToOne(User).primary().deleteRule('cascade'),
    upload: () => p.manyToOne(Upload).primary().deleteRule('cascade'),
    value: p.smallint(),
    createdAt: p.datetime(3),
    updatedAt: p.datetime(3),
    /** Keyed hash of the voter's network when voting (m026; nulled past VOTE_FACTS_RETENTION). */
    net: p.string().length(32).nullable(),
    /** The voter's user-agent family when voting (m026; nulled past VOTE_FACTS_RETENTION). */
    ua: p.string().length(16).nullable(),
  },
});
export type IVote = InferEntity<typeof Vote>;

/**
 * A vote a ring's `void` took out of the votes table (m026): kept, flagged with the ring item (`voided_by`) and
 * the time, so that `restore` puts it back exactly within VOTE_RING_RESTORE_DAYS; deleted by the purge after.
 */
export const VoidedVote = defineEntity({
  name: 'VoidedVote',
  tableName: 'voided_votes',
  properties: {
    /** The ring item whose void took it (a foreign key in m026, on delete cascade). */
    voidedBy: p.uuid().primary(),
    user: () => p.manyToOne(User).primary().deleteRule('cascade'),
    upload: () => p.manyToOne(Upload).primary().deleteRule('cascade'),
    value: p.smallint(),
    createdAt: p.datetime(3),
    updatedAt: p.datetime(3),
    net: p.string().length(32).nullable(),
    ua: p.string().length(16).nullable(),
    voidedAt: p.datetime(3),
  },
});
export type IVoidedVote = InferEntity<typeof VoidedVote>;
