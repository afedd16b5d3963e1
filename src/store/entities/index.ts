/**
 * Every table of the database, declared once (src/store/README.md): the Kysely schema (database-types.ts) and the
 * schema test's column lists derive from these.
 */
export { User, type IUser } from './user.entity.ts';
export { ApiToken, type IApiToken } from './api-token.entity.ts';
export { Tag, type ITag } from './tag.entity.ts';
export { Upload, type IUpload } from './upload.entity.ts';
export { UploadTag, type IUploadTag } from './upload-tag.entity.ts';
export { RankMove, type IRankMove } from './rank-move.entity.ts';
export { Vote, VoidedVote, type IVote, type IVoidedVote } from './vote.entity.ts';
export { IdempotencyKey, type IIdempotencyKey } from './idempotency-key.entity.ts';
export { MediaGarbage, type IMediaGarbage } from './media-garbage.entity.ts';
export { Report, type IReport } from './report.entity.ts';
export {
  BlocklistEntry,
  BlocklistPdqChunk,
  BlocklistPending,
  BlocklistVersion,
  type IBlocklistEntry,
  type IBlocklistPdqChunk,
  type IBlocklistPending,
  type IBlocklistVersion,
} from './blocklist.entity.ts';
export { ModerationJob, type IModerationJob } from './moderation-job.entity.ts';
export { ModlogEntry, type IModlogEntry } from './modlog.entity.ts';
export { VoteRing, type IVoteRing } from './vote-ring.entity.ts';
export { UserUploadStats, UserVoteStats, type IUserUploadStats, type IUserVoteStats } from './user-stats.entity.ts';
export { ResumableUpload, type IResumableUpload } from './resumable-upload.entity.ts';
export {
  UploadMilestone,
  WebhookDelivery,
  WebhookEndpoint,
  type IUploadMilestone,
  type IWebhookDelivery,
  type IWebhookEndpoint,
} from './webhook.entity.ts';

import { User } from './user.entity.ts';
import { ApiToken } from './api-token.entity.ts';
import { Tag } from './tag.entity.ts';
import { Upload } from './upload.entity.ts';
import { UploadTag } from './upload-tag.entity.ts';
import { RankMove } from './rank-move.entity.ts';
import { Vote, VoidedVote } from './vote.entity.ts';
import { IdempotencyKey } from './idempotency-key.entity.ts';
import { MediaGarbage } from './media-garbage.entity.ts';
import { Report } from './report.entity.ts';
import { BlocklistEntry, BlocklistPdqChunk, BlocklistPending, BlocklistVersion } from './blocklist.entity.ts';
import { ModerationJob } from './moderation-job.entity.ts';
import { ModlogEntry } from './modlog.entity.ts';
import { VoteRing } from './vote-ring.entity.ts';
import { UserUploadStats, UserVoteStats } from './user-stats.entity.ts';
import { UploadMilestone, WebhookDelivery, WebhookEndpoint } from './webhook.entity.ts';
import { ResumableUpload } from './resumable-upload.entity.ts';

export const ALL_ENTITIES = [
  User,
  ApiToken,
  Tag,
  Upload,
  UploadTag,
  RankMove,
  Vote,
  IdempotencyKey,
  MediaGarbage,
  Report,
  BlocklistEntry,
  BlocklistPdqChunk,
  BlocklistPending,
  BlocklistVersion,
  ModerationJob,
  ModlogEntry,
  VoteRing,
  VoidedVote,
  WebhookEndpoint,
  WebhookDelivery,
  UploadMilestone,
  UserUploadStats,
  UserVoteStats,
  ResumableUpload,
];
