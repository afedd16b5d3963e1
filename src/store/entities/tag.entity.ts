import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const Tag = defineEntity({
  name: 'Tag',
  tableName: 'tags',
  properties: {
    id: p.uuid().primary(),
    name: p.string().length(32).unique(),
    slug: p.string().length(32).unique(),
    /**
     * Listed (public) uploads carrying the tag, for suggestions;
     * moved in the transaction of each change (tag-links.ts).
     */
    uploadCount: p.integer().default(0),
    createdAt: p.datetime(3),
  },
});
export type ITag = InferEntity<typeof Tag>;
