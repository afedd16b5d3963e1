import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/** Stored files whose last upload was deleted, until they are removed (migration m002). */
export const MediaGarbage = defineEntity({
  name: 'MediaGarbage',
  tableName: 'media_garbage',
  properties: {
    mediaKey: p.string().length(36).primary(),
    createdAt: p.datetime(3),
  },
});
export type IMediaGarbage = InferEntity<typeof MediaGarbage>;
