/**
 * The profile counters (m027, issue 46) equal what they count, on SQLite and PostgreSQL, through every kind of
 * write: uploads made and deleted (their votes cascading out of their voters' counts), votes cast, changed,
 * withdrawn, moved out of the votes table and back (a vote-ring void and restore), counters of an upload moved, a
 * user deleted with everything of theirs; and m027's fill of the rows a database held before it. Each phase
 * compares the counters with the sums and counts over the rows, for every user.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { Database } from '../../src/store/database.ts';
import { insertUser } from '../support/users.ts';
import { insertImageUpload, withStoreDatabase } from '../support/store-db.ts';
import { FeedRepository } from '../../src/store/repositories/feed.repository.ts';
import { UploadRepository } from '../../src/store/repositories/upload.repository.ts';
import { similarityIndexFor } from '../../src/store/similarity/similarity-index.ts';

const AT = new Date(Date.UTC(2026, 1, 1));

const feedsOf = (db: Database) =>
  new FeedRepository(db, new UploadRepository(db, similarityIndexFor(db.dialect, 'multi-index-hashing')));

/** Every user's counters as the profile reads them, and as the rows say. */
async function compare(db: Database, phase: string): Promise<void> {
  const users = await db.db().selectFrom('users').select('id').execute();
  const repo = feedsOf(db);
  for (const { id } of users) {
    const own = await db
      .db()
      .selectFrom('uploads')
      .select((eb) => [eb.fn.countAll().as('n'), eb.fn.sum('upvotes').as('up'), eb.fn.sum('downvote_count').as('down')])
      .where('user_id', '=', id)
      .executeTakeFirstOrThrow();
    const cast = await db
      .db()
      .selectFrom('votes')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('user_id', '=', id)
      .executeTakeFirstOrThrow();
    assert.deepEqual(
      await repo.stats(id),
      {
        uploads: Number(own.n),
        upvotes_received: Number(own.up ?? 0),
        downvotes_received: Number(own.down ?? 0),
        votes_cast: Number(cast.n),
      },
      `${phase}: user ${id}`,
    );
  }
}

/** A vote as the vote path writes it: the row, and the upload's counters moved by it. */
async function vote(db: Database, userId: string, uploadId: string, value: 1 | -1 | 0): Promise<void> {
  const d = db.dialect;
  await db.transaction(async (_em, tx) => {
    const old = await tx
      .selectFrom('votes')
      .select('value')
      .where('user_id', '=', userId)
      .where('upload_id', '=', uploadId)
      .executeTakeFirst();
    const before = Number(old?.value ?? 0);
    if (value === 0)
      await tx.deleteFrom('votes').where('user_id', '=', userId).where('upload_id', '=', uploadId).execute();
    else if (old)
      await tx
        .updateTable('votes')
        .set({ value })
        .where('user_id', '=', userId)
        .where('upload_id', '=', uploadId)
        .execute();
    else
      await tx
        .insertInto('votes')
        .values({ user_id: userId, upload_id: uploadId, value, created_at: d.date(AT), updated_at: d.date(AT) })
        .execute();
    const up = (value === 1 ? 1 : 0) - (before === 1 ? 1 : 0);
    const down = (value === -1 ? 1 : 0) - (before === -1 ? 1 : 0);
    if (up || down)
      await tx
        .updateTable('uploads')
        .set({ upvotes: sql`upvotes + ${up}`, downvote_count: sql`downvote_count + ${down}` })
        .where('id', '=', uploadId)
        .execute();
  });
}

test('the profile counters equal the rows through uploads, votes, a void and restore, deletes', async () => {
  await withStoreDatabase('user-stats', AT, async (db) => {
    const users = [];
    for (let i = 0; i < 5; i++) users.push(await insertUser(db, AT));
    const uploads: string[] = [];
    for (const [i, u] of users.entries())
      for (let k = 0; k <= i; k++)
        uploads.push(await insertImageUpload(db, u, AT, { is_private: db.dialect.bool(k === 1) }));
    await compare(db, 'uploads made');

    // Everyone votes on every upload but their own, up or down; then some change their mind or withdraw.
    let n = 0;
    const owner = new Map<string, string>();
    for (const id of uploads) {
      const row = await db.db().selectFrom('uploads').select('user_id').where('id', '=', id).executeTakeFirstOrThrow();
      owner.set(id, row.user_id);
    }
    for (const u of users)
      for (const id of uploads) if (owner.get(id) !== u) await vote(db, u, id, n++ % 3 === 0 ? -1 : 1);
    await compare(db, 'votes cast');
    for (const [i, id] of uploads.entries()) {
      const voter = users.find((u) => u !== owner.get(id))!;
      await vote(db, voter, id, i % 2 === 0 ? 0 : -1);
    }
    await compare(db, 'votes changed and withdrawn');

    // A void as vote-ring.repository.ts does it: the rows out of votes (kept aside), the counters moved; then back.
    const ring = users.slice(0, 2);
    const taken = await db.db().selectFrom('votes').selectAll().where('user_id', 'in', ring).execute();
    await db.transaction(async (_em, tx) => {
      await tx.deleteFrom('votes').where('user_id', 'in', ring).execute();
      for (const v of taken)
        await tx
          .updateTable('uploads')
          .set({
            upvotes: sql`upvotes - ${Number(v.value) === 1 ? 1 : 0}`,
            downvote_count: sql`downvote_count - ${Number(v.value) === -1 ? 1 : 0}`,
          })
          .where('id', '=', v.upload_id)
          .execute();
    });
    await compare(db, 'a ring voided');
    for (const v of taken) await vote(db, v.user_id, v.upload_id, Number(v.value) as 1 | -1);
    await compare(db, 'the ring restored');

    // An upload deleted (its votes cascade), then a user with everything of theirs.
    await db.db().deleteFrom('uploads').where('id', '=', uploads.at(-1)!).execute();
    await compare(db, 'an upload deleted');
    await db.db().deleteFrom('users').where('id', '=', users[3]!).execute();
    await compare(db, 'a user deleted');
    const gone = await db
      .db()
      .selectFrom('user_upload_stats')
      .select('user_id')
      .where('user_id', '=', users[3]!)
      .execute();
    assert.deepEqual(gone, [], "the deleted user's counters went with them");
  });
});

test('m027 fills the counters from the rows a database held before it', async () => {
  await withStoreDatabase('user-stats-fill', AT, async (db, _owner, another) => {
    const [a, b] = [await insertUser(db, AT), await insertUser(db, AT)];
    const mine = await insertImageUpload(db, a, AT, {});
    await insertImageUpload(db, a, AT, { is_private: db.dialect.bool(true) });
    await vote(db, b, mine, 1);
    // The database as it was before m027: no counters, no triggers; then m027 runs again.
    const pg = db.dialect.name === 'postgres';
    for (const t of [
      'user_stats_user_insert',
      'user_stats_upload_insert',
      'user_stats_upload_delete',
      'user_stats_upload_counts',
      'user_stats_vote_insert',
      'user_stats_vote_delete',
    ]) {
      const on = t.includes('user_insert') ? 'users' : t.includes('vote') ? 'votes' : 'uploads';
      await sql.raw(pg ? `drop trigger ${t} on ${on}; drop function ${t}()` : `drop trigger ${t}`).execute(db.db());
    }
    await sql`drop table user_upload_stats`.execute(db.db());
    await sql`drop table user_vote_stats`.execute(db.db());
    await db.db().deleteFrom('schema_migrations').where('name', '=', 'm027-user-stats').execute();
    const again = await another(); // opening runs the migrations not recorded: m027 again
    await compare(again, 'filled by m027');
    assert.deepEqual(await feedsOf(again).stats(a), {
      uploads: 2,
      upvotes_received: 1,
      downvotes_received: 0,
      votes_cast: 0,
    });
    // And kept from then on.
    await vote(again, a, mine, -1);
    await compare(again, 'after m027');
  });
});
