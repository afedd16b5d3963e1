import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { Upload } from './upload.entity.ts';

/**
 * The journal of rank moves (migration m019): the keys an upload had just before a vote moved them, so that a ranked
 * cursor lists an upload that moved after its traversal began at the keys it had then. Pruned after an hour.
 */
export const RankMove = defineEntity({
  name: 'RankMove',
  tableName: 'rank_moves',
  properties: {
    upload: () => p.manyToOne(Upload).primary().deleteRule('cascade'),
    /** When the move happened: the `ranked_at` it gave the upload. */
    movedAt: p.datetime(3).primary(),
    /** The upload's `ranked_at` before the move (null: it had never moved). */
    prevAt: p.datetime(3).nullable(),
    score: p.integer(),
    hotRank: p.double().$type<number>().runtimeType('number'),
    bestRank: p.double().$type<number>().runtimeType('number'),
  },
});
export type IRankMove = InferEntity<typeof RankMove>;
