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
  },
});
export type IUploadTag = InferEntity<typeof UploadTag>;
