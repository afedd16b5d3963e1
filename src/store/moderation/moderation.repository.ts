/**
 * Reports, the queue, moderators' actions on uploads, bans and the modlog (API.md Moderation). Every change
 * of state is one transaction with its modlog line(s), under the upload's lock (and its stored files' lock for a
 * removal), so concurrent reports hold an upload once, and a crash leaves the row, the journal of files to
 * remove and the modlog consistent.
 */
import type { PageStart } from '../../domain/feeds/cursor.ts';
import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { ActOutcome, ModerationStore, ReportOutcome, ReportPolicy } from '../../domain/moderation/ports.ts';
import {
  isTrustedReporter,
  reportsMayHold,
  trustedCount,
  type ReporterHistory,
  type ReportTrustRule,
} from '../../domain/moderation/report-trust.ts';
import type {
  AdminUserRecord,
  Moderator,
  QueueItemRecord,
  ReportReason,
  ReportRecord,
  ReportSummary,
  UploadAction,
} from '../../domain/moderation/moderation.types.ts';
import { PDQ_MIN_QUALITY } from '../../domain/moderation/moderation.types.ts';
import type { Database } from '../database.ts';
import type { DB } from '../database-types.ts';
import type { Dialect } from '../dialect.ts';
import type { UploadRepository } from '../repositories/upload.repository.ts';
import type { SimilarityIndex } from '../similarity/similarity-index.ts';
import { lockUpload } from '../upload-rows.ts';
import { addBlocklistEntries } from './blocklist.repository.ts';
import { appendModlog, readModlog } from './modlog.ts';
import { emitEvent, emitQueueItem, emitUploadEvent } from '../webhooks/outbox.ts';
import { queueBanRemoval } from './job.repository.ts';
import {
  closeOpenReports,
  countOpenReport,
  holdUpload,
  lockForRemoval,
  removeUpload,
  setState,
} from './upload-states.ts';

const STATE_OF: Readonly<Record<UploadAction, 'visible' | 'held' | 'removed'>> = {
  approve: 'visible',
  hold: 'held',
  remove: 'removed',
};

/** A queue row's id and its position in the queue's order (see `queue`). */
interface QueueKeyRow {
  id: string;
  at: unknown;
  k: number | string;
}

/**
 * A page of the queue's keys. The open queue is one seek in uploads_queue_index (m020): `queue_key` is its order as
 * one number (held first, then most open reports), then oldest first; a cursor's key is that number, and the next
 * page seeks past (key, created_at, id). The closed queue reads uploads_moderated_index newest first.
 */
export function queueKeysQuery(d: Dialect, status: 'open' | 'closed', start: PageStart, limit: number) {
  const offset = 'offset' in start ? start.offset : 0;
  const after = 'after' in start ? start.after.pos : null;
  if (status === 'open') {
    const seek = after
      ? sql`and (u.queue_key, u.created_at, u.id) > (${after.key ?? 0}, ${d.date(after.createdAt)}, ${after.id})`
      : sql``;
    return sql<QueueKeyRow>`
      select u.id as id, u.created_at as at, u.queue_key as k from uploads u
      where u.queue_key is not null ${seek}
      order by u.queue_key, u.created_at, u.id
      limit ${limit} offset ${offset}`;
  }
  const seek = after ? sql`and (u.moderated_at, u.id) < (${d.date(after.createdAt)}, ${after.id})` : sql``;
  return sql<QueueKeyRow>`
    select u.id as id, u.moderated_at as at, 0 as k from uploads u
    where u.moderated_at is not null
      and (u.moderation = 'removed' or (u.moderation = 'visible' and u.person_flag = ${sql.raw(d.falseLit)}
        and u.open_reports = 0))
      ${seek}
    order by u.moderated_at desc, u.id desc
    limit ${limit} offset ${offset}`;
}

export class ModerationRepository implements ModerationStore {
  readonly #db: Database;
  readonly #uploads: UploadRepository;
  readonly #similarity: SimilarityIndex;

  constructor(db: Database, uploads: UploadRepository, similarity: SimilarityIndex) {
    this.#db = db;
    this.#uploads = uploads;
    this.#similarity = similarity;
  }

  report(input: Omit<ReportRecord, 'id'>, policy: ReportPolicy): Promise<ReportOutcome | null> {
    const d = this.#db.dialect;
    return this.#db.transaction(async (_em, db) => {
      const upload = await lockUpload(db, d, input.uploadId, ['moderation', 'moderated_at', 'person_flag']);
      if (!upload) return null;
      const inserted = await db
        .insertInto('reports')
        .values({
          id: randomUUID(),
          upload_id: input.uploadId,
          user_id: input.userId,
          reason: input.reason,
          note: input.note,
          status: 'open',
          created_at: d.date(input.createdAt),
        })
        .onConflict((oc) => oc.columns(['upload_id', 'user_id']).doNothing())
        .returning('id')
        .execute();
      const row = await db
        .selectFrom('reports')
        .selectAll()
        .where('upload_id', '=', input.uploadId)
        .where('user_id', '=', input.userId)
        .executeTakeFirstOrThrow();
      const report: ReportRecord = {
        id: row.id,
        uploadId: row.upload_id,
        userId: row.user_id,
        reason: row.reason as ReportReason,
        note: row.note,
        createdAt: d.readDate(row.created_at),
      };
      // The upload's count of open reports with this one (its column, kept with the reports: m020).
      let open = 0;
      if (inserted.length) {
        await emitEvent(db, d, {
          type: 'report.created',
          ownerId: null,
          data: {
            report: {
              id: report.id,
              upload_id: report.uploadId,
              reason: report.reason,
              note: report.note,
              created_at: report.createdAt.toISOString(),
            },
          },
          at: input.createdAt,
        });
        open = await countOpenReport(db, d, input.uploadId);
        // The upload's first open report puts it in the queue (unless it was there already: held or flagged).
        if (upload.moderation === 'visible' && !d.readBool(upload.person_flag) && open === 1)
          await emitQueueItem(db, d, input.uploadId, 'report', input.createdAt);
      }
      const threshold = policy.holdThreshold;
      const mayHold = reportsMayHold({
        moderation: upload.moderation,
        moderatedAt: upload.moderated_at === null ? null : d.readDate(upload.moderated_at),
      });
      let held = false;
      if (inserted.length && threshold > 0 && mayHold) {
        // Decided here, under the upload's lock: concurrent reports see each other's rows in order, so the
        // report that brings the trusted count to the threshold is the one that holds, once.
        if (open >= threshold) {
          const reporters = await reporterHistories(db, d, policy.trust, [input.uploadId], 'open');
          const trusted = trustedCount(
            policy.trust,
            reporters.map((r) => r.history),
            input.createdAt,
          );
          if (trusted >= threshold) {
            held = await holdUpload(db, d, input.uploadId, {
              at: input.createdAt,
              line: {
                action: 'auto_hold',
                reason: `reported by ${open} users, ${trusted} of them trusted`,
                moderator: null,
              },
            });
          }
        }
      }
      return { report, created: inserted.length > 0, held };
    });
  }

  async act(
    uploadId: string,
    action: UploadAction,
    opts: Parameters<ModerationStore['act']>[2],
  ): Promise<ActOutcome | null> {
    const d = this.#db.dialect;
    const result = await this.#db.transaction(async (_em, db) => {
      const row = await lockForRemoval(db, d, uploadId);
      if (!row) return null;
      opts.guard?.({ uploadType: row.upload_type, hasHashes: row.sha256 !== null });
      if (opts.block !== 'none' && row.sha256) {
        await addBlocklistEntries(
          db,
          d,
          [
            {
              sha256: row.sha256,
              phash: opts.block === 'near' ? row.phash : null,
              // `near` adds the PDQ too, when it is worth matching (quality ≥ 50; API.md Blocklist).
              pdq: opts.block === 'near' && row.pdq && (row.pdq_quality ?? 0) >= PDQ_MIN_QUALITY ? row.pdq : null,
              reason: opts.reason,
            },
          ],
          { source: 'moderation', moderator: opts.moderator, at: opts.at },
        );
      }
      const line = { reason: opts.reason, moderator: opts.moderator };
      let releasedMedia: string | null = null;
      // Remove as a ban's removal job does (one code path); approve decides the open reports and clears the person
      // flag; hold leaves the reports open.
      if (action === 'remove') {
        releasedMedia = await removeUpload(db, d, this.#similarity, row, { at: opts.at, line });
      } else {
        if (action === 'approve') await closeOpenReports(db, d, uploadId, opts.at);
        await setState(db, d, uploadId, STATE_OF[action], opts.at, action === 'approve' ? { personFlag: false } : {});
        await appendModlog(db, d, [{ ...line, action, target: { type: 'upload', id: uploadId } }], opts.at);
        if (action === 'approve' && row.moderation !== 'visible')
          await emitUploadEvent(db, d, 'upload.restored', uploadId, opts.at);
        if (action === 'hold' && row.moderation === 'visible')
          await emitUploadEvent(db, d, 'upload.held', uploadId, opts.at);
      }
      const [upload] = await this.#uploads.hydrate(
        await this.#uploads.select(db).where('u.id', '=', uploadId).execute(),
        db,
      );
      return { upload: upload!, releasedMedia };
    });
    return result;
  }

  async queue(
    status: 'open' | 'closed',
    start: PageStart,
    limit: number,
    trust: ReportTrustRule,
    now: Date,
  ): Promise<QueueItemRecord[]> {
    const db = this.#db.read();
    const d = this.#db.dialect;
    const { rows } = await queueKeysQuery(d, status, start, limit).execute(db);
    if (!rows.length) return [];
    const ids = rows.map((r) => r.id);
    const keys = new Map(rows.map((r) => [r.id, r]));
    const records = new Map(
      (await this.#uploads.hydrate(await this.#uploads.select(db).where('u.id', 'in', ids).execute(), db)).map(
        (u) => [u.id, u] as const,
      ),
    );
    const summaries = await this.#summaries(db, d, ids, status);
    // How many of each upload's reporters the report-trust rule counts now.
    for (const r of await reporterHistories(db, d, trust, ids, status)) {
      const s = summaries.get(r.uploadId);
      if (s && isTrustedReporter(trust, r.history, now)) s.trusted++;
    }
    return ids.flatMap((id) => {
      const upload = records.get(id);
      const row = keys.get(id);
      const pos = { key: Number(row?.k ?? 0), createdAt: d.readDate(row?.at), id };
      return upload ? [{ upload, reports: summaries.get(id) ?? emptySummary(), pos }] : [];
    });
  }

  async openQueueDepth(): Promise<number> {
    const { rows } = await sql<{ n: number | string }>`
      select count(*) as n from uploads where queue_key is not null`.execute(this.#db.read());
    return Number(rows[0]?.n ?? 0);
  }

  async #summaries(
    db: Kysely<DB>,
    d: Dialect,
    ids: string[],
    status: 'open' | 'closed',
  ): Promise<Map<string, ReportSummary>> {
    const rows = await db
      .selectFrom('reports')
      .select(['upload_id', 'reason', 'note', 'created_at'])
      .where('upload_id', 'in', ids)
      .where('status', '=', status)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
    const out = new Map<string, ReportSummary>();
    for (const r of rows) {
      const s = out.get(r.upload_id) ?? emptySummary();
      const at = d.readDate(r.created_at);
      s.count++;
      const reason = r.reason as ReportReason;
      s.reasons[reason] = (s.reasons[reason] ?? 0) + 1;
      if (r.note && s.notes.length < 5) s.notes.push(r.note);
      // Newest first: the first row seen is the last report, the last row the first.
      s.lastAt ??= at;
      s.firstAt = at;
      out.set(r.upload_id, s);
    }
    return out;
  }

  async listUsers(prefix: string | null, offset: number, limit: number): Promise<AdminUserRecord[]> {
    let q = userQuery(this.#db.read());
    if (prefix) {
      const pattern = `${prefix.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      q = q.where(sql<boolean>`us.username_key like ${pattern} escape '\\'`);
    }
    return (await q.orderBy('us.username_key').limit(limit).offset(offset).execute()).map((r) => this.#user(r));
  }

  async findUser(id: string): Promise<AdminUserRecord | null> {
    const r = await userQuery(this.#db.db()).where('us.id', '=', id).executeTakeFirst();
    return r ? this.#user(r) : null;
  }

  #user(r: UserRow): AdminUserRecord {
    const d = this.#db.dialect;
    return {
      id: r.id,
      username: r.username,
      email: r.email,
      role: r.role === 'admin' ? 'admin' : 'user',
      createdAt: d.readDate(r.created_at),
      bannedUntil: r.banned_until === null ? null : d.readDate(r.banned_until),
      uploads: Number(r.uploads ?? 0),
      reportsReceived: Number(r.reports_received ?? 0),
    };
  }

  setBan(
    userId: string,
    ban: { until: Date; reason: string } | null,
    opts: { moderator: Moderator; at: Date; removal?: { jobId: string; reason: string } },
  ): Promise<boolean> {
    const d = this.#db.dialect;
    return this.#db.transaction(async (_em, db) => {
      const r = await db
        .updateTable('users')
        .set({ banned_until: ban ? d.date(ban.until) : null, ban_reason: ban?.reason ?? null })
        .where('id', '=', userId)
        .executeTakeFirst();
      if (!Number(r.numUpdatedRows)) return false;
      await appendModlog(
        db,
        d,
        [
          {
            action: ban ? 'ban' : 'unban',
            target: { type: 'user', id: userId },
            reason: ban?.reason ?? '',
            moderator: opts.moderator,
          },
        ],
        opts.at,
      );
      // Queued with the ban: the job starts after this commit, and finds every upload of theirs committed before it
      // (an insert checks the ban under this row's lock, so none commits after: insert-guard.ts).
      if (ban && opts.removal)
        await queueBanRemoval(db, d, {
          id: opts.removal.jobId,
          userId,
          reason: opts.removal.reason,
          moderator: opts.moderator,
          at: opts.at,
        });
      return true;
    });
  }

  modlog(start: PageStart, limit: number) {
    return readModlog(this.#db.read(), this.#db.dialect, start, limit);
  }
}

/** Users with what the admins' list shows: uploads not removed, and reports their uploads received. */
const userQuery = (db: Kysely<DB>) =>
  db
    .selectFrom('users as us')
    .select((eb) => [
      'us.id',
      'us.username',
      'us.email',
      'us.role',
      'us.created_at',
      'us.banned_until',
      eb
        .selectFrom('uploads as u')
        .select(eb.fn.countAll().as('n'))
        .whereRef('u.user_id', '=', 'us.id')
        .where('u.moderation', '<>', 'removed')
        .as('uploads'),
      eb
        .selectFrom('reports as r')
        .innerJoin('uploads as u', 'u.id', 'r.upload_id')
        .select(eb.fn.countAll().as('n'))
        .whereRef('u.user_id', '=', 'us.id')
        .as('reports_received'),
    ]);
type UserRow = Awaited<ReturnType<ReturnType<typeof userQuery>['executeTakeFirstOrThrow']>>;

function emptySummary(): ReportSummary {
  return { count: 0, reasons: {}, notes: [], firstAt: null, lastAt: null, trusted: 0 };
}

/**
 * The reporters of these uploads' reports (open or closed), with what the report-trust rule reads of each: the
 * account's age, and its accepted (visible) uploads and its votes, each counted no further than the rule's
 * minimum (a prolific account costs no more than a new one).
 */
async function reporterHistories(
  db: Kysely<DB>,
  d: Dialect,
  rule: ReportTrustRule,
  uploadIds: string[],
  status: 'open' | 'closed',
): Promise<Array<{ uploadId: string; history: ReporterHistory }>> {
  if (!uploadIds.length) return [];
  const capped = (table: 'uploads' | 'votes', n: number) => {
    if (n <= 0) return sql<number>`0`;
    const visible = table === 'uploads' ? sql`and x.moderation = 'visible'` : sql``;
    return sql<number>`(select count(*) from (
      select 1 as one from ${sql.table(table)} x where x.user_id = r.user_id ${visible} limit ${n}) t)`;
  };
  const rows = await db
    .selectFrom('reports as r')
    .innerJoin('users as us', 'us.id', 'r.user_id')
    .select(['r.upload_id', 'us.created_at'])
    .select([capped('uploads', rule.minUploads).as('uploads'), capped('votes', rule.minVotes).as('votes')])
    .where('r.upload_id', 'in', uploadIds)
    .where('r.status', '=', status)
    .execute();
  return rows.map((r) => ({
    uploadId: r.upload_id,
    history: { createdAt: d.readDate(r.created_at), acceptedUploads: Number(r.uploads), votes: Number(r.votes) },
  }));
}
