/**
 * What the vote-ring detector's read of the window costs with the evidence of issue 45 (docs/vote-rings.md):
 * `VoteRingRepository.recentVotes` (the window's votes with their network hash and user-agent family, then per 500
 * voters their sign-up facts and counts of uploads, reports and votes) against the read it replaced (the window's
 * votes joined with their uploads and their voters' creation time), measured in the same rounds on a seeded
 * database, per 1M votes read.
 *
 *   node --experimental-strip-types bench/vote-facts-read.bench.ts [--db sqlite|postgres] [--votes N] [--rounds N]
 */
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { VoteRingRepository } from '../src/store/moderation/vote-ring.repository.ts';
import type { Database } from '../src/store/database.ts';
import { createBenchDatabase, type DbKind } from './support/bench-database.ts';
import { rng, seedUploads, seedUsers } from './support/seed.ts';
import { median } from './support/stats.ts';

const { values } = parseArgs({
  options: {
    db: { type: 'string', default: 'sqlite' },
    votes: { type: 'string', default: '300000' },
    rounds: { type: 'string', default: '5' },
  },
});
const kind = values.db as DbKind;
const votes = Number(values.votes);
const rounds = Number(values.rounds);

/** The read before issue 45 (vote-ring.repository.ts at 34dc6d1), with the same row handling. */
async function oldRead(db: Database, since: Date): Promise<number> {
  const d = db.dialect;
  const rows = await db
    .db()
    .selectFrom('votes as v')
    .innerJoin('uploads as u', 'u.id', 'v.upload_id')
    .innerJoin('users as w', 'w.id', 'v.user_id')
    .select(['v.user_id', 'v.upload_id', 'v.value', 'v.updated_at', 'u.user_id as author_id', 'w.created_at'])
    .where('v.updated_at', '>=', d.date(since))
    .execute();
  const createdAt = new Map<string, number>();
  const ids = new Map<string, string>();
  const one = (id: string) => {
    const known = ids.get(id);
    if (known !== undefined) return known;
    ids.set(id, id);
    return id;
  };
  const out = rows.map((r) => {
    if (!createdAt.has(r.user_id)) createdAt.set(r.user_id, d.readDate(r.created_at).getTime());
    return {
      userId: one(r.user_id),
      uploadId: one(r.upload_id),
      authorId: one(r.author_id),
      value: Number(r.value) > 0 ? 1 : -1,
      at: d.readDate(r.updated_at).getTime(),
    };
  });
  if (out.length !== rows.length) throw new Error('unreachable');
  return rows.length;
}

const bench = await createBenchDatabase(kind);
const db = await bench.open();
try {
  const r = rng(45);
  const users = await seedUsers(db, Math.max(100, Math.round(votes / 10)));
  const t0 = performance.now();
  await seedUploads(db, { count: Math.max(100, Math.round(votes / 15)), users, r, votes, newest: new Date() });
  // Every vote and sign-up with facts, as after a month of recording them (32 hex digits, a family).
  const hashOf = kind === 'postgres' ? sql`replace(user_id::text, '-', '')` : sql`replace(user_id, '-', '')`;
  const idHash = kind === 'postgres' ? sql`replace(id::text, '-', '')` : sql`replace(id, '-', '')`;
  await sql`update votes set net = ${hashOf}, ua = 'chrome'`.execute(db.db());
  await sql`update users set signup_net = ${idHash}, signup_ua = 'firefox'`.execute(db.db());
  // As autovacuum leaves a table after such an update (its dead row versions gone, its statistics fresh).
  if (kind === 'postgres')
    for (const t of ['votes', 'users', 'uploads']) await sql`vacuum analyze ${sql.table(t)}`.execute(db.db());
  else await sql`analyze`.execute(db.db());
  console.log(`seeded ${votes} votes in ${((performance.now() - t0) / 1000).toFixed(1)} s (${kind})`);
  const repo = new VoteRingRepository(db);
  const since = new Date(0);
  const before: number[] = [];
  const now: number[] = [];
  let read = 0;
  for (let i = 0; i < rounds; i++) {
    let t = performance.now();
    read = await oldRead(db, since);
    before.push(performance.now() - t);
    t = performance.now();
    const got = await repo.recentVotes(since);
    now.push(performance.now() - t);
    if (got.votes.length !== read) throw new Error(`read ${got.votes.length} votes, the old read ${read}`);
  }
  // The two statements of recentVotes apart (EXPLAIN ANALYZE on PostgreSQL), to see where the time goes.
  if (kind === 'postgres') {
    const win = sql`select v.user_id, v.upload_id, v.value, v.updated_at, v.net, v.ua, u.user_id as author_id
      from votes v join uploads u on u.id = v.upload_id where v.updated_at >= ${since}`;
    const who = sql`with voters as (select distinct user_id from votes where updated_at >= ${since})
      select w.id, (select count(*) from uploads c where c.user_id = w.id),
        (select count(*) from reports c where c.user_id = w.id), (select count(*) from votes c where c.user_id = w.id)
      from voters join users w on w.id = voters.user_id`;
    for (const q of [win, who]) {
      const plan = await sql<{ 'QUERY PLAN': string }>`explain analyze ${q}`.execute(db.db());
      console.log(plan.rows.map((p) => p['QUERY PLAN']).join('\n'));
    }
  }
  const perM = (ms: number) => ((ms / read) * 1e6) / 1000;
  console.log(
    `${kind}: ${read} votes, ${users.length} voters; median of ${rounds}: ` +
      `old read ${median(before).toFixed(0)} ms (${perM(median(before)).toFixed(2)} s per 1M votes), ` +
      `recentVotes with facts ${median(now).toFixed(0)} ms (${perM(median(now)).toFixed(2)} s per 1M votes), ` +
      `ratio ${(median(now) / median(before)).toFixed(2)}`,
  );
} finally {
  await db.close();
  await bench.dispose();
}
