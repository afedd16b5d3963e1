/**
 * What moderation needs from the database, implemented in src/store (moderation.repository.ts,
 * blocklist.repository.ts). Every state change of an upload, with its modlog line, is one transaction.
 */
import type { PageStart } from '../feeds/cursor.ts';
import type { UploadRecord, UploadType } from '../uploads/upload.types.ts';
import type { ReportTrustRule } from './report-trust.ts';
import type {
  AdminUserRecord,
  BlockKind,
  BlocklistEntry,
  JobRecord,
  JobStatus,
  ModlogLine,
  Moderator,
  NearDistances,
  NearHashes,
  NewBlocklistEntry,
  QueueItemRecord,
  ReportRecord,
  UploadAction,
} from './moderation.types.ts';

export interface ReportOutcome {
  report: ReportRecord;
  /** False when the user had reported this upload before (the first report is answered). */
  created: boolean;
  /** This report brought the upload to REPORT_HOLD_THRESHOLD and held it (modlog `auto_hold`). */
  held: boolean;
}

/** When reports hold an upload automatically (API.md Reports). */
export interface ReportPolicy {
  /** REPORT_HOLD_THRESHOLD: trusted distinct reporters that hold an upload; 0 turns it off. */
  holdThreshold: number;
  /** Which reporters count toward it. */
  trust: ReportTrustRule;
}

export interface ActOutcome {
  upload: UploadRecord;
  /** Stored files the upload released (remove) and no other row references: to be removed after the commit. */
  releasedMedia: string | null;
}

export interface ModerationStore {
  /**
   * Files the report (at most one per user and upload) and, when `holdThreshold` > 0 distinct users that pass the
   * trust rule (judged at the report's time) have open reports on a visible upload no moderator approved
   * (reportsMayHold), holds it with a modlog `auto_hold` line: in one transaction under the upload's lock, so
   * that concurrent reports hold it exactly once. Null when the upload is gone (deleted meanwhile).
   */
  report(input: Omit<ReportRecord, 'id'>, policy: ReportPolicy): Promise<ReportOutcome | null>;
  /**
   * A moderator's action on an upload, its modlog line(s) and blocklist entries, in one transaction. `remove`
   * deletes votes and tag links, clears the hashes and releases the stored files (journalled as garbage when no
   * other row references them). Null when there is no such upload.
   */
  act(
    uploadId: string,
    action: UploadAction,
    opts: {
      moderator: Moderator;
      reason: string;
      block: BlockKind;
      at: Date;
      /** Checks the locked upload before anything is written; throws to refuse the action (nothing changes). */
      guard?: (upload: { uploadType: UploadType; hasHashes: boolean }) => void;
    },
  ): Promise<ActOutcome | null>;
  /**
   * The queue's upload items: open (held, reported, person-flagged; held first, then most open reports, then
   * oldest) or closed (acted on, nothing open; most recently acted on first), from `start` (a seek past a cursor's
   * position in that order, or an offset).
   */
  queue(
    status: 'open' | 'closed',
    start: PageStart,
    limit: number,
    trust: ReportTrustRule,
    now: Date,
  ): Promise<QueueItemRecord[]>;
  openQueueDepth(): Promise<number>;
  listUsers(prefix: string | null, offset: number, limit: number): Promise<AdminUserRecord[]>;
  findUser(id: string): Promise<AdminUserRecord | null>;
  /**
   * Sets (or with null clears) the ban, with its modlog line, and with `removal` queues the durable job that removes
   * the user's uploads, all in one transaction. False when there is no such user.
   */
  setBan(
    userId: string,
    ban: { until: Date; reason: string } | null,
    opts: { moderator: Moderator; at: Date; removal?: { jobId: string; reason: string } },
  ): Promise<boolean>;
  /** A page of the modlog, newest first, with each upload target's state now (ModlogLine). */
  modlog(start: PageStart, limit: number): Promise<ModlogLine[]>;
}

export interface BlocklistStore {
  /**
   * Bumped by every addition and removal: an upload reads it before its checks, its insert re-checks only if it
   * moved, and each process's in-memory copy of the near hashes is rebuilt when it moved.
   */
  version(): Promise<number>;
  /** The version and whether these bytes are blocklisted (exact SHA-256), in one read (BlocklistCheck). */
  checkBytes(sha256: string): Promise<{ version: number; blocked: boolean }>;
  /** Whether a blocklisted pHash or PDQ lies within the distance, seeing every entry present at `version`. */
  blocksNear(hashes: NearHashes, distances: NearDistances, version: number): Promise<boolean>;
  list(offset: number, limit: number): Promise<BlocklistEntry[]>;
  /**
   * Adds the entries not present yet (same pair of hashes: skipped), each with a modlog `block` line, and queues
   * them for the job that holds matching stored uploads. `dryRun`: counts only, changes nothing.
   */
  add(
    entries: NewBlocklistEntry[],
    opts: { source: 'moderation' | 'import'; moderator: Moderator; at: Date },
  ): Promise<{ added: number; skipped: number; job: { id: string } | null }>;
  /** Counts what `add` would add and skip, and the stored uploads the new entries would hold. */
  dryRun(
    entries: NewBlocklistEntry[],
    maxDistance: number,
    pdqDistance?: number,
  ): Promise<{ added: number; skipped: number; matches: number }>;
  remove(id: string, opts: { moderator: Moderator; at: Date }): Promise<boolean>;
  size(): Promise<number>;
  /**
   * One step of the background job: takes up to `batch` queued entries, holds every visible stored upload they
   * match (modlog `auto_hold`), and dequeues them. Returns how many entries and uploads it handled (0 entries:
   * nothing is queued). Safe to run in several processes at once. PDQ entries match stored uploads whose PDQ
   * (of quality ≥ PDQ_MIN_QUALITY) is within `pdqDistance` (default 31).
   */
  holdMatches(
    batch: number,
    maxDistance: number,
    at: Date,
    pdqDistance?: number,
  ): Promise<{ entries: number; held: number }>;
}

/** One step of a `ban_removal` job (JobStore.removalStep). */
export interface RemovalStep {
  /** Uploads this step removed (each in its own transaction, with its modlog `remove` line). */
  removed: number;
  /** Stored files those removals released, to be removed after their commits. */
  releasedMedia: string[];
  /** Nothing of the user's is left to remove: the job is done. */
  finished: boolean;
  /** Another process holds the job now (this one's lease expired): stop. */
  leaseLost: boolean;
}

/**
 * The durable moderation jobs (src/store/moderation/job.repository.ts). A runner claims an unfinished job with a
 * lease that expires (a process killed mid-job leaves it to be claimed again) and renews it at every step. Each
 * removal is its own transaction that removes a not-yet-removed upload and writes its modlog line then, so no
 * upload is removed twice whoever runs the job, and however often.
 */
export interface JobStore {
  list(status: JobStatus | null, offset: number, limit: number): Promise<JobRecord[]>;
  find(id: string): Promise<JobRecord | null>;
  /** Claims the oldest unfinished `ban_removal` job no live lease holds, for `leaseMs`; null when there is none. */
  claim(owner: string, leaseMs: number, at: Date): Promise<JobRecord | null>;
  /** Renews the lease, then removes up to `batch` of the user's uploads that are not removed yet. */
  removalStep(jobId: string, owner: string, batch: number, leaseMs: number, at: Date): Promise<RemovalStep>;
  /** Gives the job up (shutdown): another process may claim it at once. */
  release(jobId: string, owner: string): Promise<void>;
  /** Records a failed run; after `maxAttempts` of them the job is `failed`, else it is claimed again later. */
  fail(jobId: string, owner: string, error: string, at: Date, maxAttempts: number): Promise<void>;
}
