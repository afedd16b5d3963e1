import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/** The moderators' blocklist of hashes (migration m009), with the perceptual hash's chunks for multi-index hashing. */
export const BlocklistEntry = defineEntity({
  name: 'BlocklistEntry',
  tableName: 'blocklist',
  properties: {
    id: p.uuid().primary(),
    sha256: p.string().length(64).nullable(),
    phash: p.string().length(16).nullable(),
    ph0: p.integer().nullable(),
    ph1: p.integer().nullable(),
    ph2: p.integer().nullable(),
    ph3: p.integer().nullable(),
    /** PDQ (m016): 64 hex characters, matched within BLOCKLIST_PDQ_DISTANCE through blocklist_pdq_chunks. */
    pdq: p.string().length(64).nullable(),
    /** `sha256:phash`, or `sha256:phash:pdq` with a PDQ (any part may be empty): unique, so an entry is added once. */
    entryKey: p.string().length(160).unique(),
    reason: p.text().default(''),
    source: p.string().length(16).$type<'moderation' | 'import'>(),
    createdAt: p.datetime(3),
  },
});
export type IBlocklistEntry = InferEntity<typeof BlocklistEntry>;

/**
 * A PDQ entry's sixteen chunks (m016), keyed `position × 65 536 + value`: multi-index hashing for the PDQ lookup
 * (similarity/pdq-hamming.ts). Removed with their entry.
 */
export const BlocklistPdqChunk = defineEntity({
  name: 'BlocklistPdqChunk',
  tableName: 'blocklist_pdq_chunks',
  properties: {
    chunk: p.integer().primary(),
    entryId: p.uuid().primary(),
  },
});
export type IBlocklistPdqChunk = InferEntity<typeof BlocklistPdqChunk>;

/**
 * Blocklist entries whose matches among stored uploads are still to be held: the background job's durable to-do
 * list (m009; `job_id` m010). No foreign keys: an entry outlives its job.
 */
export const BlocklistPending = defineEntity({
  name: 'BlocklistPending',
  tableName: 'blocklist_pending',
  properties: {
    entryId: p.uuid().primary(),
    createdAt: p.datetime(3),
    /** The `blocklist_hold` job whose progress counts this entry (null: queued before m010). */
    jobId: p.uuid().nullable(),
  },
});
export type IBlocklistPending = InferEntity<typeof BlocklistPending>;

/**
 * One row (id 1, m010): bumped by every blocklist addition, read by an upload before its checks and in its insert
 * (insert-guard.ts).
 */
export const BlocklistVersion = defineEntity({
  name: 'BlocklistVersion',
  tableName: 'blocklist_version',
  properties: {
    id: p.integer().primary().autoincrement(false),
    version: p.bigint('number').defaultRaw('0'),
  },
});
export type IBlocklistVersion = InferEntity<typeof BlocklistVersion>;
