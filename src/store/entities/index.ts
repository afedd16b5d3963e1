export { User, type IUser } from './user.entity.ts';
export { ApiToken, type IApiToken } from './api-token.entity.ts';
export { Tag, type ITag } from './tag.entity.ts';
export { Upload, type IUpload } from './upload.entity.ts';
export { UploadTag, type IUploadTag } from './upload-tag.entity.ts';
export { Vote, type IVote } from './vote.entity.ts';
export { IdempotencyKey, type IIdempotencyKey } from './idempotency-key.entity.ts';

import { User } from './user.entity.ts';
import { ApiToken } from './api-token.entity.ts';
import { Tag } from './tag.entity.ts';
import { Upload } from './upload.entity.ts';
import { UploadTag } from './upload-tag.entity.ts';
import { Vote } from './vote.entity.ts';
import { IdempotencyKey } from './idempotency-key.entity.ts';

export const ALL_ENTITIES = [User, ApiToken, Tag, Upload, UploadTag, Vote, IdempotencyKey];
