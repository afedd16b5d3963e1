/**
 * Durable moderation jobs (migration m010): `ban_removal` jobs queued in a ban's transaction and run here a step
 * at a time by whichever process claims them, and `blocklist_hold` jobs, the progress of the blocklist's own
 * durable queue (blocklist.repository.ts counts their entries as the hold job dequeues them).
 *
 * A claim takes a lease that expires (PostgreSQL: `FOR UPDATE SKIP LOCKED`, so concurrent claimers never take the
 * same job; SQLite: one statement of a serialized writer), renewed at each step. A process killed mid-job leaves its
 * lease to expire, and the job is claimed again. Each removal is its own transaction under the upload's lock that
 * removes it only if it is not removed yet, writing its modlog `remove` line and counting it in the job's progress
 * then: whoever runs the job, and however often, no upload is removed (or logged) twice.
 */
import { sql, type Kysely, type Selectable } from 'kysely';
import type { JobStore, RemovalStep } from '../../domain/moderation/ports.ts';
import type { JobRecord, JobStatus } from '../../domain/moderation/moderation.types.ts';
import type { Database } from '../database.ts';
import type { DB, ModerationJobsTable } from '../database-types.ts';
import type { Dialect } from '../dialect.ts';
import type { SimilarityIndex } from '../similarity/similarity-index.ts';
import { lockForRemoval, removeUpload } from './upload-states.ts';

type JobRow = Selectable<ModerationJobsTable>;

/** Queues a `ban_removal` job inside the ban's transaction, its total the user's uploads not removed yet. */
export async function queueBanRemoval(
  db: Kysely<DB>,
  d: Dialect,
  job: { id: string; userId: string; reason: string; moderator: { id: string; username: string } | null; at: Date },
): Promise<void> {
  const left = await remainingOf(db, job.userId);
  await db
    .insertInto('moderation_jobs')
    .values({
      id: job.id,
      kind: 'ban_removal',
      status: 'queued',
      target_type: 'user',
      target_id: job.userId,
      reason: job.reason,
      moderator_id: job.moderator?.id ?? null,
      moderator_name: job.moderator?.username ?? null,
      total: left,
      created_at: d.date(job.at),
      updated_at: d.date(job.at),
    })
    .execute();
}

async function remainingOf(db: Kysely<DB>, userId: string): Promise<number> {
  const row = await db
    .selectFrom('uploads')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('user_id', '=', userId)
    .where('moderation', '<>', 'removed')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export class JobRepository implements JobStore {
  readonly #db: Database;
  readonly #similarity: SimilarityIndex;

  constructor(db: Database, similarity: SimilarityIndex) {
    this.#db = db;
    this.#similarity = similarity;
  }

  async list(status: JobStatus | null, offset: number, limit: number): Promise<JobRecord[]> {
    let q = this.#db.db().selectFrom('moderation_jobs').selectAll();
    if (status) q = q.where('status', '=', status);
    const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute();
    return rows.map((r) => this.#record(r));
  }

  async find(id: string): Promise<JobRecord | null> {
    const row = await this.#db.db().selectFrom('moderation_jobs').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? this.#record(row) : null;
  }

  async claim(owner: string, leaseMs: number, at: Date): Promise<JobRecord | null> {
    const d = this.#db.dialect;
    const db = this.#db.db();
    const now = d.date(at);
    // The next job free to run, read first: an idle poll writes nothing (on SQLite an UPDATE takes the database's
    // write lock even when it matches no row).
    const next = () =>
      db
        .selectFrom('moderation_jobs')
        .select('id')
        .where('kind', '=', 'ban_removal')
        .where('status', 'in', ['queued', 'running'])
        .where((w) => w.or([w('lease_until', 'is', null), w('lease_until', '<', now)]))
        .orderBy('created_at')
        .orderBy('id')
        .limit(1);
    if (!(await next().executeTakeFirst())) return null;
    const rows = await db
      .updateTable('moderation_jobs')
      .set({
        status: 'running',
        lease_owner: owner,
        lease_until: d.date(new Date(at.getTime() + leaseMs)),
        updated_at: now,
      })
      .where('id', '=', d.name === 'postgres' ? next().forUpdate().skipLocked() : next())
      .returningAll()
      .execute();
    return rows[0] ? this.#record(rows[0]) : null;
  }

  async removalStep(jobId: string, owner: string, batch: number, leaseMs: number, at: Date): Promise<RemovalStep> {
    const d = this.#db.dialect;
    const db = this.#db.db();
    const renewed = await db
      .updateTable('moderation_jobs')
      .set({ lease_until: d.date(new Date(at.getTime() + leaseMs)), updated_at: d.date(at) })
      .where('id', '=', jobId)
      .where('lease_owner', '=', owner)
      .where('status', '=', 'running')
      .returningAll()
      .execute();
    const job = renewed[0];
    if (!job || !job.target_id) return { removed: 0, releasedMedia: [], finished: false, leaseLost: true };
    const ids = await db
      .selectFrom('uploads')
      .select('id')
      .where('user_id', '=', job.target_id)
      .where('moderation', '<>', 'removed')
      .orderBy('created_at')
      .orderBy('id')
      .limit(batch)
      .execute();
    const step: RemovalStep = { removed: 0, releasedMedia: [], finished: false, leaseLost: false };
    const moderator = job.moderator_id ? { id: job.moderator_id, username: job.moderator_name ?? '' } : null;
    for (const { id } of ids) {
      const outcome = await this.#removeOne(jobId, id, { reason: job.reason, moderator, at });
      if (!outcome) continue;
      step.removed++;
      if (outcome.releasedMedia) step.releasedMedia.push(outcome.releasedMedia);
    }
    // Progress: what was removed, and what is left now (an upload in flight at the ban committed before it).
    const left = await remainingOf(db, job.target_id);
    step.finished = left === 0;
    await db
      .updateTable('moderation_jobs')
      .set((eb) => ({
        total: sql`${eb.ref('done')} + ${left}`,
        updated_at: d.date(at),
        ...(step.finished ? { status: 'done' as const, lease_owner: null, lease_until: null } : {}),
      }))
      .where('id', '=', jobId)
      .where('lease_owner', '=', owner)
      .execute();
    return step;
  }

  /** Removes one upload unless it is removed already, with its modlog line and the job's progress: one transaction. */
  async #removeOne(
    jobId: string,
    uploadId: string,
    opts: { reason: string; moderator: { id: string; username: string } | null; at: Date },
  ): Promise<{ releasedMedia: string | null } | null> {
    const d = this.#db.dialect;
    return this.#db.transaction(async (_em, db) => {
      const row = await lockForRemoval(db, d, uploadId);
      if (!row || row.moderation === 'removed') return null;
      const releasedMedia = await removeUpload(db, d, this.#similarity, row, {
        at: opts.at,
        line: { reason: opts.reason, moderator: opts.moderator },
      });
      await db
        .updateTable('moderation_jobs')
        .set((eb) => ({ done: sql`${eb.ref('done')} + 1`, updated_at: d.date(opts.at) }))
        .where('id', '=', jobId)
        .execute();
      return { releasedMedia };
    });
  }

  async release(jobId: string, owner: string): Promise<void> {
    await this.#db
      .db()
      .updateTable('moderation_jobs')
      .set({ lease_owner: null, lease_until: null })
      .where('id', '=', jobId)
      .where('lease_owner', '=', owner)
      .execute();
  }

  async fail(jobId: string, owner: string, error: string, at: Date, maxAttempts: number): Promise<void> {
    const d = this.#db.dialect;
    // Claimed again once a short back-off has passed, unless it has failed too often.
    await this.#db
      .db()
      .updateTable('moderation_jobs')
      .set((eb) => ({
        attempts: sql`${eb.ref('attempts')} + 1`,
        error: error.slice(0, 500),
        status: sql`case when ${eb.ref('attempts')} + 1 >= ${maxAttempts} then 'failed' else ${eb.ref('status')} end`,
        lease_owner: null,
        lease_until: d.date(new Date(at.getTime() + FAIL_BACKOFF_MS)),
        updated_at: d.date(at),
      }))
      .where('id', '=', jobId)
      .where('lease_owner', '=', owner)
      .execute();
  }

  #record(r: JobRow): JobRecord {
    const d = this.#db.dialect;
    return {
      id: r.id,
      kind: r.kind,
      status: r.status,
      done: Number(r.done),
      total: Number(r.total),
      target: { type: r.target_type, id: r.target_id },
      reason: r.reason,
      moderator: r.moderator_id ? { id: r.moderator_id, username: r.moderator_name ?? '' } : null,
      error: r.error,
      createdAt: d.readDate(r.created_at),
      updatedAt: d.readDate(r.updated_at),
    };
  }
}

/** A job whose run failed waits this long before it is claimed again. */
const FAIL_BACKOFF_MS = 5_000;
