import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import type { ModerationState, UploadType, VariantInfo } from '../../domain/uploads/upload.types.ts';
import type { PersonBox } from '../../domain/person-policy.ts';
import type { Provenance } from '../../domain/uploads/provenance.ts';
import type { AiLabel } from '../../domain/uploads/ai-label.ts';
import { User } from './user.entity.ts';

/**
 * An image or link upload. Counters and ranks are only ever moved by single SQL statements
 * (see vote.repository.ts), never read-modify-written through the ORM.
 */
export const Upload = defineEntity({
  name: 'Upload',
  tableName: 'uploads',
  properties: {
    id: p.uuid().primary(),
    user: () => p.manyToOne(User).deleteRule('cascade'),
    uploadType: p.string().length(8).$type<UploadType>(),
    filename: p.string().length(64).nullable(),
    originalName: p.string().length(255).nullable(),
    description: p.text().default(''),
    externalUrl: p.text().nullable(),
    sourceUrl: p.text().nullable(),
    upvotes: p.integer().default(0),
    downvoteCount: p.integer().default(0),
    /** upvotes − downvotes, for `sort=top`. */
    score: p.integer().default(0),
    // Doubles are numbers from both drivers (MikroORM's DoubleType would type them `number | string`).
    /** Reddit-style hot rank: log10 of the score plus creation time; indexable because it does not depend on now. */
    hotRank: p.double().$type<number>().runtimeType('number').default(0),
    /** Wilson score lower bound (z = 1.28), for `sort=best`. */
    bestRank: p.double().$type<number>().runtimeType('number').default(0),
    /** When votes last moved the ranks (null: never); a ranked listing's cursor skips uploads moved after it began. */
    rankedAt: p.datetime(3).nullable(),
    isPrivate: p.boolean().default(false),
    createdAt: p.datetime(3),
    /** SHA-256 of the original bytes (hex): exact-duplicate key. */
    sha256: p.string().length(64).nullable(),
    /** 64-bit perceptual hash as 16 hex characters: exact on both databases. */
    phash: p.string().length(16).nullable(),
    /** The perceptual hash split into chunks of 22, 21 and 21 bits, for multi-index hashing (hamming.ts). */
    mih0: p.integer().nullable(),
    mih1: p.integer().nullable(),
    mih2: p.integer().nullable(),
    /** PDQ, Meta's 256-bit perceptual hash, as 64 hex characters (the blocklist's shared hashes); images only. */
    pdq: p.string().length(64).nullable(),
    /** PDQ's quality, 0–100: a hash below 50 is too featureless to match. */
    pdqQuality: p.integer().nullable(),
    /** Name of the stored variant files; shared by uploads of identical bytes. */
    mediaKey: p.string().length(36).nullable(),
    width: p.integer().nullable(),
    height: p.integer().nullable(),
    animated: p.boolean().nullable(),
    originalFormat: p.string().length(8).nullable(),
    thumbhash: p.string().length(64).nullable(),
    humanScore: p.double().$type<number>().runtimeType('number').nullable(),
    /** The detector's best boxes, as fractions of the image, kept when person detection queued it for review. */
    humanBoxes: p.json<PersonBox[]>().nullable(),
    /** Variant dimensions and byte sizes: {thumb: {width, height, bytes}, …}. */
    variants: p.json<Record<string, VariantInfo>>().nullable(),
    /** `visible`, `held` or `removed` (API.md Moderation). */
    moderation: p.string().length(8).$type<ModerationState>().default('visible'),
    personFlag: p.boolean().default(false),
    moderatedAt: p.datetime(3).nullable(),
    /** How many of its reports are open. */
    openReports: p.integer().default(0),
    /** What the reader found in the original bytes (C2PA, IPTC); null for links, older images, AI_POLICY=off (m029). */
    provenance: p.json<Provenance>().nullable(),
    /** The label `ai=exclude|only` filters on: `marker` (a marker says generated), `owner` (marked by hand), null. */
    aiLabel: p.string().length(8).$type<AiLabel>().nullable(),
    /** Its place in the open moderation queue (held first, then most open reports); null when not in it (m020). */
    queueKey: p.integer().nullable(),
  },
});
export type IUpload = InferEntity<typeof Upload>;
