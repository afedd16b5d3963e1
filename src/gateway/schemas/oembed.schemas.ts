import { z } from 'zod';
import { positiveIntOf } from './community.schemas.ts';

const PAGE_EXAMPLE = 'https://pixvote.example/uploads/3f2b8c1e-9a4d-4e7b-8f0a-6c5d2e1b7a90';

/** An optional positive integer in the query (a string on the wire). */
const optionalSize = (name: string, example: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => positiveIntOf(name, v, ctx, undefined))
    .meta({ type: 'integer', minimum: 1, examples: [example] });

/** `GET /api/oembed`: the oEmbed 1.0 request (https://oembed.com, 2.2). */
export const OEmbedQuery = z.object({
  url: z
    .string({ error: 'url is required: the address of an upload page' })
    .max(4096, { error: 'url is too long' })
    .describe('The address of an upload page of this service (`/uploads/{id}`).')
    .meta({ examples: [PAGE_EXAMPLE] }),
  format: z
    .string()
    .max(16, { error: 'format is too long' })
    .optional()
    .describe('`json` (the default); any other format is 501.')
    .meta({ examples: ['json'] }),
  maxwidth: optionalSize('maxwidth', 640).describe('The largest width the consumer can show.'),
  maxheight: optionalSize('maxheight', 480).describe('The largest height the consumer can show.'),
});

/** oEmbed 1.0's response (https://oembed.com, 2.3). */
export const OEmbedResponse = z
  .object({
    version: z.literal('1.0'),
    type: z.enum(['photo', 'link']).describe('`photo` for an image upload, `link` for a link upload.'),
    title: z.string().describe('The description, trimmed to 70 characters, or "Upload by <username>".'),
    author_name: z.string().describe('The uploader.'),
    author_url: z.string().optional().describe("The uploader's page (`/u/{username}`)."),
    provider_name: z.literal('pixvote'),
    provider_url: z.string().describe("This service's address, as the request named it."),
    cache_age: z.number().int().describe('Seconds the consumer may keep this answer.'),
    url: z
      .string()
      .optional()
      .describe('photo: the largest image variant (thumb ≤ 320, medium ≤ 1024, full ≤ 2048 px) within the box.'),
    width: z.number().int().optional().describe('photo: the width, scaled into maxwidth × maxheight.'),
    height: z.number().int().optional().describe('photo: the height, scaled into maxwidth × maxheight.'),
    thumbnail_url: z.string().optional(),
    thumbnail_width: z.number().int().optional(),
    thumbnail_height: z.number().int().optional(),
  })
  .describe('An oEmbed 1.0 answer.')
  .meta({
    examples: [
      {
        version: '1.0',
        type: 'photo',
        title: 'A cat asleep on the keyboard',
        author_name: 'mira',
        author_url: 'https://pixvote.example/u/mira',
        provider_name: 'pixvote',
        provider_url: 'https://pixvote.example/',
        cache_age: 3600,
        url: 'https://pixvote.example/api/image/3f2b8c1e-9a4d-4e7b-8f0a-6c5d2e1b7a90?size=medium',
        width: 640,
        height: 480,
        thumbnail_url: 'https://pixvote.example/api/image/3f2b8c1e-9a4d-4e7b-8f0a-6c5d2e1b7a90?size=thumb',
        thumbnail_width: 320,
        thumbnail_height: 240,
      },
    ],
  });
