import { z } from 'zod';
import {
  FeedPage,
  FeedQuery,
  Profile,
  RecentItems,
  RecentQuery,
  TagList,
  TagsBody,
  TagsChanged,
  TagSuggestions,
  TagSuggestQuery,
  VoteBody,
  VoteResult,
} from '../schemas/community.schemas.ts';
import { IdParam } from '../schemas/common.schemas.ts';
import type { Operation } from './operation.types.ts';

const TagParams = IdParam.extend({
  slug: z
    .string()
    .describe('The tag slug (or its name).')
    .meta({ examples: ['cats'] }),
});

/** API.md Moderation, States: what a single-upload route answers for an upload that is not visible. */
const HELD_OR_REMOVED =
  'A held upload is 404 to everyone but its owner and admins; a removed one is 410 `removed` to everyone but admins.';

export const communityOperations: Operation[] = [
  {
    method: 'post',
    path: '/api/vote',
    operationId: 'vote',
    tag: 'votes',
    summary: 'Vote on an upload, move the vote, or retract it',
    description:
      'One vote per user per upload: voting again with another value moves it, the same value is a no-op, ' +
      '`none` retracts. Counts stay exact under any concurrency. ' +
      'An `uploadId` that is not a UUID is 400 `invalid_request`; an unknown upload is 404, and so is a held one ' +
      "that is not the caller's (unless an admin); a removed one is 410 `removed`. An account younger than " +
      '`VOTE_MIN_ACCOUNT_AGE` is 403 `account_too_new` (retracting with `none` stays allowed).',
    auth: 'required',
    limit: 'vote',
    body: { json: VoteBody },
    responses: { 200: { description: "The caller's vote and the upload's counts.", json: VoteResult } },
    errors: ['invalid_request', 'account_too_new', 'not_found', 'removed'],
  },
  {
    method: 'get',
    path: '/api/uploads',
    operationId: 'listUploads',
    tag: 'feeds',
    summary: 'Public uploads, paginated, filtered and sorted',
    description:
      'Public uploads only, for everyone (owners find their private ones in /api/profile). ' +
      'Default order: newest first.',
    auth: 'none',
    limit: 'general',
    query: FeedQuery,
    responses: { 200: { description: 'One page.', json: FeedPage, cacheControl: ['public, max-age=120'] } },
    errors: ['invalid_request'],
  },
  {
    method: 'get',
    path: '/api/items-recent',
    operationId: 'recentItems',
    tag: 'feeds',
    summary: 'The newest public uploads',
    auth: 'none',
    limit: 'general',
    query: RecentQuery,
    responses: { 200: { description: 'Newest first.', json: RecentItems, cacheControl: ['public, max-age=300'] } },
    errors: ['invalid_request'],
  },
  {
    method: 'get',
    path: '/api/profile',
    operationId: 'profile',
    tag: 'feeds',
    summary: "The caller's profile: user, stats and own uploads",
    auth: 'required',
    limit: 'general',
    responses: {
      200: { description: 'The profile.', json: Profile, cacheControl: ['private, max-age=30'], headers: ['Vary'] },
    },
  },
  {
    method: 'get',
    path: '/api/uploads/:id/tags',
    operationId: 'listUploadTags',
    tag: 'tags',
    summary: 'Tags of an upload',
    description: HELD_OR_REMOVED,
    auth: 'optional',
    limit: 'general',
    params: IdParam,
    responses: { 200: { description: 'The tags.', json: TagList, cacheControl: ['public, no-cache'] } },
    errors: ['not_found', 'removed'],
  },
  {
    method: 'post',
    path: '/api/uploads/:id/tags',
    operationId: 'addUploadTags',
    tag: 'tags',
    summary: 'Add tags to an upload',
    description:
      'Owner or admin. Adding an existing tag is a no-op. ' +
      'More than 10 tags on the upload after adding is 400 `too_many_tags` and nothing is added. ' +
      HELD_OR_REMOVED,
    auth: 'required',
    limit: 'general',
    params: IdParam,
    body: { json: TagsBody },
    responses: { 200: { description: 'All tags of the upload.', json: TagsChanged } },
    errors: ['invalid_request', 'invalid_tag', 'too_many_tags', 'not_found', 'removed'],
  },
  {
    method: 'delete',
    path: '/api/uploads/:id/tags/:slug',
    operationId: 'removeUploadTag',
    tag: 'tags',
    summary: 'Remove a tag from an upload',
    description: `Owner or admin. ${HELD_OR_REMOVED}`,
    auth: 'required',
    limit: 'general',
    params: TagParams,
    responses: { 200: { description: 'The remaining tags of the upload.', json: TagsChanged } },
    errors: ['not_found', 'removed'],
  },
  {
    method: 'get',
    path: '/api/tags',
    operationId: 'suggestTags',
    tag: 'tags',
    summary: 'Tag suggestions by name prefix',
    description:
      'Tags carried by uploads a listing shows (public ones, for every caller), most used first; ' +
      'a tag only private uploads carry is not suggested, and private uploads are not counted.',
    auth: 'none',
    limit: 'general',
    query: TagSuggestQuery,
    responses: { 200: { description: 'Suggestions.', json: TagSuggestions, cacheControl: ['public, max-age=60'] } },
    errors: ['invalid_request'],
  },
];
