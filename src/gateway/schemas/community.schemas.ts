import { z } from 'zod';
import { UserSchema } from './auth.schemas.ts';
import { Success } from './common.schemas.ts';
import { Tag, UploadRecord, VoteValue } from './upload.schemas.ts';

export const VoteBody = z
  .object({
    // A UUID: the vote service answers 400 for one that is not (API.md Votes), 404 for an unknown one.
    uploadId: z.string({ error: 'uploadId must be a string (an upload id)' }).meta({
      format: 'uuid',
      description: "The upload's id; one that is not a UUID is 400 `invalid_request`.",
      examples: ['3f2b8c1e-9a4d-4e7b-8f0a-6c5d2e1b7a90'],
    }),
    vote: z
      .enum(['fucks', 'does_not_fuck', 'none'], { error: 'vote must be fucks, does_not_fuck or none' })
      .describe('`none` retracts the vote.')
      .meta({ examples: ['fucks'] }),
  })
  .meta({ examples: [{ uploadId: '3f2b8c1e-9a4d-4e7b-8f0a-6c5d2e1b7a90', vote: 'fucks' }] });

/**
 * A query value (a string on the wire) that must spell a positive integer: its number, `absent` when it is missing or
 * empty, or an issue naming the parameter.
 */
export function positiveIntOf<T>(name: string, v: string | undefined, ctx: z.RefinementCtx, absent: T): number | T {
  if (v === undefined || v === '') return absent;
  if (!/^\d+$/.test(v) || Number(v) < 1) {
    ctx.addIssue({ code: 'custom', message: `${name} must be an integer of at least 1 (got "${v}")` });
    return z.NEVER;
  }
  return Number(v);
}

const positiveInt = (name: string, fallback: number, example = fallback) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => positiveIntOf(name, v, ctx, fallback))
    // The query value is a string on the wire; the document describes what it must spell.
    .meta({ type: 'integer', minimum: 1, description: `Default ${fallback}.`, examples: [example] });

export const MAX_PAGE = 10_000;

const CURSOR_EXAMPLE =
  'WzEsIjA3WFB5dHZZOHY4ciIsMiwxNzk1NzcxODAwMDAwLG51bGwsMTc5NTc3MDc2NDEyMCwiM2YyYjhjMWUtOWE0ZC00ZTdi' +
  'LThmMGEtNmM1ZDJlMWI3YTkwIl0';

/** A listing's `cursor` parameter (API.md, Listing and feeds). */
export const cursorParam = z
  .string()
  .max(512, { error: 'cursor is too long: use next_cursor as it was given' })
  .optional()
  .describe(
    'The `next_cursor` of the previous page (same filters, sort and limit): the page after it, read directly ' +
      'however deep it is. An upload is never listed twice in one traversal, however votes move it. A malformed ' +
      'or foreign cursor is 400 `invalid_cursor`.',
  )
  .meta({ examples: [CURSOR_EXAMPLE] });

export const FeedQuery = z.object({
  page: positiveInt('page', 1).meta({
    description: 'Default 1. Only while `(page − 1) × limit` ≤ 10 000: deeper is 400 `page_too_deep` (use `cursor`).',
  }),
  // API.md: limit > 50 is clamped to 50 (not an error).
  limit: positiveInt('limit', 12)
    .transform((l) => Math.min(l, 50))
    .meta({ description: 'Default 12; values over 50 are clamped to 50.' }),
  sort: z
    .enum(['new', 'top', 'hot', 'best'], { error: 'sort must be new, top, hot or best' })
    .default('new')
    .describe('`best` ranks by the Wilson lower bound.')
    .meta({ examples: ['top'] }),
  type: z
    .enum(['image', 'link'], { error: 'type must be image or link' })
    .optional()
    .meta({ examples: ['image'] }),
  user: z
    .string()
    .max(64, { error: 'user is too long' })
    .optional()
    .describe('Username of the uploader.')
    .meta({ examples: ['ada_lovelace'] }),
  tag: z
    .string()
    .max(64, { error: 'tag is too long' })
    .optional()
    .describe('Tag slug.')
    .meta({ examples: ['cats'] }),
  ai: z
    .enum(['exclude', 'only'], { error: 'ai must be exclude or only' })
    .optional()
    .describe(
      'Uploads labelled "Made with AI" (a provenance marker in the file, or the owner\'s label: `ai_label` not ' +
        'null): `only` lists just them, `exclude` leaves them out.',
    )
    .meta({ examples: ['exclude'] }),
  cursor: cursorParam,
});

/** `GET /feed.atom`: the listing's filters (its first page is the feed; no page, limit or cursor). */
export const AtomFeedQuery = FeedQuery.pick({ sort: true, type: true, user: true, tag: true, ai: true });

export const RecentQuery = z.object({
  limit: positiveInt('limit', 20)
    .transform((l) => Math.min(l, 50))
    .meta({ description: 'Default 20; values over 50 are clamped to 50.' }),
});

export const TagsBody = z
  .object({
    tags: z
      .array(z.string({ error: 'tags must be strings' }), { error: 'tags must be an array of tag names' })
      .max(50, { error: 'tags lists too many names' })
      .describe(
        'Names to add; normalized as in API.md: NFKC-folded (fullwidth and compatibility forms become plain ' +
          'letters), trimmed, lowercased, inner whitespace collapsed. A name with an invisible character ' +
          '(zero-width, bidi control, BOM, soft hyphen, control) is 400 `invalid_tag`.',
      )
      .meta({ examples: [['cats', 'sleepy']] }),
  })
  .meta({ examples: [{ tags: ['cats', 'sleepy'] }] });

export const TagSuggestQuery = z.object({
  q: z
    .string()
    .max(64, { error: 'q is too long' })
    .default('')
    .describe('Prefix of the tag name.')
    .meta({ examples: ['ca'] }),
  limit: positiveInt('limit', 10)
    .transform((l) => Math.min(l, 50))
    .meta({ description: 'Default 10; values over 50 are clamped to 50.' }),
  cursor: cursorParam,
});

export const VoteResult = z.object({
  uploadId: z.uuid(),
  vote: VoteValue.nullable().describe("The caller's vote after this request; null when retracted."),
  upvotes: z.int().nonnegative(),
  downvote_count: z.int().nonnegative(),
});

export const nextCursor = z
  .string()
  .nullable()
  .describe('Pass as `cursor` (same filters, sort and limit) for the next page; null on the last page.');

export const FeedPage = z.object({
  uploads: z.array(UploadRecord),
  page: z.int().positive().describe('The page number (counted on when paging by cursor).'),
  limit: z.int().min(1).max(50),
  has_more: z.boolean(),
  next_cursor: nextCursor,
});

export const OwnUploadsQuery = z.object({
  limit: positiveInt('limit', 12)
    .transform((l) => Math.min(l, 50))
    .meta({ description: "Default 12 (as the profile's first page); values over 50 are clamped to 50." }),
  cursor: cursorParam,
});

export const OwnUploadsPage = z.object({
  uploads: z.array(UploadRecord).describe("The caller's own uploads, private included, newest first."),
  limit: z.int().min(1).max(50),
  has_more: z.boolean(),
  next_cursor: nextCursor,
});

export const RecentItems = z.object({ items: z.array(UploadRecord) });

export const ProfileStats = z.object({
  uploads: z.int().nonnegative(),
  upvotes_received: z.int().nonnegative(),
  downvotes_received: z.int().nonnegative(),
  votes_cast: z.int().nonnegative(),
});

export const Profile = z.object({
  user: UserSchema,
  stats: ProfileStats,
  uploads: z.array(UploadRecord).describe("The caller's own uploads, private included, newest first, first 12."),
  next_cursor: nextCursor.describe(
    'The rest of the own uploads: `GET /api/profile/uploads?cursor=<next_cursor>`; null when these are all.',
  ),
});

export const TagList = z.object({ tags: z.array(Tag) });
export const TagsChanged = Success.extend({ tags: z.array(Tag).describe('All tags of the upload after the change.') });
export const TagSuggestion = Tag.extend({
  uploads: z
    .int()
    .nonnegative()
    .describe('How many uploads a listing shows carry the tag (public ones; private uploads are never counted).'),
});
export const TagSuggestions = z.object({ tags: z.array(TagSuggestion), next_cursor: nextCursor });
