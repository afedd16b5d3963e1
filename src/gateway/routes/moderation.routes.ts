/**
 * API.md Moderation: reports (any user), the queue, actions, the blocklist and bans (admins, the moderators), and
 * the public modlog. Every admin route answers 401 without a user and 403 `forbidden` to one who is not an admin.
 */
import { z } from 'zod';
import { IdParam, Success } from '../schemas/common.schemas.ts';
import {
  BanBody,
  BanResult,
  BlocklistAdded,
  BlocklistBody,
  BlocklistPage,
  BlocklistQuery,
  EXAMPLES,
  Job,
  JobsPage,
  JobsQuery,
  ModerationBody,
  ModlogPage,
  ModlogQuery,
  PageQuery,
  QueuePage,
  QueueQuery,
  ReportBody,
  ReportSchema,
  UsersPage,
  UsersQuery,
} from '../schemas/moderation.schemas.ts';
import { UploadRecord } from '../schemas/upload.schemas.ts';
import { VoteRingBody, VoteRingItem } from '../schemas/vote-ring.schemas.ts';
import type { ModerationService } from '../../domain/moderation/moderation.service.ts';
import { queuePage } from '../../domain/moderation/queue.ts';
import type { VoteRingService } from '../../domain/moderation/vote-rings.service.ts';
import { routes } from './route.ts';

const ENTRY_ID = '5e0c7a14-2b9d-4f63-a8e1-7d4c9b2f0a36';
const ADMIN_ID = '1b9e4c2d-7f3a-4d8e-9c5b-2a6f8e0d4c17';
/** A modlog `next_cursor` (limit 12), as the examples show it. */
const MODLOG_CURSOR =
  'WzEsInU5ZWRKc2N3X0F0YiIsMiwxNzk1NTk3MjAwMDAwLG51bGwsMTc5NTU5MzgyMTAwMCwiNmEwZjNkMmUtMWM0Yi00ZThhLTlmN2Qt' +
  'M2I1YzJlMWEwZDk4Il0';
const REPORT_ID = 'b7d2e9a4-6c1f-4e8b-9a3d-5f0c2e7b1d48';

const BlocklistIdParam = z.object({
  id: z
    .string()
    .describe('The blocklist entry id (a UUID).')
    .meta({ examples: [ENTRY_ID] }),
});

const VoteRingIdParam = z.object({
  id: z
    .string()
    .describe('The vote-ring item id (a UUID), as the moderation queue lists it.')
    .meta({ examples: ['6d1f3a8e-2c4b-4e9a-b7d5-0a8c3e6f1b29'] }),
});

const UserIdParam = z.object({
  id: z
    .string()
    .describe("The user's id (a UUID), as `GET /api/admin/users` lists it.")
    .meta({ examples: [EXAMPLES.user] }),
});

/** An image upload as the queue and the moderation action show it (a removed one has lost its votes and tags). */
const upload = (moderation: 'visible' | 'held' | 'removed') => ({
  id: EXAMPLES.upload,
  user_id: EXAMPLES.user,
  username: 'deal_finder',
  filename: `${EXAMPLES.upload}.webp`,
  original_name: 'watches-90-percent-off.png',
  description: 'Luxury watches 90% off, link in my profile',
  upload_type: 'image',
  external_url: null,
  source_url: null,
  upvotes: 0,
  downvote_count: moderation === 'removed' ? 0 : 4,
  is_private: false,
  tags: moderation === 'removed' ? [] : [{ id: '0d4f7b2e-8a1c-4e5d-9b3f-6c2a7e1d8f50', name: 'deals', slug: 'deals' }],
  created_at: '2026-11-24T09:12:03.000Z',
  // The tombstone keeps its dimensions; its image URLs answer 410 `removed`.
  image: {
    width: 1200,
    height: 800,
    mime: 'image/webp',
    animated: false,
    url: `/api/image/${EXAMPLES.upload}`,
    thumbnail_url: `/api/image/${EXAMPLES.upload}?size=thumb`,
    thumbhash: '1QcSHQRnh493V4dIh4eXh1h4kJUI',
    human_score: 0.03,
  },
  embed: null,
  moderation,
  provenance: { ai_generated: null, source_type: null, c2pa: null },
  ai_label: null,
});

const adminUser = (bannedUntil: string | null) => ({
  id: EXAMPLES.user,
  username: 'deal_finder',
  email: 'deals@example.net',
  role: 'user',
  created_at: '2026-11-20T17:40:11.000Z',
  banned_until: bannedUntil,
  uploads: 14,
  reports_received: 9,
});

const report = (reason: string, note: string | null) => ({
  id: REPORT_ID,
  upload_id: EXAMPLES.upload,
  reason,
  note,
  created_at: '2026-11-25T08:03:41.000Z',
});

const modlogEntries = [
  {
    id: '9a3e6c1b-4d7f-4b2a-8e5c-0f1d3b6a9c24',
    at: '2026-11-25T10:15:00.000Z',
    action: 'remove',
    target: { type: 'upload', id: EXAMPLES.upload },
    reason: 'spam ring',
  },
  {
    id: 'e4b8d2f6-1a9c-4e3b-b7d5-8c0f2a6e4d19',
    at: '2026-11-25T08:04:02.000Z',
    action: 'auto_hold',
    target: { type: 'upload', id: EXAMPLES.upload },
    reason: 'reported by 4 users, 3 of them trusted',
  },
  {
    id: '2f6b9d4e-8a1c-4e7f-b3d5-6c0e9a2f1b48',
    at: '2026-11-25T07:55:00.000Z',
    action: 'ban',
    target: { type: 'user', id: EXAMPLES.user, name: 'spam_bot_77' },
    reason: 'spam links',
  },
];
/** A line on a private upload: the public view does not name it. */
const PRIVATE_UPLOAD = 'b7e2c9d4-5f1a-4c8e-9d3b-2a6f0e8c1b57';
const privateHold = {
  id: '5c7a1e9d-3b2f-4d8a-a6e4-1f0b9c2d7e38',
  at: '2026-11-25T07:30:00.000Z',
  action: 'hold',
  reason: 'looking into it',
};

const ADMIN_ONLY = 'Admins only.';

const JOB_ID = '9c3e5a71-4d2b-4f86-b1e0-6a8d2c4f7e19';

const JobIdParam = z.object({
  id: z
    .string()
    .describe('The job id (a UUID), as `GET /api/admin/jobs` lists it.')
    .meta({ examples: [JOB_ID] }),
});

const banRemovalJob = (status: 'running' | 'done', done: number) => ({
  id: JOB_ID,
  kind: 'ban_removal',
  status,
  progress: { done, total: 14 },
  target: { type: 'user', id: EXAMPLES.user },
  reason: 'account banned: spam bot',
  moderator: { id: ADMIN_ID, username: 'mod_ada' },
  error: null,
  created_at: '2026-11-26T09:14:02.000Z',
  updated_at: status === 'done' ? '2026-11-26T09:14:03.000Z' : '2026-11-26T09:14:02.600Z',
});

const RING_ID = '6d1f3a8e-2c4b-4e9a-b7d5-0a8c3e6f1b29';

/** A ring of three young accounts that upvoted every upload of one author within minutes. */
const voteRingItem = (status: 'open' | 'closed') => ({
  kind: 'vote_ring',
  id: RING_ID,
  status,
  accounts: [
    'c3e1a9f2-5b7d-4e8a-9c0f-1d2b3a4c5e6f',
    'd4f2b0a3-6c8e-4f9b-8d1a-2e3c4b5d6f70',
    'e5a3c1b4-7d9f-4a0c-9e2b-3f4d5c6e7a81',
  ].map((id, i) => ({ id, username: `fresh_fan_${i + 1}`, role: 'user', created_at: '2026-11-25T07:58:00.000Z' })),
  evidence: {
    target: { type: 'author', id: EXAMPLES.user },
    direction: 'up',
    votes: 12,
    target_share: 0.857,
    focus: 1,
    similarity: 1,
    burst_share: 1,
    burst: { from: '2026-11-25T08:04:10.000Z', to: '2026-11-25T09:04:10.000Z' },
    young_accounts: 3,
    median_account_age_hours: 0.1,
    score: 5.357,
    surge: null,
    window: { from: '2026-11-11T10:00:00.000Z', to: '2026-11-25T10:00:00.000Z' },
  },
  created_at: '2026-11-25T10:00:00.000Z',
  closed_at: status === 'open' ? null : '2026-11-25T10:20:00.000Z',
  closed_by: status === 'open' ? null : { id: ADMIN_ID, username: 'mod_ada' },
  action: status === 'open' ? null : 'void',
  reason: status === 'open' ? null : 'ring boosting one author',
  voided_votes: status === 'open' ? null : 12,
  restored_at: null,
  restored_by: null,
  restored_votes: null,
  skipped_votes: null,
  restorable_until: status === 'open' ? null : '2026-12-25T10:20:00.000Z',
});

export const moderationRoutes = routes<{ moderation: ModerationService; voteRings: VoteRingService }>((route) => [
  route({
    method: 'post',
    path: '/api/upload/:id/report',
    operationId: 'reportUpload',
    tag: 'moderation',
    summary: 'Report an upload to the moderators',
    description:
      'One report per user per upload: reporting it again answers 200 with the first report and changes nothing. ' +
      'When `REPORT_HOLD_THRESHOLD` distinct users have open reports on an upload it is held at once ' +
      '(modlog `auto_hold`). Only reporters that pass the report-trust rule count toward that threshold ' +
      '(`REPORT_TRUST_MIN_AGE`, and `REPORT_TRUST_MIN_UPLOADS` accepted uploads or `REPORT_TRUST_MIN_VOTES` votes; ' +
      'default: 24h, 1 or 10); other reports still reach the queue. Once a moderator approved an upload, reports ' +
      'no longer hold it by themselves: they reach the queue. `REPORT_MIN_ACCOUNT_AGE` refuses younger accounts ' +
      '(403 `account_too_new`). An upload the caller cannot see (unknown, or held and not theirs) is 404; ' +
      'a removed one is 410 `removed`. Limit: `RATE_LIMIT_REPORT` per user.',
    auth: 'required',
    scope: 'manage',
    limit: 'report',
    params: IdParam,
    body: { json: ReportBody },
    responses: {
      201: {
        description: 'Reported.',
        json: ReportSchema,
        examples: {
          report: {
            summary: 'A new report',
            value: report('spam', 'the same advert posted every hour'),
          },
        },
      },
      200: {
        description: 'The caller had already reported this upload: their first report, unchanged.',
        json: ReportSchema,
        examples: { again: { summary: 'The first report, without a note', value: report('spam', null) } },
      },
    },
    errors: ['invalid_request', 'account_too_new', 'not_found', 'removed'],
    handler:
      (deps) =>
      async (ctx, { user, params, body }) => {
        const { created, report } = await deps.moderation.report(user, params.id, {
          reason: body.reason,
          note: body.note ?? null,
        });
        ctx.status = created ? 201 : 200;
        ctx.body = report;
      },
  }),
  route({
    method: 'get',
    path: '/api/admin/moderation',
    operationId: 'moderationQueue',
    tag: 'moderation',
    summary: 'The moderation queue',
    description:
      `${ADMIN_ONLY} Two kinds of item. \`vote_ring\` items (groups of accounts the vote-ring detector found ` +
      'voting in lockstep, with the evidence; act on them with `POST /api/admin/vote-rings/{id}`) come first: ' +
      'open ones oldest first, closed ones most recently closed first. Then `upload` items: `open`: uploads with ' +
      'open reports, held uploads, and uploads flagged by person detection (`HUMAN_POLICY=flag` or `hold`, score ' +
      'at or above the threshold); held first, then most reports, then oldest. `closed`: uploads acted on, with ' +
      'nothing open. Pages on with `cursor=<next_cursor>` (same `status` and `limit`): acting on the items of a ' +
      'page skips nothing on the next, as number pages would.',
    auth: 'required',
    scope: 'moderate',
    limit: 'general',
    query: QueueQuery,
    responses: {
      200: {
        description: 'One page of the queue.',
        json: QueuePage,
        cacheControl: ['private, no-store'],
        examples: {
          open: {
            summary: 'An upload held by three trusted reporters (of four)',
            value: {
              items: [
                voteRingItem('open'),
                {
                  kind: 'upload',
                  upload: upload('held'),
                  reports: {
                    count: 4,
                    reasons: { spam: 3, other: 1 },
                    notes: ['the same advert posted every hour', 'scam shop'],
                    first_at: '2026-11-24T21:30:12.000Z',
                    last_at: '2026-11-25T08:03:41.000Z',
                    trusted: 3,
                  },
                  person_flag: false,
                  human_score: 0.03,
                  human_boxes: null,
                },
              ],
              page: 1,
              limit: 12,
              has_more: false,
              next_cursor: null,
            },
          },
        },
      },
    },
    errors: ['invalid_request', 'invalid_cursor', 'page_too_deep', 'forbidden'],
    admin: true,
    handler:
      (deps) =>
      async (ctx, { query: q }) => {
        const page = await queuePage(
          q.status,
          q,
          {
            cursors: deps.moderation.cursors,
            rings: deps.voteRings,
            uploads: (status, start, limit) => deps.moderation.queueItems(status, start, limit),
          },
          new Date(),
        );
        ctx.set('Cache-Control', 'private, no-store');
        ctx.body = { ...page, limit: q.limit };
      },
  }),
  route({
    method: 'post',
    path: '/api/admin/uploads/:id/moderation',
    operationId: 'moderateUpload',
    tag: 'moderation',
    summary: 'Approve, hold or remove an upload',
    description:
      `${ADMIN_ONLY} \`approve\`: visible again, its reports and person flag closed. \`hold\`: out of every listing; ` +
      'only its owner and admins can open it. `remove`: its image files, votes and tag links go, the row stays as ' +
      'a tombstone (410 `removed` to everyone but admins), its reports are closed. ' +
      '`block` (images only, else 400): `exact` blocklists its SHA-256, `near` its SHA-256, perceptual hash and ' +
      'PDQ (when its quality is at least 50); ' +
      'new entries also hold every stored upload they match. Every action is written to the modlog.',
    auth: 'required',
    scope: 'moderate',
    limit: 'general',
    params: IdParam,
    body: { json: ModerationBody },
    responses: {
      200: {
        description: 'The upload record after the action.',
        json: UploadRecord,
        examples: {
          removed: { summary: 'Removed (and blocked): the tombstone admins read', value: upload('removed') },
        },
      },
    },
    errors: ['invalid_request', 'forbidden', 'not_found'],
    admin: true,
    handler:
      (deps) =>
      async (ctx, { user, params, body }) => {
        ctx.body = await deps.moderation.act(user, params.id, body);
      },
  }),
  route({
    method: 'post',
    path: '/api/admin/vote-rings/:id',
    operationId: 'actOnVoteRing',
    tag: 'moderation',
    summary: 'Void the votes of a vote ring, dismiss it, or restore a void',
    description:
      `${ADMIN_ONLY} \`void\`: every vote of the ring's accounts leaves the votes (kept aside, flagged with the ` +
      "item) and each upload's counters move by exactly those votes, in one transaction (the counts stay equal to " +
      'the votes), and the item is closed. `dismiss`: the item is closed and the same group on the same target is ' +
      'not queued again. A void or dismiss of an item closed already answers 409 `conflict` and changes nothing. ' +
      '`restore` (a voided item, within `VOTE_RING_RESTORE_DAYS` of the void): the kept votes come back and the ' +
      'counters move by exactly them; a voter who voted on the same upload since keeps that vote, and votes on ' +
      'removed or deleted uploads are skipped (`skipped_votes`); 409 `conflict` when the item was not voided, was ' +
      'restored already, or was voided longer ago than the limit (the message names it). Void and restore each ' +
      "write one modlog line `void_votes` (target the item; a restore's reason says it is one); every action is " +
      'counted in the metrics (`pixvote_vote_ring_actions_total`).',
    auth: 'required',
    scope: 'moderate',
    limit: 'general',
    params: VoteRingIdParam,
    body: { json: VoteRingBody },
    responses: {
      200: {
        description: 'The item, closed.',
        json: VoteRingItem,
        examples: { voided: { summary: 'Voided: 12 votes went', value: voteRingItem('closed') } },
      },
    },
    errors: ['invalid_request', 'forbidden', 'not_found', 'conflict'],
    admin: true,
    handler:
      (deps) =>
      async (ctx, { user, params, body }) => {
        ctx.body = await deps.voteRings.act(user, params.id, body);
      },
  }),
  route({
    method: 'get',
    path: '/api/admin/blocklist',
    operationId: 'listBlocklist',
    tag: 'moderation',
    summary: 'The blocklist',
    description: `${ADMIN_ONLY} Newest first.`,
    auth: 'required',
    scope: 'moderate',
    limit: 'general',
    query: PageQuery,
    responses: {
      200: {
        description: 'One page of entries.',
        json: BlocklistPage,
        cacheControl: ['private, no-store'],
        examples: {
          page: {
            summary: 'An entry from a removal and one imported',
            value: {
              entries: [
                {
                  id: ENTRY_ID,
                  sha256: 'a3f5c0e1b2d4967880a1b2c3d4e5f60718293a4b5c6d7e8f9012a3b4c5d6e7f8',
                  phash: 'c3a1f0e2d4b69788',
                  pdq: 'f8f8f0cee0f4e0e6e4e8ccd0e0e2c2a2b2e0c8e2a6f8d8d0c8f2e4f0e8c0b0e0',
                  reason: 'spam ring',
                  source: 'moderation',
                  created_at: '2026-11-25T10:15:00.000Z',
                },
                {
                  id: '2c7f1e9b-5a3d-4c8e-b6f2-9d0a4e8c1b73',
                  sha256: null,
                  phash: 'f0e1d2c3b4a59687',
                  pdq: null,
                  reason: 'known scam image',
                  source: 'import',
                  created_at: '2026-11-22T12:00:00.000Z',
                },
              ],
              page: 1,
              limit: 12,
              has_more: false,
            },
          },
        },
      },
    },
    errors: ['invalid_request', 'forbidden'],
    admin: true,
    handler:
      (deps) =>
      async (ctx, { query: q }) => {
        const page = await deps.moderation.blocklist(q);
        ctx.set('Cache-Control', 'private, no-store');
        ctx.body = { entries: page.entries, page: q.page, limit: q.limit, has_more: page.has_more };
      },
  }),
  route({
    method: 'post',
    path: '/api/admin/blocklist',
    operationId: 'addToBlocklist',
    tag: 'moderation',
    summary: 'Add entries to the blocklist (an import)',
    description:
      `${ADMIN_ONLY} 1 to 10 000 entries, each with a SHA-256, a perceptual hash, a PDQ or several; an entry ` +
      'already there is skipped. An image upload whose SHA-256 is blocklisted, whose perceptual hash is within ' +
      '`BLOCKLIST_DISTANCE` of a blocklisted one, or whose PDQ (quality ≥ 50) is within `BLOCKLIST_PDQ_DISTANCE` ' +
      '(31) of a blocklisted one, is then refused with 400 `blocked_content`. A CSV file in the shape ' +
      'python-threatexchange and Hasher-Matcher-Actioner exchange is imported by the CLI (`pixvote mod blocklist ' +
      'import file.csv`), which sends it here as these entries. New entries also hold ' +
      'every stored upload they match (modlog `auto_hold`), in the background. With `dry_run=true` nothing ' +
      'changes: the answer counts what would be added and skipped and the stored uploads that would be held.',
    auth: 'required',
    scope: 'moderate',
    limit: 'general',
    query: BlocklistQuery,
    body: { json: BlocklistBody },
    responses: {
      200: {
        description: 'What was added and skipped (with `dry_run`: what would be, and the matches).',
        json: BlocklistAdded,
        examples: {
          added: { summary: 'Added', value: { added: 2, skipped: 0 } },
          dryRun: { summary: 'With dry_run=true', value: { added: 1, skipped: 1, matches: 3 } },
        },
      },
    },
    errors: ['invalid_request', 'forbidden'],
    admin: true,
    handler:
      (deps) =>
      async (ctx, { user, query, body }) => {
        ctx.body = await deps.moderation.addToBlocklist(
          user,
          body.entries.map((e) => ({
            sha256: e.sha256 ?? null,
            phash: e.phash ?? null,
            pdq: e.pdq ?? null,
            reason: e.reason ?? '',
          })),
          { dryRun: query.dry_run },
        );
      },
  }),
  route({
    method: 'delete',
    path: '/api/admin/blocklist/:id',
    operationId: 'removeFromBlocklist',
    tag: 'moderation',
    summary: 'Remove a blocklist entry',
    description:
      `${ADMIN_ONLY} The uploads it held stay held (approve them one by one). ` + 'Written to the modlog (`unblock`).',
    auth: 'required',
    scope: 'moderate',
    limit: 'general',
    params: BlocklistIdParam,
    responses: {
      200: {
        description: 'Removed.',
        json: Success,
        examples: { removed: { summary: 'Removed', value: { success: true } } },
      },
    },
    errors: ['forbidden', 'not_found'],
    admin: true,
    handler:
      (deps) =>
      async (ctx, { user, params }) => {
        ctx.body = await deps.moderation.removeFromBlocklist(user, params.id);
      },
  }),
  route({
    method: 'get',
    path: '/api/admin/users',
    operationId: 'listUsers',
    tag: 'moderation',
    summary: 'Users, with their bans, uploads and reports received',
    description: `${ADMIN_ONLY} By username prefix (\`q\`, case-insensitive), or all; in username order.`,
    auth: 'required',
    scope: 'moderate',
    limit: 'general',
    query: UsersQuery,
    responses: {
      200: {
        description: 'One page of users.',
        json: UsersPage,
        cacheControl: ['private, no-store'],
        examples: {
          page: {
            summary: 'A user banned until Christmas',
            value: { users: [adminUser('2026-12-25T00:00:00.000Z')], page: 1, limit: 12, has_more: false },
          },
        },
      },
    },
    errors: ['invalid_request', 'forbidden'],
    admin: true,
    handler:
      (deps) =>
      async (ctx, { query: q }) => {
        const page = await deps.moderation.users(q.q?.trim() || null, q);
        ctx.set('Cache-Control', 'private, no-store');
        ctx.body = { users: page.users, page: q.page, limit: q.limit, has_more: page.has_more };
      },
  }),
  route({
    method: 'post',
    path: '/api/admin/users/:id/ban',
    operationId: 'banUser',
    tag: 'moderation',
    summary: 'Ban a user',
    description:
      `${ADMIN_ONLY} \`until\` null: permanent. From the next request on, in every process, every request the user ` +
      'authenticates (JWT, API token or cookie) and every login answers 403 `banned`. `remove_uploads` removes each ' +
      'of their uploads (without blocklisting them), including any still in flight when the ban is made: that is a ' +
      'durable job (`ban_removal`, see `GET /api/admin/jobs`) queued with the ban, which survives restarts; the ' +
      'answer does not wait for it. Admins cannot be banned, and `until` must be in the future (400).',
    auth: 'required',
    scope: 'moderate',
    limit: 'general',
    params: UserIdParam,
    body: { json: BanBody },
    responses: {
      200: {
        description: 'The user and the end of the ban.',
        json: BanResult,
        examples: {
          until: {
            summary: 'Banned until a date',
            value: { user: adminUser('2026-12-25T00:00:00.000Z'), banned_until: '2026-12-25T00:00:00.000Z' },
          },
          permanent: {
            summary: 'Banned for good',
            value: { user: adminUser('permanent'), banned_until: 'permanent' },
          },
        },
      },
    },
    errors: ['invalid_request', 'forbidden', 'not_found'],
    admin: true,
    handler:
      (deps) =>
      async (ctx, { user, params, body }) => {
        ctx.body = await deps.moderation.ban(user, params.id, {
          reason: body.reason,
          until: body.until ? new Date(body.until) : null,
          removeUploads: body.remove_uploads,
        });
      },
  }),
  route({
    method: 'delete',
    path: '/api/admin/users/:id/ban',
    operationId: 'unbanUser',
    tag: 'moderation',
    summary: 'Lift a ban',
    description: `${ADMIN_ONLY} Uploads removed with the ban stay removed. Written to the modlog (\`unban\`).`,
    auth: 'required',
    scope: 'moderate',
    limit: 'general',
    params: UserIdParam,
    responses: {
      200: {
        description: 'Lifted.',
        json: Success,
        examples: { lifted: { summary: 'Lifted', value: { success: true } } },
      },
    },
    errors: ['forbidden', 'not_found'],
    admin: true,
    handler:
      (deps) =>
      async (ctx, { user, params }) => {
        ctx.body = await deps.moderation.unban(user, params.id);
      },
  }),
  route({
    method: 'get',
    path: '/api/admin/jobs',
    operationId: 'listJobs',
    tag: 'moderation',
    summary: 'Durable moderation jobs and their progress',
    description:
      `${ADMIN_ONLY} Newest first. A ban with \`remove_uploads\` queues a \`ban_removal\` job; every blocklist ` +
      'addition a `blocklist_hold` job. Any process runs them; one killed mid-job leaves it to be claimed again, and ' +
      'no upload is removed twice.',
    auth: 'required',
    scope: 'moderate',
    limit: 'general',
    query: JobsQuery,
    responses: {
      200: {
        description: 'One page of jobs.',
        json: JobsPage,
        cacheControl: ['private, no-store'],
        examples: {
          running: {
            summary: "A ban's removal under way",
            value: { jobs: [banRemovalJob('running', 6)], page: 1, limit: 12, has_more: false },
          },
        },
      },
    },
    errors: ['invalid_request', 'forbidden'],
    admin: true,
    handler:
      (deps) =>
      async (ctx, { query: q }) => {
        const page = await deps.moderation.jobs(q.status ?? null, q);
        ctx.set('Cache-Control', 'private, no-store');
        ctx.body = { jobs: page.jobs, page: q.page, limit: q.limit, has_more: page.has_more };
      },
  }),
  route({
    method: 'get',
    path: '/api/admin/jobs/:id',
    operationId: 'getJob',
    tag: 'moderation',
    summary: 'One moderation job',
    description: `${ADMIN_ONLY} Its state and progress, as \`GET /api/admin/jobs\` lists it.`,
    auth: 'required',
    scope: 'moderate',
    limit: 'general',
    params: JobIdParam,
    responses: {
      200: {
        description: 'The job.',
        json: Job,
        cacheControl: ['private, no-store'],
        examples: { done: { summary: 'A finished removal', value: banRemovalJob('done', 14) } },
      },
    },
    errors: ['forbidden', 'not_found'],
    admin: true,
    handler:
      (deps) =>
      async (ctx, { params }) => {
        ctx.set('Cache-Control', 'private, no-store');
        ctx.body = await deps.moderation.job(params.id);
      },
  }),
  route({
    method: 'get',
    path: '/api/modlog',
    operationId: 'modlog',
    tag: 'moderation',
    summary: 'The public moderation log',
    description:
      'Every moderation action, automatic ones included, newest first. Append-only: no entry is ever changed or ' +
      'deleted. Public without the moderator; admins also see `moderator` (null for automatic actions). The ' +
      'public view never names an upload an anonymous reader could not find in a listing now (private, held, ' +
      'removed while private, or deleted): its `target.id` is null; admins see every id.',
    auth: 'optional',
    scope: 'moderate',
    limit: 'general',
    query: ModlogQuery,
    responses: {
      200: {
        description: 'One page of the log.',
        json: ModlogPage,
        cacheControl: ['public, no-cache', 'private, no-cache'],
        headers: ['Vary'],
        examples: {
          public: {
            summary: 'As everyone sees it',
            value: {
              entries: [...modlogEntries, { ...privateHold, target: { type: 'upload', id: null } }],
              page: 1,
              limit: 12,
              has_more: true,
              next_cursor: MODLOG_CURSOR,
            },
          },
          admin: {
            summary: 'As an admin sees it',
            value: {
              entries: [
                { ...modlogEntries[0], moderator: { id: ADMIN_ID, username: 'mod_grace' } },
                { ...modlogEntries[1], moderator: null },
                { ...modlogEntries[2], moderator: { id: ADMIN_ID, username: 'mod_grace' } },
                {
                  ...privateHold,
                  target: { type: 'upload', id: PRIVATE_UPLOAD },
                  moderator: { id: ADMIN_ID, username: 'mod_grace' },
                },
              ],
              page: 1,
              limit: 12,
              has_more: true,
              next_cursor: MODLOG_CURSOR,
            },
          },
        },
      },
    },
    errors: ['invalid_request', 'invalid_cursor', 'page_too_deep'],
    handler:
      (deps) =>
      async (ctx, { user, query: q }) => {
        const page = await deps.moderation.modlog(user, q);
        // Admins see who acted: not for shared caches.
        ctx.set('Cache-Control', user ? 'private, no-cache' : 'public, no-cache');
        ctx.set('Vary', 'Authorization, Cookie');
        ctx.body = {
          entries: page.entries,
          page: page.page,
          limit: q.limit,
          has_more: page.has_more,
          next_cursor: page.next_cursor,
        };
      },
  }),
]);
