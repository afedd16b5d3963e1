import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { Upload } from './upload.entity.ts';
import { User } from './user.entity.ts';

/** A report of an upload (migration m009): one per user and upload, ever. */
export const Report = defineEntity({
  name: 'Report',
  tableName: 'reports',
  properties: {
    id: p.uuid().primary(),
    upload: () => p.manyToOne(Upload).deleteRule('cascade'),
    user: () => p.manyToOne(User).deleteRule('cascade'),
    reason: p.string().length(16),
    note: p.text().nullable(),
    /** `open` until a moderator approves or removes the upload. */
    status: p.string().length(8).$type<'open' | 'closed'>().default('open'),
    createdAt: p.datetime(3),
    closedAt: p.datetime(3).nullable(),
  },
});
export type IReport = InferEntity<typeof Report>;
