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
  },
});
export type IVote = InferEntity<typeof Vote>;
