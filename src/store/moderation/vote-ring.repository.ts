/**
 * The queue's vote-ring items (migrations m011, m026) and what the detector, the void and the restore need from the
 * votes (API.md Moderation, "Vote rings"; docs/vote-rings.md). Voiding is one transaction: the affected uploads are
 * locked in id order (the order a vote takes: upload row, then its votes), every vote of the ring's accounts on
 * them moves from the votes table to `voided_votes` (flagged with the item), and each upload's counters and ranks
 * move by exactly the votes moved, so the counters still equal the votes table. Restoring is the same walk back.
 */
import type { PageStart } from '../../domain/feeds/cursor.ts';
import { emitEvent } from '../webhooks/outbox.ts';
import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type {
  NewVoteRing,
  RecentVotes,
  RestoreOutcome,
  VoteRingAction,
  VoteRingRecord,
  VoteRingStore,
} from '../../domain/moderation/vote-rings.service.ts';
import type { AccountFacts } from '../../domain/votes/vote-facts.ts';
import type { RingVote } from '../../domain/votes/vote-rings.ts';
import type { Database } from '../database.ts';
import type { DB } from '../database-types.ts';
import type { Dialect } from '../dialect.ts';
import { lockUpload, setVoteCounts } from '../upload-rows.ts';
import { appendModlog } from './modlog.ts';
import { reachMilestones } from '../webhooks/outbox.ts';

/** Ids per `in (…)` list: well under SQLite's and PostgreSQL's bound-parameter limits. */
const CHUNK = 500;

const chunks = <T>(list: readonly T[]): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += CHUNK) out.push(list.slice(i, i + CHUNK));
  return out;
};

type RingRow = {
  id: string;
  status: string;
  accounts: string;
  evidence: string;
  created_at: unknown;
  closed_at: unknown;
  closed_by: string | null;
  closer: string | null;
  action: string | null;
  reason: string | null;
  voided_votes: number | string | null;
  restored_at: unknown;
  restored_by: string | null;
  restorer: string | null;
  restored_votes: number | string | null;
  skipped_votes: number | string | null;
};

/** Rows per purge statement: each is a short write, however much there is to purge. */
const PURGE_BATCH = 5000;

export class VoteRingRepository implements VoteRingStore {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /**
   * Two reads: the window's votes (with their network hash and user-agent family), then the window's voters (their
   * rows: creation, sign-up facts; and their counts of uploads, reports and votes, by index). Linear in the window's
   * votes and voters (bench/vote-facts-read.bench.ts).
   */
  async recentVotes(since: Date): Promise<RecentVotes> {
    const d = this.#db.dialect;
    const db = this.#db.db();
    const rows = await db
      .selectFrom('votes as v')
      .innerJoin('uploads as u', 'u.id', 'v.upload_id')
      .select(['v.user_id', 'v.upload_id', 'v.value', 'v.updated_at', 'v.net', 'v.ua', 'u.user_id as author_id'])
      .where('v.updated_at', '>=', d.date(since))
      .execute();
    // One string per id (and per network hash), shared by all its votes (each row brings its own copies).
    const ids = new Map<string, string>();
    const one = (id: string) => {
      const known = ids.get(id);
      if (known !== undefined) return known;
      ids.set(id, id);
      return id;
    };
    const votes: RingVote[] = rows.map((r) => ({
      userId: one(r.user_id),
      uploadId: one(r.upload_id),
      authorId: one(r.author_id),
      value: Number(r.value) > 0 ? 1 : -1,
      at: d.readDate(r.updated_at).getTime(),
      net: r.net === null ? null : one(r.net),
      ua: r.ua === null ? null : one(r.ua),
    }));
    // The voters' facts in one statement: each voter's row, and its activity counted by correlated index reads
    // (uploads by user, reports by user, the votes' primary key), so linear in the voters and their activity.
    const count = (table: 'uploads' | 'reports' | 'votes', as: string) =>
      sql<number | string>`(select count(*) from ${sql.table(table)} c where c.user_id = w.id)`.as(as);
    const voters = await db
      .with('voters', (q) =>
        q.selectFrom('votes').select('user_id').distinct().where('updated_at', '>=', d.date(since)),
      )
      .selectFrom('voters')
      .innerJoin('users as w', 'w.id', 'voters.user_id')
      .select(['w.id', 'w.created_at', 'w.signup_net', 'w.signup_ua'])
      .select([count('uploads', 'uploads'), count('reports', 'reports'), count('votes', 'votes')])
      .execute();
    const facts = new Map<string, AccountFacts>();
    for (const u of voters)
      facts.set(one(u.id), {
        createdAt: d.readDate(u.created_at).getTime(),
        signupNet: u.signup_net === null ? null : one(u.signup_net),
        signupUa: u.signup_ua === null ? null : one(u.signup_ua),
        uploads: Number(u.uploads),
        reports: Number(u.reports),
        votes: Number(u.votes),
      });
    return { votes, facts };
  }

  async add(rings: NewVoteRing[], at: Date): Promise<number> {
    const d = this.#db.dialect;
    let queued = 0;
    for (const ring of rings) {
      const done = await this.#db.transaction(async (_em, db) => {
        // Open with this key, or dismissed with it, or voided then restored (a moderator judged it honest): not
        // again. (Voided and not restored: the accounts voted again, so it is new.)
        const known = await db
          .selectFrom('vote_rings')
          .select('id')
          .where('ring_key', '=', ring.key)
          .where((w) => w.or([w('status', '=', 'open'), w('action', 'in', ['dismiss', 'restore'])]))
          .executeTakeFirst();
        if (known) return false;
        // The same ring seen again with accounts added or gone: its open item is brought up to date.
        let same = db
          .selectFrom('vote_rings')
          .select(['id', 'accounts'])
          .where('target_key', '=', ring.targetKey)
          .where('status', '=', 'open');
        if (d.name === 'postgres') same = same.forUpdate();
        for (const row of await same.execute()) {
          const before = JSON.parse(row.accounts) as string[];
          const now = new Set(ring.accounts);
          if (before.filter((x) => now.has(x)).length * 2 < before.length) continue;
          await db
            .updateTable('vote_rings')
            .set({
              ring_key: ring.key,
              accounts: JSON.stringify([...new Set([...before, ...ring.accounts])].sort()),
              evidence: JSON.stringify(ring.evidence),
            })
            .where('id', '=', row.id)
            .execute();
          return false;
        }
        const inserted = await db
          .insertInto('vote_rings')
          .values({
            id: randomUUID(),
            ring_key: ring.key,
            target_key: ring.targetKey,
            status: 'open',
            accounts: JSON.stringify(ring.accounts),
            evidence: JSON.stringify(ring.evidence),
            created_at: d.date(at),
          })
          // Another process queued it meanwhile (the unique key among open items).
          .onConflict((oc) =>
            oc
              .column('ring_key')
              .where(sql<boolean>`status = 'open'`)
              .doNothing(),
          )
          .returning('id')
          .execute();
        if (!inserted.length) return false;
        // A new queue item: the admins' webhooks hear of it with the upload items' event.
        await emitEvent(db, d, {
          type: 'moderation.item_created',
          ownerId: null,
          data: { reason: 'vote_ring', vote_ring: { id: inserted[0]!.id, accounts: ring.accounts.length } },
          at,
        });
        return true;
      });
      if (done) queued++;
    }
    return queued;
  }

  async count(status: 'open' | 'closed'): Promise<number> {
    const row = await this.#db
      .db()
      .selectFrom('vote_rings')
      .select((e) => e.fn.countAll<number | string>().as('n'))
      .where('status', '=', status)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async list(status: 'open' | 'closed', start: PageStart, limit: number): Promise<VoteRingRecord[]> {
    const d = this.#db.dialect;
    let q = this.#select(this.#db.db()).where('r.status', '=', status);
    const after = 'after' in start ? start.after.pos : null;
    if (status === 'open') {
      if (after) q = q.where(sql<boolean>`(r.created_at, r.id) > (${d.date(after.createdAt)}, ${after.id})`);
      q = q.orderBy('r.created_at', 'asc').orderBy('r.id', 'asc');
    } else {
      if (after) q = q.where(sql<boolean>`(r.closed_at, r.id) < (${d.date(after.createdAt)}, ${after.id})`);
      q = q.orderBy('r.closed_at', 'desc').orderBy('r.id', 'desc');
    }
    const rows = (await q
      .offset('offset' in start ? start.offset : 0)
      .limit(limit)
      .execute()) as RingRow[];
    return this.#records(this.#db.db(), rows);
  }

  close(
    id: string,
    action: 'void' | 'dismiss',
    opts: { moderator: { id: string; username: string }; reason: string; at: Date },
  ): Promise<{ record: VoteRingRecord; voided: number; uploads: number } | 'closed' | null> {
    const d = this.#db.dialect;
    return this.#db.transaction(async (_em, db) => {
      let q = db.selectFrom('vote_rings').select(['status', 'accounts']).where('id', '=', id);
      if (d.name === 'postgres') q = q.forUpdate();
      const item = await q.executeTakeFirst();
      if (!item) return null;
      if (item.status !== 'open') return 'closed';
      const accounts = JSON.parse(item.accounts) as string[];
      let voided = 0;
      let uploads = 0;
      if (action === 'void') {
        ({ voided, uploads } = await voidVotes(db, d, id, accounts, opts.at));
        await appendModlog(
          db,
          d,
          [
            {
              action: 'void_votes',
              target: { type: 'vote_ring', id },
              reason: opts.reason,
              moderator: opts.moderator,
            },
          ],
          opts.at,
        );
      }
      await db
        .updateTable('vote_rings')
        .set({
          status: 'closed',
          closed_at: d.date(opts.at),
          closed_by: opts.moderator.id,
          action,
          reason: opts.reason,
          voided_votes: action === 'void' ? voided : null,
        })
        .where('id', '=', id)
        .execute();
      const rows = (await this.#select(db).where('r.id', '=', id).execute()) as RingRow[];
      const [record] = await this.#records(db, rows);
      return { record: record!, voided, uploads };
    });
  }

  restore(
    id: string,
    opts: { moderator: { id: string; username: string }; reason: string; at: Date; voidedAfter: Date },
  ): Promise<RestoreOutcome | 'not_voided' | 'expired' | null> {
    const d = this.#db.dialect;
    return this.#db.transaction(async (_em, db) => {
      let q = db.selectFrom('vote_rings').select(['action', 'closed_at', 'voided_votes']).where('id', '=', id);
      if (d.name === 'postgres') q = q.forUpdate();
      const item = await q.executeTakeFirst();
      if (!item) return null;
      if (item.action !== 'void' || item.closed_at === null) return 'not_voided';
      if (d.readDate(item.closed_at).getTime() < opts.voidedAfter.getTime()) return 'expired';
      const { restored, uploads } = await restoreVotes(db, d, id, opts.at);
      // Kept votes of uploads or accounts deleted since went with them (foreign keys): skipped too.
      const skipped = Math.max(0, Number(item.voided_votes ?? 0) - restored);
      await db.deleteFrom('voided_votes').where('voided_by', '=', id).execute();
      await db
        .updateTable('vote_rings')
        .set({
          action: 'restore',
          restored_at: d.date(opts.at),
          restored_by: opts.moderator.id,
          restored_votes: restored,
          skipped_votes: skipped,
        })
        .where('id', '=', id)
        .execute();
      const why = opts.reason ? `: ${opts.reason}` : '';
      await appendModlog(
        db,
        d,
        [
          {
            action: 'void_votes',
            target: { type: 'vote_ring', id },
            reason: `restore of the void${why} (${restored} votes restored, ${skipped} skipped)`,
            moderator: opts.moderator,
          },
        ],
        opts.at,
      );
      const rows = (await this.#select(db).where('r.id', '=', id).execute()) as RingRow[];
      const [record] = await this.#records(db, rows);
      return { record: record!, restored, skipped, uploads };
    });
  }

  async purge(opts: { factsBefore: Date; voidedBefore: Date }): Promise<{ facts: number; voided: number }> {
    const d = this.#db.dialect;
    const db = this.#db.db();
    const before = d.date(opts.factsBefore);
    let facts = 0;
    // In batches (each its own short write), until a batch finds less than a full one.
    const batches = async (run: () => Promise<{ numUpdatedRows?: bigint; numDeletedRows?: bigint }>) => {
      let total = 0;
      for (;;) {
        const r = await run();
        const n = Number(r.numUpdatedRows ?? r.numDeletedRows ?? 0n);
        total += n;
        if (n < PURGE_BATCH) return total;
      }
    };
    // First the voided votes past the restore limit (no restore can bring them back any more), then the facts.
    const voided = await batches(() =>
      db
        .deleteFrom('voided_votes')
        .where(
          sql<boolean>`(voided_by, user_id, upload_id) in (${db
            .selectFrom('voided_votes')
            .select(['voided_by', 'user_id', 'upload_id'])
            .where('voided_at', '<', d.date(opts.voidedBefore))
            .limit(PURGE_BATCH)})`,
        )
        .executeTakeFirst(),
    );
    facts += await batches(() =>
      db
        .updateTable('users')
        .set({ signup_net: null, signup_ua: null })
        .where(
          'id',
          'in',
          db
            .selectFrom('users')
            .select('id')
            .where('created_at', '<', before)
            .where((w) => w.or([w('signup_net', 'is not', null), w('signup_ua', 'is not', null)]))
            .limit(PURGE_BATCH),
        )
        .executeTakeFirst(),
    );
    for (const table of ['votes', 'voided_votes'] as const) {
      facts += await batches(() =>
        db
          .updateTable(table)
          .set({ net: null, ua: null })
          .where(
            sql<boolean>`(user_id, upload_id) in (${db
              .selectFrom(table)
              .select(['user_id', 'upload_id'])
              .where('updated_at', '<', before)
              .where((w) => w.or([w('net', 'is not', null), w('ua', 'is not', null)]))
              .limit(PURGE_BATCH)})`,
          )
          .executeTakeFirst(),
      );
    }
    return { facts, voided };
  }

  #select(db: Kysely<DB>) {
    return db
      .selectFrom('vote_rings as r')
      .leftJoin('users as m', 'm.id', 'r.closed_by')
      .leftJoin('users as s', 's.id', 'r.restored_by')
      .select([
        'r.id',
        'r.status',
        'r.accounts',
        'r.evidence',
        'r.created_at',
        'r.closed_at',
        'r.closed_by',
        'm.username as closer',
        'r.action',
        'r.reason',
        'r.voided_votes',
        'r.restored_at',
        'r.restored_by',
        's.username as restorer',
        'r.restored_votes',
        'r.skipped_votes',
      ]);
  }

  async #records(db: Kysely<DB>, rows: RingRow[]): Promise<VoteRingRecord[]> {
    const d = this.#db.dialect;
    const ids = [...new Set(rows.flatMap((r) => JSON.parse(r.accounts) as string[]))];
    const users = new Map<string, VoteRingRecord['accounts'][number]>();
    for (const part of chunks(ids)) {
      const found = await db
        .selectFrom('users')
        .select(['id', 'username', 'role', 'created_at'])
        .where('id', 'in', part)
        .execute();
      for (const u of found)
        users.set(u.id, {
          id: u.id,
          username: u.username,
          role: u.role as 'user' | 'admin',
          createdAt: d.readDate(u.created_at),
        });
    }
    return rows.map((r) => ({
      id: r.id,
      status: r.status as 'open' | 'closed',
      accounts: (JSON.parse(r.accounts) as string[]).flatMap((a) => {
        const u = users.get(a);
        return u ? [u] : [];
      }),
      evidence: JSON.parse(r.evidence) as VoteRingRecord['evidence'],
      createdAt: d.readDate(r.created_at),
      closedAt: r.closed_at === null ? null : d.readDate(r.closed_at),
      closedBy: r.closed_by ? { id: r.closed_by, username: r.closer ?? '' } : null,
      action: r.action as VoteRingAction | null,
      reason: r.reason,
      voidedVotes: r.voided_votes === null ? null : Number(r.voided_votes),
      restoredAt: r.restored_at === null ? null : d.readDate(r.restored_at),
      restoredBy: r.restored_by ? { id: r.restored_by, username: r.restorer ?? '' } : null,
      restoredVotes: r.restored_votes === null ? null : Number(r.restored_votes),
      skippedVotes: r.skipped_votes === null ? null : Number(r.skipped_votes),
    }));
  }
}

/**
 * Moves every vote of `accounts` out of the votes table into `voided_votes` (flagged with the item `ringId`) and
 * moves each affected upload's counters by exactly what went, inside the caller's transaction. The uploads are
 * locked in id order, then their votes by these accounts are read again under the locks (a vote cast meanwhile is
 * counted), moved, and subtracted. Repeats while votes of the accounts remain (one cast on another upload during
 * the pass).
 */
async function voidVotes(
  db: Kysely<DB>,
  d: Dialect,
  ringId: string,
  accounts: string[],
  at: Date,
): Promise<{ voided: number; uploads: number }> {
  let voided = 0;
  const touched = new Set<string>();
  for (let pass = 0; pass < 5; pass++) {
    const ids = new Set<string>();
    for (const part of chunks(accounts)) {
      const rows = await db.selectFrom('votes').select('upload_id').where('user_id', 'in', part).execute();
      for (const r of rows) ids.add(r.upload_id);
    }
    if (!ids.size) break;
    for (const uploadId of [...ids].sort()) {
      const upload = await lockUpload(db, d, uploadId, ['upvotes', 'downvote_count', 'created_at']);
      if (!upload) continue;
      let up = 0;
      let down = 0;
      for (const part of chunks(accounts)) {
        const gone = await db
          .deleteFrom('votes')
          .where('upload_id', '=', uploadId)
          .where('user_id', 'in', part)
          .returning(['user_id', 'value', 'created_at', 'updated_at', 'net', 'ua'])
          .execute();
        if (!gone.length) continue;
        await db
          .insertInto('voided_votes')
          .values(
            gone.map((g) => ({
              voided_by: ringId,
              user_id: g.user_id,
              upload_id: uploadId,
              value: Number(g.value),
              created_at: d.date(d.readDate(g.created_at)),
              updated_at: d.date(d.readDate(g.updated_at)),
              net: g.net,
              ua: g.ua,
              voided_at: d.date(at),
            })),
          )
          .execute();
        for (const g of gone) {
          if (Number(g.value) > 0) up++;
          else down++;
        }
      }
      if (!up && !down) continue;
      voided += up + down;
      touched.add(uploadId);
      const counts = { up: Number(upload.upvotes) - up, down: Number(upload.downvote_count) - down };
      await setVoteCounts(db, d, { id: uploadId, createdAt: d.readDate(upload.created_at) }, counts, at);
    }
  }
  return { voided, uploads: touched.size };
}

/**
 * Puts the votes item `ringId` voided back into the votes table, inside the caller's transaction: per upload, in
 * id order, under its lock, each kept vote whose voter has no vote there now (a vote cast since the void wins) is
 * inserted as it was (value, times, facts), and the counters move by exactly those. A removed upload (a tombstone
 * keeps no votes) takes none back. The caller deletes the kept rows after.
 */
async function restoreVotes(
  db: Kysely<DB>,
  d: Dialect,
  ringId: string,
  at: Date,
): Promise<{ restored: number; uploads: number }> {
  const ids = await db
    .selectFrom('voided_votes')
    .select('upload_id')
    .distinct()
    .where('voided_by', '=', ringId)
    .execute();
  let restored = 0;
  let uploads = 0;
  for (const uploadId of ids.map((r) => r.upload_id).sort()) {
    const upload = await lockUpload(db, d, uploadId, ['upvotes', 'downvote_count', 'created_at', 'moderation']);
    if (!upload || upload.moderation === 'removed') continue;
    const kept = await db
      .selectFrom('voided_votes')
      .select(['user_id', 'value', 'created_at', 'updated_at', 'net', 'ua'])
      .where('voided_by', '=', ringId)
      .where('upload_id', '=', uploadId)
      .execute();
    const voters = new Set<string>();
    for (const part of chunks(kept.map((k) => k.user_id))) {
      const live = await db
        .selectFrom('votes')
        .select('user_id')
        .where('upload_id', '=', uploadId)
        .where('user_id', 'in', part)
        .execute();
      for (const l of live) voters.add(l.user_id);
    }
    const back = kept.filter((k) => !voters.has(k.user_id));
    if (!back.length) continue;
    for (const part of chunks(back)) {
      await db
        .insertInto('votes')
        .values(
          part.map((k) => ({
            user_id: k.user_id,
            upload_id: uploadId,
            value: Number(k.value),
            created_at: d.date(d.readDate(k.created_at)),
            updated_at: d.date(d.readDate(k.updated_at)),
            net: k.net,
            ua: k.ua,
          })),
        )
        .execute();
    }
    const up = back.filter((k) => Number(k.value) > 0).length;
    const down = back.length - up;
    restored += back.length;
    uploads++;
    const before = Number(upload.upvotes);
    const counts = { up: before + up, down: Number(upload.downvote_count) + down };
    await setVoteCounts(db, d, { id: uploadId, createdAt: d.readDate(upload.created_at) }, counts, at);
    if (up) await reachMilestones(db, d, uploadId, before, counts.up, at);
  }
  return { restored, uploads };
}
