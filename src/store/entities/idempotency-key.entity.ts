import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { User } from './user.entity.ts';

/** A remembered upload response, so a retry with the same Idempotency-Key creates nothing new. */
export const IdempotencyKey = defineEntity({
  name: 'IdempotencyKey',
  tableName: 'idempotency_keys',
  properties: {
    user: () => p.manyToOne(User).primary().deleteRule('cascade'),
    key: p.string().length(255).primary(),
    /** SHA-256 of the request's fields and file hash: the same key with another body is refused. */
    requestHash: p.string().length(64),
    /** HTTP status of the stored response; null while the first request is still running. */
    status: p.integer().nullable(),
    body: p.text().nullable(),
    createdAt: p.datetime(3),
    /** The claim's holder while pending; its writes count only while this is still its token. */
    claimToken: p.string().length(36).nullable(),
    /** While pending: the claim lapses (a retry may take it over) unless renewed before this. */
    leaseUntil: p.datetime(3).nullable(),
  },
});
export type IIdempotencyKey = InferEntity<typeof IdempotencyKey>;
