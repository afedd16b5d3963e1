/** API.md Moderation: reports, the queue, the blocklist, bans and the modlog, as the domain sees them. */
import type { ListPosition } from '../feeds/cursor.ts';
import type { ModerationState, UploadRecord } from '../uploads/upload.types.ts';
import type { UserRecord } from '../users.ts';

export const REPORT_REASONS = ['spam', 'harassment', 'sexual', 'violence', 'illegal', 'copyright', 'other'] as const;
export type ReportReason = (typeof REPORT_REASONS)[number];

export const MOD_ACTIONS = [
  'approve',
  'hold',
  'remove',
  'auto_hold',
  'ban',
  'unban',
  'block',
  'unblock',
  /** A vote ring's votes voided, or (the reason says so) restored: target `vote_ring`. */
  'void_votes',
] as const;
export type ModAction = (typeof MOD_ACTIONS)[number];
/** What a moderator does to an upload (`POST /api/admin/uploads/{id}/moderation`). */
export type UploadAction = 'approve' | 'hold' | 'remove';
export type BlockKind = 'none' | 'exact' | 'near';

/** Who acted: an admin, or null for an automatic rule (reports threshold, person detection, blocklist). */
export type Moderator = { id: string; username: string } | null;

export interface ReportRecord {
  id: string;
  uploadId: string;
  userId: string;
  reason: ReportReason;
  note: string | null;
  createdAt: Date;
}

export interface ReportView {
  id: string;
  upload_id: string;
  reason: ReportReason;
  note: string | null;
  created_at: string;
}

export interface ReportSummary {
  count: number;
  reasons: Partial<Record<ReportReason, number>>;
  /** The latest notes (at most 5), newest first. */
  notes: string[];
  firstAt: Date | null;
  lastAt: Date | null;
  /** Reporters the report-trust rule counts now (REPORT_TRUST_*). */
  trusted: number;
}

export interface QueueItemRecord {
  upload: UploadRecord;
  reports: ReportSummary;
  /** Where the item is in the queue's order (what a cursor names). */
  pos: ListPosition;
}

/**
 * PDQ hashes whose quality is under this are too featureless to match (Meta's pdq README): an upload's PDQ below it
 * is never matched against PDQ entries, nor added by `block: "near"`.
 */
export const PDQ_MIN_QUALITY = 50;

/** An image's hashes as the blocklist's near check asks about them (null: that family not asked). */
export interface NearHashes {
  phash: string | null;
  /** Only a PDQ whose quality is ≥ PDQ_MIN_QUALITY. */
  pdq: string | null;
}

/** The distances of that check: BLOCKLIST_DISTANCE and BLOCKLIST_PDQ_DISTANCE (negative: not checked). */
export interface NearDistances {
  phash: number;
  pdq: number;
}

export interface NewBlocklistEntry {
  sha256: string | null;
  phash: string | null;
  /** PDQ, 64 hex characters (API.md Blocklist); optional for callers that know only the other two. */
  pdq?: string | null;
  reason: string;
}

export interface BlocklistEntry extends NewBlocklistEntry {
  id: string;
  source: 'moderation' | 'import';
  createdAt: Date;
}

export interface BlocklistEntryView {
  id: string;
  sha256: string | null;
  phash: string | null;
  pdq: string | null;
  reason: string;
  source: 'moderation' | 'import';
  created_at: string;
}

export interface ModlogEntry {
  id: string;
  at: Date;
  action: ModAction;
  target: { type: 'upload' | 'user' | 'blocklist' | 'vote_ring'; id: string };
  reason: string;
  moderator: Moderator;
}

/** A modlog line to append (its id and time are given by the store). */
export type NewModlogEntry = Omit<ModlogEntry, 'id' | 'at'>;

/**
 * A modlog line as read, with what its upload target is now (read with it): whether the public view may name it.
 * `upload` is undefined for other targets, null for an upload deleted since.
 */
export interface ModlogLine extends ModlogEntry {
  upload?: { isPrivate: boolean; moderation: ModerationState } | null;
  /**
   * What a user or blocklist target is called now: the user's name, the start of the entry's hash (its SHA-256,
   * else its perceptual hash); null when it is gone. Undefined for upload targets.
   */
  targetName?: string | null;
}

/**
 * API.md Modlog: the public view never names an upload an anonymous reader could not find in a listing, judged
 * by its state now: private, held, removed while private, or deleted since (then nobody can tell whether it was
 * private). A visible public upload is named, and so is one removed while public (its tombstone answers 410).
 */
export function publiclyNamed(line: Pick<ModlogLine, 'target' | 'upload'>): boolean {
  if (line.target.type !== 'upload') return true;
  const u = line.upload;
  return !!u && !u.isPrivate && u.moderation !== 'held';
}

/** A permanent ban is stored as this instant: every comparison with "now" treats it like any other end. */
export const BAN_PERMANENT = new Date('9999-12-31T00:00:00.000Z');

/** A user as the admins' list shows it: the stored user, with what they uploaded and the reports it received. */
export interface AdminUserRecord extends UserRecord {
  uploads: number;
  reportsReceived: number;
}

/** Durable moderation jobs (API.md Bans; `GET /api/admin/jobs`). */
export const JOB_KINDS = ['ban_removal', 'blocklist_hold'] as const;
export type JobKind = (typeof JOB_KINDS)[number];
export const JOB_STATUSES = ['queued', 'running', 'done', 'failed'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export interface JobRecord {
  id: string;
  kind: JobKind;
  status: JobStatus;
  /** `ban_removal`: uploads removed of done + still to remove; `blocklist_hold`: entries handled of those added. */
  done: number;
  total: number;
  /** The banned user (`ban_removal`), or the blocklist (`blocklist_hold`, id null). */
  target: { type: 'user' | 'blocklist'; id: string | null };
  reason: string;
  moderator: Moderator;
  /** The last failure's message, if a run failed. */
  error: string | null;
  createdAt: Date;
  updatedAt: Date;
}
