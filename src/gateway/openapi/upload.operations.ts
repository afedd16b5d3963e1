import { IdParam } from '../schemas/common.schemas.ts';
import {
  DuplicateNotice,
  ImageQuery,
  PrivacyBody,
  UploadDeleted,
  UploadFields,
  UploadForm,
  UploadRecord,
} from '../schemas/upload.schemas.ts';
import type { Operation } from './operation.types.ts';

const createUpload = (path: string, operationId: string, alias: boolean): Operation => ({
  method: 'post',
  path,
  operationId,
  tag: 'uploads',
  summary: alias
    ? 'Create an upload (alias of /api/v1/upload)'
    : 'Create an upload: an image file, an image URL or a link',
  description:
    'Multipart (`upload_type=image` with the field `file`, or any type) or JSON (`image_url` and `link`). ' +
    'Files are at most 10 MiB; the image must be JPEG, PNG, GIF or WebP by its bytes. ' +
    'A duplicate (same SHA-256, or a perceptual hash within NEAR_DUPLICATE_DISTANCE) of an upload the caller may see ' +
    'answers 200 with a duplicate notice and stores nothing. ' +
    'An image (file or `image_url`) matching the blocklist (its SHA-256, or a perceptual hash within ' +
    '`BLOCKLIST_DISTANCE`) is 400 `blocked_content`, decided before person detection and encoding; nothing is ' +
    'stored. `HUMAN_POLICY=flag` accepts a person and queues it for the moderators, `hold` accepts it held ' +
    '(`moderation: held`) until approved. ' +
    'With `Idempotency-Key`, a retry from the same user within 24 h returns the first result ' +
    '(`Idempotent-Replayed: true`) and does not spend the upload limit; the same key with a different request is 409.',
  auth: 'required',
  limit: 'upload',
  idempotencyKey: true,
  body: {
    multipart: UploadForm,
    multipartEncoding: { file: { contentType: 'image/jpeg, image/png, image/gif, image/webp' } },
    json: UploadFields,
  },
  responses: {
    200: {
      description: 'A duplicate: nothing new was stored.',
      json: DuplicateNotice,
      optionalHeaders: ['Idempotent-Replayed'],
    },
    201: {
      description: 'Created.',
      json: UploadRecord,
      headers: ['Location'],
      optionalHeaders: ['Idempotent-Replayed'],
    },
  },
  errors: [
    'invalid_request',
    'unsupported_format',
    'invalid_image',
    'human_detected',
    'blocked_content',
    'fetch_failed',
    'too_many_tags',
    'invalid_tag',
    'conflict',
    'payload_too_large',
    'busy',
    'storage_unavailable',
  ],
});

export const uploadOperations: Operation[] = [
  createUpload('/api/v1/upload', 'createUpload', false),
  createUpload('/api/upload', 'createUploadAlias', true),
  {
    method: 'get',
    path: '/api/upload/:id',
    operationId: 'getUpload',
    tag: 'uploads',
    summary: 'One upload',
    description:
      'Private uploads are reachable by anyone who knows the id (private means unlisted). ' +
      'An authenticated caller also gets `my_vote`. ' +
      'A held upload is 404 to everyone but its owner and admins; a removed one is 410 `removed` to everyone but ' +
      'admins, who get its tombstone record (`moderation: removed`).',
    auth: 'optional',
    limit: 'general',
    params: IdParam,
    responses: {
      200: {
        description: 'The upload record.',
        json: UploadRecord,
        cacheControl: ['public, no-cache', 'private, no-cache'],
      },
    },
    errors: ['not_found', 'removed'],
  },
  {
    method: 'patch',
    path: '/api/upload/:id/privacy',
    operationId: 'setUploadPrivacy',
    tag: 'uploads',
    summary: 'Make an upload private or public',
    description:
      'Owner or admin. A held upload is 404 to everyone but its owner and admins; ' +
      'a removed one is 410 `removed` to everyone but admins.',
    auth: 'required',
    limit: 'general',
    params: IdParam,
    body: { json: PrivacyBody },
    responses: { 200: { description: 'The updated upload record.', json: UploadRecord } },
    errors: ['invalid_request', 'not_found', 'removed'],
  },
  {
    method: 'delete',
    path: '/api/upload/:id',
    operationId: 'deleteUpload',
    tag: 'uploads',
    summary: 'Delete an upload',
    description:
      'Owner or admin. Removes its votes, tag links and image files (unless another upload shares them). ' +
      'A second delete is 404. A held upload is 404 to everyone but its owner and admins; ' +
      'a removed one is 410 `removed` to everyone but admins.',
    auth: 'required',
    limit: 'general',
    params: IdParam,
    responses: { 200: { description: 'Deleted.', json: UploadDeleted } },
    errors: ['not_found', 'removed'],
  },
  {
    method: 'get',
    path: '/api/image/:id',
    operationId: 'getImage',
    tag: 'uploads',
    summary: 'The image of an upload, as WebP',
    description:
      'Variants: thumb ≤ 320 px, medium ≤ 1024 px, full ≤ 2048 px on the long side; ' +
      'animation kept, EXIF/GPS stripped, orientation applied. The original bytes are never served. ' +
      "Private uploads are served too. A held upload's image is 404 to everyone but its owner and admins " +
      '(send the credential); a removed upload has no image files left: 410 `removed`.',
    auth: 'optional',
    limit: 'general',
    params: IdParam,
    query: ImageQuery,
    responses: {
      200: {
        description: 'The variant.',
        other: { 'image/webp': { type: 'string', contentMediaType: 'image/webp' } },
        headers: ['ETag', 'Content-Security-Policy', 'X-Content-Type-Options'],
        cacheControl: ['public, max-age=31536000, immutable', 'private, no-store'],
      },
      206: {
        description: 'One range of the variant (`Range: bytes=…`; a range outside it is ignored: 200).',
        other: { 'image/webp': { type: 'string', contentMediaType: 'image/webp' } },
        headers: ['ETag', 'Content-Security-Policy', 'X-Content-Type-Options'],
        cacheControl: ['public, max-age=31536000, immutable', 'private, no-store'],
      },
      302: {
        description:
          'With object storage and `MEDIA_REDIRECT=true`: a short-lived presigned URL of the variant in the store.',
        headers: ['Presigned-Location'],
        cacheControl: ['private, no-store'],
      },
    },
    errors: ['invalid_request', 'not_found', 'removed', 'storage_unavailable'],
  },
];
