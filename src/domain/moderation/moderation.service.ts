/**
 * Moderation (API.md, Moderation): reports with the automatic hold, the queue, a moderator's actions on an
 * upload (with the blocklist), bans, the blocklist and the public modlog. Every state change invalidates the feed
 * caches like any other write; stored files a removal released go after the commit (journalled: the media sweep
 * retries a failure).
 */
import { checkPageDepth, Cursors, listingId, type ListPosition, type PageStart } from '../feeds/cursor.ts';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { errors } from '../errors.ts';
import type { Clock } from '../clock.ts';
import { isUuid } from '../ids.ts';
import type { Principal } from '../users.ts';
import type { UploadStore } from '../uploads/ports.ts';
import type { PersonBox } from '../person-policy.ts';
import type { UploadRecord, UploadView } from '../uploads/upload.types.ts';
import { toUploadView } from '../uploads/upload-view.ts';
import { assertOldEnough } from '../account-age.ts';
import { assertReachable } from './access.ts';
import { DEFAULT_REPORT_TRUST, type ReportTrustRule } from './report-trust.ts';
import type { BlocklistStore, JobStore, ModerationStore } from './ports.ts';
import {
  BAN_PERMANENT,
  type AdminUserRecord,
  type BlockKind,
  type BlocklistEntry,
  type BlocklistEntryView,
  type JobRecord,
  type JobStatus,
  type ModAction,
  type ModlogLine,
  type Moderator,
  type NewBlocklistEntry,
  type ReportReason,
  type ReportView,
  type UploadAction,
  publiclyNamed,
} from './moderation.types.ts';

export interface ModerationPolicy {
  /** Distinct trusted reporters that hold an upload; 0 turns it off. */
  reportHoldThreshold: number;
  /** Which reporters count toward that threshold (REPORT_TRUST_*); API.md's default when not given. */
  reportTrust?: ReportTrustRule;
  /** REPORT_MIN_ACCOUNT_AGE in seconds: younger accounts cannot report (0: no rule). */
  reportMinAccountAgeSeconds?: number;
  blocklistDistance: number;
  /** BLOCKLIST_PDQ_DISTANCE (default 31). */
  blocklistPdqDistance?: number;
  /** MODERATION_JOB_PAUSE_MS: a pause between a job's steps, to spread its writes (0 or unset: none). */
  jobPauseMs?: number;
  /** MODERATION_JOB_LEASE_MS: a claimed job's lease (unset: JOB_LEASE_MS). */
  jobLeaseMs?: number;
}

/** What moderation reports to the outside (metrics), and the feeds' invalidation. */
export interface ModerationEvents {
  onChanged?(): Promise<void>;
  reportReceived?(): void;
  action?(kind: ModAction, n?: number): void;
  /** The blocklist has new entries: the job that holds their matches should run now. */
  blocklistGrew?(): void;
  /** A durable job was queued here (a ban's removal): the job runner should look now. */
  jobQueued?(): void;
}

/** `GET /api/admin/jobs`: a durable moderation job and its progress. */
export interface JobView {
  id: string;
  kind: JobRecord['kind'];
  status: JobStatus;
  progress: { done: number; total: number };
  target: { type: 'user' | 'blocklist'; id: string | null };
  reason: string;
  moderator: { id: string; username: string } | null;
  error: string | null;
  created_at: string;
  updated_at: string;
}

/** Uploads a ban's removal job removes per step (each its own transaction), between renewals of its lease. */
export const JOB_BATCH = 20;
/**
 * A claimed job's lease by default (MODERATION_JOB_LEASE_MS): renewed at every step; a process killed mid-job leaves
 * it to others once it expires.
 */
export const JOB_LEASE_MS = 10_000;
/** Failed runs (errors, not crashes) after which a job is `failed`. */
export const JOB_MAX_ATTEMPTS = 5;

export interface QueueItemView {
  kind: 'upload';
  upload: UploadView;
  reports: {
    count: number;
    reasons: Partial<Record<ReportReason, number>>;
    notes: string[];
    first_at: string | null;
    last_at: string | null;
    /** Reporters the report-trust rule counts now. */
    trusted: number;
  };
  person_flag: boolean;
  human_score: number | null;
  /** The detector's best boxes (fractions of the image) when person detection queued it; else null. */
  human_boxes: PersonBox[] | null;
}

export interface ModlogEntryView {
  id: string;
  at: string;
  action: ModAction;
  /** id null: an upload the public view may not name (API.md Modlog); admins see every id. */
  target: { type: 'upload' | 'user' | 'blocklist' | 'vote_ring'; id: string | null; name?: string | null };
  reason: string;
  moderator?: { id: string; username: string } | null;
}

export interface AdminUserView {
  id: string;
  username: string;
  email: string;
  role: 'user' | 'admin';
  created_at: string;
  banned_until: string | null;
  uploads: number;
  reports_received: number;
}

/** A page of a listing: one more row is asked for, to say whether there are more. */
export interface Page {
  page: number;
  limit: number;
}

const moderatorOf = (p: Principal): Moderator => ({ id: p.userId, username: p.username });

export function banEndView(until: Date | null, now: Date): string | null {
  if (!until || until.getTime() <= now.getTime()) return null;
  return until.getTime() >= BAN_PERMANENT.getTime() ? 'permanent' : until.toISOString();
}

/**
 * Blocklist entries per step of the holding job. A step with many perceptual hashes scans every stored hash once,
 * so an import of 10k entries is one scan (~10 s at 1M uploads), not twenty (bench/README.md, Blocklist).
 */
export const HOLD_BATCH = 10_000;

export class ModerationService {
  readonly #store: ModerationStore;
  readonly #blocklist: BlocklistStore;
  readonly #uploads: UploadStore;
  readonly #clock: Clock;
  readonly #policy: ModerationPolicy;
  readonly #events: ModerationEvents;
  readonly #releaseMedia: (mediaKey: string) => Promise<unknown>;
  readonly #jobs: JobStore;
  /** Signs and checks the modlog's and the queue's `next_cursor` (main.ts: keyed by the server's secret). */
  readonly cursors: Cursors;
  /** This process's name on the leases it takes. */
  readonly #runner = `runner-${randomUUID()}`;

  constructor(deps: {
    store: ModerationStore;
    blocklist: BlocklistStore;
    jobs: JobStore;
    uploads: UploadStore;
    clock: Clock;
    policy: ModerationPolicy;
    events?: ModerationEvents;
    /** Removes stored files no row references any more (under their lock; journalled). */
    releaseMedia: (mediaKey: string) => Promise<unknown>;
    cursors?: Cursors;
  }) {
    this.cursors = deps.cursors ?? new Cursors();
    this.#store = deps.store;
    this.#blocklist = deps.blocklist;
    this.#uploads = deps.uploads;
    this.#clock = deps.clock;
    this.#policy = deps.policy;
    this.#events = deps.events ?? {};
    this.#releaseMedia = deps.releaseMedia;
    this.#jobs = deps.jobs;
  }

  /** `POST /api/upload/{id}/report`: 201 with a new report, 200 with the user's first one. */
  async report(
    principal: Principal,
    uploadId: string,
    input: { reason: ReportReason; note: string | null },
  ): Promise<{ created: boolean; report: ReportView }> {
    const now = this.#clock.now();
    assertOldEnough(principal.accountCreatedAt, this.#policy.reportMinAccountAgeSeconds ?? 0, now, {
      action: 'report uploads',
      variable: 'REPORT_MIN_ACCOUNT_AGE',
    });
    const upload = await this.#reachable(principal, uploadId);
    const outcome = await this.#store.report(
      {
        uploadId: upload.id,
        userId: principal.userId,
        reason: input.reason,
        note: input.note,
        createdAt: now,
      },
      { holdThreshold: this.#policy.reportHoldThreshold, trust: this.#trust },
    );
    if (!outcome) throw errors.notFound(`upload ${uploadId} does not exist`);
    if (outcome.created) this.#events.reportReceived?.();
    if (outcome.held) {
      this.#events.action?.('auto_hold');
      await this.#events.onChanged?.();
    }
    const r = outcome.report;
    return {
      created: outcome.created,
      report: {
        id: r.id,
        upload_id: r.uploadId,
        reason: r.reason,
        note: r.note,
        created_at: r.createdAt.toISOString(),
      },
    };
  }

  /** The queue's upload items from `start` (the queue route puts vote-ring items before them), with positions. */
  async queueItems(
    status: 'open' | 'closed',
    start: PageStart,
    limit: number,
  ): Promise<Array<{ item: QueueItemView; pos: ListPosition }>> {
    const rows = await this.#store.queue(status, start, limit, this.#trust, this.#clock.now());
    return rows.map(({ upload, reports, pos }) => ({
      pos,
      item: {
        kind: 'upload' as const,
        upload: toUploadView(upload),
        reports: {
          count: reports.count,
          reasons: reports.reasons,
          notes: reports.notes,
          first_at: reports.firstAt?.toISOString() ?? null,
          last_at: reports.lastAt?.toISOString() ?? null,
          trusted: reports.trusted,
        },
        person_flag: upload.personFlag,
        human_score: upload.humanScore,
        human_boxes: upload.humanBoxes,
      },
    }));
  }

  /** `POST /api/admin/uploads/{id}/moderation`. */
  async act(
    principal: Principal,
    uploadId: string,
    input: { action: UploadAction; reason: string; block: BlockKind },
  ): Promise<UploadView> {
    if (!isUuid(uploadId)) throw errors.notFound('no such upload: the id is not a UUID');
    const outcome = await this.#store.act(uploadId, input.action, {
      moderator: moderatorOf(principal),
      reason: input.reason,
      block: input.block,
      at: this.#clock.now(),
      // Checked on the locked row, before anything is written: a refusal changes nothing.
      guard: (u) => {
        if (input.block === 'none') return;
        if (u.uploadType !== 'image')
          throw errors.invalid(`block applies to image uploads only; upload ${uploadId} is a link`);
        if (!u.hasHashes)
          throw errors.invalid(`upload ${uploadId} has no stored hashes to block (it was removed before)`);
      },
    });
    if (!outcome) throw errors.notFound(`upload ${uploadId} does not exist`);
    // Every action is a write feeds must see (a state, the reports, the person flag).
    this.#events.action?.(input.action);
    await this.#events.onChanged?.();
    if (input.block !== 'none') {
      this.#events.action?.('block');
      this.#events.blocklistGrew?.();
    }
    if (outcome.releasedMedia) await this.#releaseMedia(outcome.releasedMedia).catch(() => {});
    return toUploadView(outcome.upload);
  }

  async users(prefix: string | null, page: Page): Promise<{ users: AdminUserView[]; has_more: boolean }> {
    const rows = await this.#store.listUsers(prefix, (page.page - 1) * page.limit, page.limit + 1);
    const now = this.#clock.now();
    return { users: rows.slice(0, page.limit).map((u) => adminUserView(u, now)), has_more: rows.length > page.limit };
  }

  async ban(
    principal: Principal,
    userId: string,
    input: { reason: string; until: Date | null; removeUploads: boolean },
  ): Promise<{ user: AdminUserView; banned_until: string }> {
    const now = this.#clock.now();
    const target = await this.#user(userId);
    if (target.role === 'admin') throw errors.invalid(`user ${target.username} is an admin; admins cannot be banned`);
    if (input.until && input.until.getTime() <= now.getTime())
      throw errors.invalid('until must be in the future (or null for a permanent ban)');
    const until = input.until ?? BAN_PERMANENT;
    // The removal is a durable job queued in the ban's transaction (API.md Bans): the answer does not wait for it.
    const removal = input.removeUploads
      ? { jobId: randomUUID(), reason: `account banned: ${input.reason}` }
      : undefined;
    await this.#store.setBan(
      target.id,
      { until, reason: input.reason },
      { moderator: moderatorOf(principal), at: now, ...(removal ? { removal } : {}) },
    );
    this.#events.action?.('ban');
    if (removal) this.#events.jobQueued?.();
    const user = await this.#user(target.id);
    return { user: adminUserView(user, now), banned_until: banEndView(until, now) ?? until.toISOString() };
  }

  async unban(principal: Principal, userId: string): Promise<{ success: true }> {
    const target = await this.#user(userId);
    await this.#store.setBan(target.id, null, { moderator: moderatorOf(principal), at: this.#clock.now() });
    this.#events.action?.('unban');
    return { success: true };
  }

  async blocklist(page: Page): Promise<{ entries: BlocklistEntryView[]; has_more: boolean }> {
    const rows = await this.#blocklist.list((page.page - 1) * page.limit, page.limit + 1);
    return { entries: rows.slice(0, page.limit).map(blocklistView), has_more: rows.length > page.limit };
  }

  async addToBlocklist(
    principal: Principal,
    entries: NewBlocklistEntry[],
    opts: { dryRun: boolean },
  ): Promise<{
    added: number;
    skipped: number;
    matches?: number;
    job?: { id: string; status: JobStatus } | null;
  }> {
    if (opts.dryRun)
      return this.#blocklist.dryRun(entries, this.#policy.blocklistDistance, this.#policy.blocklistPdqDistance);
    const { added, skipped, job } = await this.#blocklist.add(entries, {
      source: 'import',
      moderator: moderatorOf(principal),
      at: this.#clock.now(),
    });
    if (added) {
      this.#events.action?.('block', added);
      this.#events.blocklistGrew?.();
    }
    // The durable job that holds the stored uploads the new entries match (GET /api/admin/jobs/{id}), as it is now.
    const record = job ? await this.#jobs.find(job.id) : null;
    return { added, skipped, job: record ? { id: record.id, status: record.status } : null };
  }

  async removeFromBlocklist(principal: Principal, id: string): Promise<{ success: true }> {
    const gone =
      isUuid(id) && (await this.#blocklist.remove(id, { moderator: moderatorOf(principal), at: this.#clock.now() }));
    if (!gone) throw errors.notFound(`blocklist entry ${id} does not exist`);
    this.#events.action?.('unblock');
    return { success: true };
  }

  /**
   * `GET /api/modlog`: public; admins also see who acted, and every id (others never see the id of an upload
   * they could not find in a listing).
   */
  async modlog(
    viewer: Principal | null,
    q: Page & { cursor?: string | undefined },
  ): Promise<{ entries: ModlogEntryView[]; page: number; has_more: boolean; next_cursor: string | null }> {
    const listing = listingId(['modlog', q.limit]);
    const cursor = q.cursor ? this.cursors.decode(listing, q.cursor) : null;
    if (!cursor) checkPageDepth(q.page, q.limit);
    const start: PageStart = cursor ? { after: cursor.after } : { offset: (q.page - 1) * q.limit };
    const rows = await this.#store.modlog(start, q.limit + 1);
    const shown = rows.slice(0, q.limit);
    const last = shown.at(-1);
    const page = cursor?.page ?? q.page;
    const hasMore = rows.length > q.limit && last !== undefined;
    return {
      entries: shown.map((e) => modlogView(e, viewer?.isAdmin === true)),
      page,
      has_more: hasMore,
      next_cursor: hasMore
        ? this.cursors.encode(listing, {
            page: page + 1,
            after: { since: this.#clock.now(), pos: { key: null, createdAt: last.at, id: last.id } },
          })
        : null,
    };
  }

  /**
   * One run of the background job: holds the stored uploads that new blocklist entries match, until none is
   * queued. Returns how many uploads it held.
   */
  async holdBlocklistMatches(batch = HOLD_BATCH): Promise<number> {
    let held = 0;
    for (;;) {
      const step = await this.#blocklist.holdMatches(
        batch,
        this.#policy.blocklistDistance,
        this.#clock.now(),
        this.#policy.blocklistPdqDistance,
      );
      held += step.held;
      if (step.held) {
        this.#events.action?.('auto_hold', step.held);
        await this.#events.onChanged?.();
      }
      if (step.entries < batch) return held;
    }
  }

  /** `GET /api/admin/jobs`: newest first, of one status or all. */
  async jobs(status: JobStatus | null, page: Page): Promise<{ jobs: JobView[]; has_more: boolean }> {
    const rows = await this.#jobs.list(status, (page.page - 1) * page.limit, page.limit + 1);
    return { jobs: rows.slice(0, page.limit).map(jobView), has_more: rows.length > page.limit };
  }

  /** `GET /api/admin/jobs/{id}`. */
  async job(id: string): Promise<JobView> {
    const job = isUuid(id) ? await this.#jobs.find(id) : null;
    if (!job) throw errors.notFound(`job ${id} does not exist`);
    return jobView(job);
  }

  /**
   * One run of the job runner (every process runs it on a timer, and when a job is queued here): claims unfinished
   * ban removals one at a time and runs each to its end in short steps, until none is left or `signal` aborts (the
   * job in hand is then given up for another process). Returns how many uploads it removed.
   */
  async runJobs(signal?: AbortSignal): Promise<number> {
    let removed = 0;
    while (!signal?.aborted) {
      const job = await this.#jobs.claim(this.#runner, this.#jobLeaseMs, this.#clock.now());
      if (!job) break;
      removed += await this.#runRemoval(job.id, signal);
    }
    return removed;
  }

  async #runRemoval(jobId: string, signal?: AbortSignal): Promise<number> {
    let removed = 0;
    try {
      for (;;) {
        if (signal?.aborted) {
          await this.#jobs.release(jobId, this.#runner);
          return removed;
        }
        const step = await this.#jobs.removalStep(jobId, this.#runner, JOB_BATCH, this.#jobLeaseMs, this.#clock.now());
        removed += step.removed;
        if (step.removed) {
          this.#events.action?.('remove', step.removed);
          await this.#events.onChanged?.();
        }
        // After the commits, as an action's removal does (journalled: the media sweep retries a failure).
        for (const key of step.releasedMedia) await this.#releaseMedia(key).catch(() => {});
        if (step.finished || step.leaseLost) return removed;
        const pause = this.#policy.jobPauseMs ?? 0;
        // Shorter than the lease (renewed at each step); a stop ends the pause at once (handled at the loop's top).
        if (pause > 0) await sleep(Math.min(pause, this.#jobLeaseMs / 2), undefined, { signal }).catch(() => {});
      }
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      await this.#jobs.fail(jobId, this.#runner, message, this.#clock.now(), JOB_MAX_ATTEMPTS).catch(() => {});
      throw err;
    }
  }

  get #jobLeaseMs(): number {
    return this.#policy.jobLeaseMs ?? JOB_LEASE_MS;
  }

  get #trust(): ReportTrustRule {
    return this.#policy.reportTrust ?? DEFAULT_REPORT_TRUST;
  }

  async #reachable(principal: Principal, uploadId: string): Promise<UploadRecord> {
    const u = isUuid(uploadId) ? await this.#uploads.findById(uploadId) : null;
    if (!u) throw errors.notFound(`upload ${uploadId} does not exist`);
    assertReachable(u, principal);
    return u;
  }

  async #user(userId: string): Promise<AdminUserRecord> {
    const u = isUuid(userId) ? await this.#store.findUser(userId) : null;
    if (!u) throw errors.notFound(`user ${userId} does not exist`);
    return u;
  }
}

function adminUserView(u: AdminUserRecord, now: Date): AdminUserView {
  return {
    id: u.id,
    username: u.username,
    email: u.email,
    role: u.role,
    created_at: u.createdAt.toISOString(),
    banned_until: banEndView(u.bannedUntil, now),
    uploads: u.uploads,
    reports_received: u.reportsReceived,
  };
}

function jobView(j: JobRecord): JobView {
  return {
    id: j.id,
    kind: j.kind,
    status: j.status,
    progress: { done: j.done, total: j.total },
    target: j.target,
    reason: j.reason,
    moderator: j.moderator,
    error: j.error,
    created_at: j.createdAt.toISOString(),
    updated_at: j.updatedAt.toISOString(),
  };
}

function blocklistView(e: BlocklistEntry): BlocklistEntryView {
  return {
    id: e.id,
    sha256: e.sha256,
    phash: e.phash,
    pdq: e.pdq ?? null,
    reason: e.reason,
    source: e.source,
    created_at: e.createdAt.toISOString(),
  };
}

function modlogView(e: ModlogLine, forAdmin: boolean): ModlogEntryView {
  const view: ModlogEntryView = {
    id: e.id,
    at: e.at.toISOString(),
    action: e.action,
    target: forAdmin || publiclyNamed(e) ? { ...e.target } : { type: e.target.type, id: null },
    reason: e.reason,
  };
  // A user or blocklist target's name (undefined for uploads, whose id or link says what they are).
  if (e.targetName !== undefined) view.target.name = e.targetName;
  if (forAdmin) view.moderator = e.moderator;
  return view;
}
