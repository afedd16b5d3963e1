import { z } from 'zod';
import type { TagService } from '../../domain/tag.service.ts';
import { IdParam } from '../schemas/common.schemas.ts';
import { TagList, TagsBody, TagsChanged, TagSuggestions, TagSuggestQuery } from '../schemas/community.schemas.ts';
import { routes } from './route.ts';

const TagParams = IdParam.extend({
  slug: z
    .string()
    .describe('The tag slug (or its name).')
    .meta({ examples: ['cats'] }),
});

/** API.md Moderation, States: what a single-upload route answers for an upload that is not visible. */
const HELD_OR_REMOVED =
  'A held upload is 404 to everyone but its owner and admins; a removed one is 410 `removed` to everyone but admins.';

export const tagRoutes = routes<{ tags: TagService }>((route) => [
  route({
    method: 'get',
    path: '/api/uploads/:id/tags',
    operationId: 'listUploadTags',
    tag: 'tags',
    summary: 'Tags of an upload',
    description: HELD_OR_REMOVED,
    auth: 'optional',
    scope: 'read',
    limit: 'general',
    params: IdParam,
    responses: { 200: { description: 'The tags.', json: TagList, cacheControl: ['public, no-cache'] } },
    errors: ['not_found', 'removed'],
    handler:
      (deps) =>
      async (ctx, { user, params }) => {
        ctx.set('Cache-Control', 'public, no-cache');
        ctx.body = { tags: await deps.tags.list(user, params.id) };
      },
  }),
  route({
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
    scope: 'manage',
    limit: 'general',
    params: IdParam,
    body: { json: TagsBody },
    responses: { 200: { description: 'All tags of the upload.', json: TagsChanged } },
    errors: ['invalid_request', 'invalid_tag', 'too_many_tags', 'not_found', 'removed'],
    handler:
      (deps) =>
      async (ctx, { user, params, body }) => {
        ctx.body = { success: true, tags: await deps.tags.add(user, params.id, body.tags) };
      },
  }),
  route({
    method: 'delete',
    path: '/api/uploads/:id/tags/:slug',
    operationId: 'removeUploadTag',
    tag: 'tags',
    summary: 'Remove a tag from an upload',
    description: `Owner or admin. ${HELD_OR_REMOVED}`,
    auth: 'required',
    scope: 'manage',
    limit: 'general',
    params: TagParams,
    responses: { 200: { description: 'The remaining tags of the upload.', json: TagsChanged } },
    errors: ['not_found', 'removed'],
    handler:
      (deps) =>
      async (ctx, { user, params }) => {
        ctx.body = { success: true, tags: await deps.tags.remove(user, params.id, params.slug) };
      },
  }),
  route({
    method: 'get',
    path: '/api/tags',
    operationId: 'suggestTags',
    tag: 'tags',
    summary: 'Tag suggestions by name prefix',
    description:
      'Tags carried by uploads a listing shows (public ones, for every caller), most used first; ' +
      'a tag only private uploads carry is not suggested, and private uploads are not counted. Pages on with ' +
      '`cursor=<next_cursor>` (same `q` and `limit`).',
    auth: 'none',
    limit: 'general',
    query: TagSuggestQuery,
    responses: { 200: { description: 'Suggestions.', json: TagSuggestions, cacheControl: ['public, max-age=60'] } },
    errors: ['invalid_request', 'invalid_cursor'],
    handler:
      (deps) =>
      async (ctx, { query }) => {
        ctx.set('Cache-Control', 'public, max-age=60');
        ctx.body = await deps.tags.suggest(query.q, query.limit, query.cursor);
      },
  }),
]);
