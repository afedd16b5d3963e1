import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { Upload } from './upload.entity.ts';
import { Tag } from './tag.entity.ts';

export const UploadTag = defineEntity({
  name: 'UploadTag',
  tableName: 'upload_tags',
  properties: {
    upload: () => p.manyToOne(Upload).primary().deleteRule('cascade'),
    tag: () => p.manyToOne(Tag).primary().deleteRule('cascade'),
    createdAt: p.datetime(3),
    // The upload's listing keys, copied (and moved by each vote with the upload's), so that a tag's listing in any
    // order is read from the tag's own index (m013-keyset-listings).
    uploadCreatedAt: p.datetime(3).nullable(),
    score: p.integer().default(0),
    hotRank: p.double().$type<number>().runtimeType('number').default(0),
    bestRank: p.double().$type<number>().runtimeType('number').default(0),
    rankedAt: p.datetime(3).nullable(),
    // Whether listings show the upload (m025-tag-link-listed), moved with the tag counts (tag-links.ts).
    listed: p.boolean().default(false),
  },
});
export type IUploadTag = InferEntity<typeof UploadTag>;
