import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/**
 * A durable moderation job (migration m010: ban removals, blocklist holds), claimed with a lease, with its
 * progress. The moderator and target ids are not foreign keys: the job outlives them.
 */
export const ModerationJob = defineEntity({
  name: 'ModerationJob',
  tableName: 'moderation_jobs',
  properties: {
    id: p.uuid().primary(),
    kind: p.string().length(16).$type<'ban_removal' | 'blocklist_hold'>(),
    status: p.string().length(8).$type<'queued' | 'running' | 'done' | 'failed'>().default('queued'),
    targetType: p.string().length(16).$type<'user' | 'blocklist'>(),
    /** The banned user; null for a blocklist hold (its entries are in blocklist_pending). */
    targetId: p.uuid().nullable(),
    reason: p.text().default(''),
    moderatorId: p.uuid().nullable(),
    moderatorName: p.string().length(32).nullable(),
    done: p.integer().default(0),
    total: p.integer().default(0),
    /** Runs that failed (an error, not a crash); the job fails for good after a few. */
    attempts: p.integer().default(0),
    error: p.text().nullable(),
    leaseOwner: p.string().length(64).nullable(),
    leaseUntil: p.datetime(3).nullable(),
    createdAt: p.datetime(3),
    updatedAt: p.datetime(3),
  },
});
export type IModerationJob = InferEntity<typeof ModerationJob>;
