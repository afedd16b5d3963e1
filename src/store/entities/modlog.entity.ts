import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/**
 * The public modlog (migration m009): append-only (triggers refuse updates and deletes), so no foreign keys: an
 * entry outlives its target and its moderator.
 */
export const ModlogEntry = defineEntity({
  name: 'ModlogEntry',
  tableName: 'modlog',
  properties: {
    id: p.uuid().primary(),
    at: p.datetime(3),
    action: p.string().length(16),
    targetType: p.string().length(16),
    targetId: p.uuid(),
    reason: p.text().default(''),
    /** Null for automatic actions. */
    moderatorId: p.uuid().nullable(),
    moderatorName: p.string().length(32).nullable(),
  },
});
export type IModlogEntry = InferEntity<typeof ModlogEntry>;
