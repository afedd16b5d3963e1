import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { User } from './user.entity.ts';

/**
 * A tus 1.0 resumable upload (m028, issue 49): its state lives here, not in a process, so any gateway continues
 * it; the bytes received so far are a file under DATA_DIR/resumable named by the id, or an S3 multipart upload
 * in the bucket with MEDIA_STORE=s3://… (src/store/s3-resumable-parts.ts).
 */
export const ResumableUpload = defineEntity({
  name: 'ResumableUpload',
  tableName: 'resumable_uploads',
  properties: {
    id: p.string().length(36).primary(),
    user: () => p.manyToOne(User).deleteRule('cascade'),
    /** Upload-Length: the whole file's size in bytes. */
    length: p.integer(),
    /** Bytes received and acknowledged (the tus Upload-Offset). */
    received: p.integer(),
    /** The upload's fields from Upload-Metadata (description, tags, is_private, filename), as JSON. */
    fields: p.text(),
    idempotencyKey: p.string().length(255).nullable(),
    /** `receiving` until the last byte, `processing` while the upload use case runs, then `done`. */
    status: p.string().length(16),
    /** The use case's answer once done: its status and body, exactly as the direct upload answers. */
    resultStatus: p.integer().nullable(),
    resultBody: p.text().nullable(),
    createdAt: p.datetime(3),
    /** After this an incomplete upload is gone (404) and its bytes are swept; a done one's result too. */
    expiresAt: p.datetime(3),
    /** A PATCH (or the completion) holds the upload until this; another waits or is refused 409. */
    leaseUntil: p.datetime(3).nullable(),
  },
});
export type IResumableUpload = InferEntity<typeof ResumableUpload>;
