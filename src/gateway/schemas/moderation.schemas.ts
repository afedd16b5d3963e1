/** Requests and responses of API.md's Moderation section (the routes parse with these; the document shows them). */
import { z } from 'zod';
import { JOB_KINDS, JOB_STATUSES, MOD_ACTIONS, REPORT_REASONS } from '../../domain/moderation/moderation.types.ts';
import { UserSchema } from './auth.schemas.ts';
import { boundedText } from './common.schemas.ts';
import { cursorParam, FeedQuery, MAX_PAGE, nextCursor } from './community.schemas.ts';
import { UploadRecord } from './upload.schemas.ts';
import { VoteRingItem } from './vote-ring.schemas.ts';
import { MAX_PERSON_BOXES } from '../../domain/person-policy.ts';

const EXAMPLE_UPLOAD = '3f2b8c1e-9a4d-4e7b-8f0a-6c5d2e1b7a90';
const EXAMPLE_USER = '8c1d2e3f-4a5b-4c6d-8e7f-901234567890';
const SHA = /^[0-9a-f]{64}$/;
const PHASH = /^[0-9a-f]{16}$/;
const PDQ = /^[0-9a-f]{64}$/;

/** The longest note a report may carry (the upload page counts against it too). */
export const MAX_REPORT_NOTE = 500;

const reason = (max: number, what: string) => boundedText(what, { max, trim: true });

export const ReportBody = z
  .object({
    reason: z
      .enum(REPORT_REASONS, { error: `reason must be one of ${REPORT_REASONS.join(', ')}` })
      .meta({ examples: ['spam'] }),
    note: boundedText('note', { max: MAX_REPORT_NOTE })
      .nullable()
      .optional()
      .describe(`Optional, at most ${MAX_REPORT_NOTE} characters.`)
      .meta({ examples: ['the same advert posted every hour'] }),
  })
  .meta({ examples: [{ reason: 'spam', note: 'the same advert posted every hour' }] });

export const ReportSchema = z.object({
  id: z.uuid(),
  upload_id: z.uuid(),
  reason: z.enum(REPORT_REASONS),
  note: z.string().nullable(),
  created_at: z.iso.datetime(),
});

export const PageQuery = z.object({
  page: FeedQuery.shape.page
    .refine((p) => p <= MAX_PAGE, { error: `page must be at most ${MAX_PAGE}` })
    .meta({ description: `Default 1; at most ${MAX_PAGE}.` }),
  limit: FeedQuery.shape.limit,
});

export const QueueQuery = PageQuery.extend({
  cursor: cursorParam,
  status: z
    .enum(['open', 'closed'], { error: 'status must be open or closed' })
    .default('open')
    .describe('`open`: held, reported or person-flagged uploads; `closed`: acted on, nothing open.')
    .meta({ examples: ['open'] }),
});

export const QueueItem = z.object({
  kind: z.literal('upload'),
  upload: UploadRecord,
  reports: z.object({
    count: z.int().nonnegative(),
    // Partial: only the reasons given appear (a record over an enum would require every key).
    reasons: z.partialRecord(z.enum(REPORT_REASONS), z.int().positive()),
    notes: z.array(z.string()).max(5).describe('The latest notes, newest first.'),
    first_at: z.iso.datetime().nullable(),
    last_at: z.iso.datetime().nullable(),
    trusted: z
      .int()
      .nonnegative()
      .describe(
        'Reporters the report-trust rule counts now (REPORT_TRUST_*); only these count toward ' +
          '`REPORT_HOLD_THRESHOLD`.',
      ),
  }),
  person_flag: z.boolean(),
  human_score: z.number().min(0).max(1).nullable(),
  human_boxes: z
    .array(
      z.object({
        x: z.number().min(0).max(1),
        y: z.number().min(0).max(1),
        width: z.number().min(0).max(1),
        height: z.number().min(0).max(1),
        score: z.number().min(0).max(1),
      }),
    )
    .max(MAX_PERSON_BOXES)
    .nullable()
    .describe(
      "The person detector's best boxes (at most 5, best first) when person detection queued the upload (a person " +
        'flag, or held, e.g. in the gray zone between `HUMAN_REVIEW_THRESHOLD` and `HUMAN_THRESHOLD`): left, top, ' +
        "width and height as fractions (0–1) of the image's width and height, so they fit every variant; else null.",
    ),
});

export const QueuePage = z.object({
  items: z.array(z.discriminatedUnion('kind', [VoteRingItem, QueueItem])),
  page: z.int().positive(),
  limit: z.int().positive(),
  has_more: z.boolean(),
  next_cursor: nextCursor,
});

export const ModerationBody = z
  .object({
    action: z
      .enum(['approve', 'hold', 'remove'], { error: 'action must be approve, hold or remove' })
      .meta({ examples: ['remove'] }),
    reason: reason(500, 'reason')
      .default('')
      .meta({ examples: ['spam ring'] }),
    block: z
      .enum(['none', 'exact', 'near'], { error: 'block must be none, exact or near' })
      .default('none')
      .describe(
        '`exact` blocklists the SHA-256, `near` the SHA-256, the perceptual hash and the PDQ (when its quality is at ' +
          'least 50); images only.',
      )
      .meta({ examples: ['near'] }),
  })
  .meta({ examples: [{ action: 'remove', reason: 'spam ring', block: 'near' }] });

const BlocklistEntryIn = z
  .object({
    sha256: z
      .string()
      .transform((s) => s.toLowerCase())
      .pipe(z.string().regex(SHA, { error: 'sha256 must be 64 hexadecimal characters' }))
      .nullable()
      .optional(),
    phash: z
      .string()
      .transform((s) => s.toLowerCase())
      .pipe(z.string().regex(PHASH, { error: 'phash must be 16 hexadecimal characters' }))
      .nullable()
      .optional(),
    pdq: z
      .string({ error: 'pdq must be a string of 64 hexadecimal characters' })
      .transform((s) => s.toLowerCase())
      .pipe(z.string().regex(PDQ, { error: 'pdq must be exactly 64 hexadecimal characters (a 256-bit PDQ hash)' }))
      .nullable()
      .optional()
      .describe(
        "Meta's 256-bit PDQ hash as python-threatexchange writes it; matches an image whose PDQ (quality ≥ 50) is " +
          'within `BLOCKLIST_PDQ_DISTANCE` (31).',
      ),
    reason: reason(500, 'reason').optional(),
  })
  .refine((e) => Boolean(e.sha256 || e.phash || e.pdq), {
    error: 'each entry needs sha256, phash or pdq (or several)',
  });

export const BlocklistBody = z
  .object({
    entries: z
      .array(BlocklistEntryIn)
      .min(1, { error: 'entries must hold at least 1 entry' })
      .max(10_000, { error: 'entries holds more than 10000 entries (the limit is 10000 per request)' })
      .meta({ examples: [[{ phash: 'c3a1f0e2d4b69788', reason: 'known scam image' }]] }),
  })
  .meta({
    examples: [
      {
        entries: [
          { sha256: 'a3f5c0e1b2d4967880a1b2c3d4e5f60718293a4b5c6d7e8f9012a3b4c5d6e7f8', reason: 'spam ring' },
          { phash: 'c3a1f0e2d4b69788', reason: 'known scam image' },
          { pdq: 'f8f8f0cee0f4e0e6e4e8ccd0e0e2c2a2b2e0c8e2a6f8d8d0c8f2e4f0e8c0b0e0', reason: 'shared hash list' },
        ],
      },
    ],
  });

export const BlocklistQuery = z.object({
  dry_run: z
    .enum(['true', 'false', '1', '0'], { error: 'dry_run must be true or false' })
    .optional()
    .transform((v) => v === 'true' || v === '1')
    .describe('Count what would be added and skipped, and the stored uploads that would be held; change nothing.')
    .meta({ examples: ['true'] }),
});

export const BlocklistEntry = z.object({
  id: z.uuid(),
  sha256: z.string().regex(SHA).nullable(),
  phash: z.string().regex(PHASH).nullable(),
  pdq: z.string().regex(PDQ).nullable().describe('PDQ, 64 hex characters (256 bits); null when the entry has none.'),
  reason: z.string(),
  source: z.enum(['moderation', 'import']),
  created_at: z.iso.datetime(),
});

export const BlocklistPage = z.object({
  entries: z.array(BlocklistEntry),
  page: z.int().positive(),
  limit: z.int().positive(),
  has_more: z.boolean(),
});

export const BlocklistAdded = z.object({
  added: z.int().nonnegative(),
  skipped: z.int().nonnegative().describe('Entries already on the blocklist.'),
  matches: z.int().nonnegative().optional().describe('Dry run only: stored uploads the new entries would hold.'),
  job: z
    .object({ id: z.uuid(), status: z.enum(JOB_STATUSES) })
    .nullable()
    .optional()
    .describe(
      'The `blocklist_hold` job holding the stored uploads the new entries match (`GET /api/admin/jobs/{id}`); ' +
        'null when nothing was added, absent on a dry run.',
    ),
});

export const UsersQuery = PageQuery.extend({
  q: z
    .string()
    .max(32, { error: 'q is longer than 32 characters' })
    .optional()
    .describe('Username prefix, case-insensitive.')
    .meta({ examples: ['ada'] }),
});

const BannedUntil = z
  .union([z.iso.datetime(), z.literal('permanent')])
  .nullable()
  .describe('The end of the ban, `permanent`, or null when not banned.');

export const AdminUser = UserSchema.extend({
  email: z.string(),
  banned_until: BannedUntil,
  uploads: z.int().nonnegative().describe('Uploads not removed.'),
  reports_received: z.int().nonnegative(),
});

export const UsersPage = z.object({
  users: z.array(AdminUser),
  page: z.int().positive(),
  limit: z.int().positive(),
  has_more: z.boolean(),
});

export const BanBody = z
  .object({
    reason: reason(500, 'reason')
      .default('')
      .meta({ examples: ['spam bot'] }),
    until: z.iso
      .datetime({ error: 'until must be an ISO-8601 timestamp, or null for a permanent ban' })
      .nullable()
      .default(null)
      .meta({ examples: ['2026-12-25T00:00:00.000Z'] }),
    remove_uploads: z
      .boolean({ error: 'remove_uploads must be true or false' })
      .default(false)
      .meta({ examples: [true] }),
  })
  .meta({ examples: [{ reason: 'spam bot', until: '2026-12-25T00:00:00.000Z', remove_uploads: true }] });

export const BanResult = z.object({
  user: AdminUser,
  banned_until: z.union([z.iso.datetime(), z.literal('permanent')]),
});

export const ModlogEntry = z.object({
  id: z.uuid(),
  at: z.iso.datetime(),
  action: z.enum(MOD_ACTIONS),
  target: z.object({
    type: z.enum(['upload', 'user', 'blocklist', 'vote_ring']),
    id: z
      .uuid()
      .nullable()
      .describe(
        'Null in the public view for an upload an anonymous reader could not find in a listing now (private, held, ' +
          'removed while private, or deleted); admins see every id.',
      ),
    name: z
      .string()
      .nullable()
      .optional()
      .meta({ examples: ['spam_bot_77'] })
      .describe(
        "User and blocklist targets only: the user's name, or the first 12 hex digits of the blocklist entry's hash " +
          '(its SHA-256, else its perceptual hash), as they are now; null once the user or entry is gone.',
      ),
  }),
  reason: z.string(),
  moderator: z
    .object({ id: z.uuid(), username: z.string() })
    .nullable()
    .optional()
    .describe('Admins only; null for automatic actions.'),
});

export const ModlogPage = z.object({
  entries: z.array(ModlogEntry),
  page: z.int().positive(),
  limit: z.int().positive(),
  has_more: z.boolean(),
  next_cursor: nextCursor,
});

/** The modlog pages by number (its first 10 000 lines) or by `cursor`. */
export const ModlogQuery = z.object({
  page: FeedQuery.shape.page,
  limit: FeedQuery.shape.limit,
  cursor: cursorParam,
});

export const JobsQuery = PageQuery.extend({
  status: z
    .enum(JOB_STATUSES, { error: 'status must be queued, running, done or failed' })
    .optional()
    .describe('Only jobs in this state; all of them without it.')
    .meta({ examples: ['running'] }),
});

export const Job = z.object({
  id: z.uuid(),
  kind: z
    .enum(JOB_KINDS)
    .describe('`ban_removal`: a ban with `remove_uploads`; `blocklist_hold`: holding the uploads new entries match.'),
  status: z
    .enum(JOB_STATUSES)
    .describe('`queued` until a process first claims it; `running` until it ends (claimed again after a crash).'),
  progress: z
    .object({ done: z.int().nonnegative(), total: z.int().nonnegative() })
    .describe('`ban_removal`: uploads removed of those to remove; `blocklist_hold`: entries handled of those added.'),
  target: z.object({
    type: z.enum(['user', 'blocklist']),
    id: z.uuid().nullable().describe('The banned user; null for a blocklist hold.'),
  }),
  reason: z.string(),
  moderator: z.object({ id: z.uuid(), username: z.string() }).nullable(),
  error: z.string().nullable().describe("The last failed run's message (the job is retried, `failed` after five)."),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});

export const JobsPage = z.object({
  jobs: z.array(Job),
  page: z.int().positive(),
  limit: z.int().positive(),
  has_more: z.boolean(),
});

export const EXAMPLES = { upload: EXAMPLE_UPLOAD, user: EXAMPLE_USER };
