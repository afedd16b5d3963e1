/**
 * The queue's vote-ring items (migration m011) and what the detector and the void need from the votes
 * (API.md Moderation, "Vote rings"). Voiding is one transaction: the affected uploads are locked in id order (the
 * order a vote takes: upload row, then its votes), every vote of the ring's accounts on them is deleted, and each
 * upload's counters and ranks move by exactly the votes deleted, so the counters still equal the votes table.
 */
import type { PageStart } from '../../domain/feeds/cursor.ts';
import { emitEvent } from '../webhooks/outbox.ts';
import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type {
  NewVoteRing,
  VoteRingAction,
  VoteRingRecord,
  VoteRingStore,
} from '../../domain/moderation/vote-rings.service.ts';
import type { RingVote } from '../../domain/votes/vote-rings.ts';
import type { Database } from '../database.ts';
import type { DB } from '../database-types.ts';
import type { Dialect } from '../dialect.ts';
import { lockUpload, setVoteCounts } from '../upload-rows.ts';

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
};

export class VoteRingRepository implements VoteRingStore {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  async recentVotes(since: Date): Promise<{ votes: RingVote[]; createdAt: Map<string, number> }> {
    const d = this.#db.dialect;
    const rows = await this.#db
      .db()
      .selectFrom('votes as v')
      .innerJoin('uploads as u', 'u.id', 'v.upload_id')
      .innerJoin('users as w', 'w.id', 'v.user_id')
      .select(['v.user_id', 'v.upload_id', 'v.value', 'v.updated_at', 'u.user_id as author_id', 'w.created_at'])
      .where('v.updated_at', '>=', d.date(since))
      .execute();
    const createdAt = new Map<string, number>();
    // One string per id, shared by all its votes (each row brings its own copies).
    const ids = new Map<string, string>();
    const one = (id: string) => {
      const known = ids.get(id);
      if (known !== undefined) return known;
      ids.set(id, id);
      return id;
    };
    const votes: RingVote[] = rows.map((r) => {
      if (!createdAt.has(r.user_id)) createdAt.set(r.user_id, d.readDate(r.created_at).getTime());
      return {
        userId: one(r.user_id),
        uploadId: one(r.upload_id),
        authorId: one(r.author_id),
        value: Number(r.value) > 0 ? 1 : -1,
        at: d.readDate(r.updated_at).getTime(),
      };
    });
    return { votes, createdAt };
  }

  async add(rings: NewVoteRing[], at: Date): Promise<number> {
    const d = this.#db.dialect;
    let queued = 0;
    for (const ring of rings) {
      const done = await this.#db.transaction(async (_em, db) => {
        // Open with this key, or dismissed with it: not again. (Voided: the accounts voted again, so it is new.)
        const known = await db
          .selectFrom('vote_rings')
          .select('id')
          .where('ring_key', '=', ring.key)
          .where((w) => w.or([w('status', '=', 'open'), w('action', '=', 'dismiss')]))
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
    action: VoteRingAction,
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
      if (action === 'void') ({ voided, uploads } = await voidVotes(db, d, accounts, opts.at));
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

  #select(db: Kysely<DB>) {
    return db
      .selectFrom('vote_rings as r')
      .leftJoin('users as m', 'm.id', 'r.closed_by')
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
    }));
  }
}

/**
 * Deletes every vote of `accounts` and moves each affected upload's counters by exactly what went, inside the
 * caller's transaction. The uploads are locked in id order, then their votes by these accounts are read again
 * under the locks (a vote cast meanwhile is counted), deleted, and subtracted. Repeats while votes of the accounts
 * remain (one cast on another upload during the pass).
 */
async function voidVotes(
  db: Kysely<DB>,
  d: Dialect,
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
          .returning('value')
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
