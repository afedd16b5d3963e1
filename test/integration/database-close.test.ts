/**
 * Closing a PostgreSQL database ends even when a connection was checked out and never given back
 * (src/store/database.ts, Checkouts): a pool's end() waits for every client in use, and one that its holder never
 * released once held a test's close(), and its process, for 14 minutes. Runs on the PostgreSQL pass; no wall-clock
 * assertion: close() either ends or the test fails at a generous limit, and the server is asked which connections
 * are left.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { openDatabase } from '../../src/store/database.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres, TEST_PG_URL } from '../support/env.ts';
import { pollUntil, until } from '../support/budget.ts';

const skip = !onPostgres && 'PostgreSQL pass only';

test(
  'close() ends when connections of the main pool and of the readers are held and never released, and ends them',
  { skip },
  async () => {
    const database = await createTestDatabase();
    const admin = new pg.Client({ connectionString: TEST_PG_URL });
    await admin.connect();
    try {
      const db = await openDatabase({ databaseUrl: database.url, sqlitePath: '', pgReaders: 1 });
      // Holders that never give their connection back: each runs one statement, then waits for ever.
      let held = 0;
      const hold = (kysely: ReturnType<typeof db.read>) =>
        void kysely
          .connection()
          .execute(async (c) => {
            await c.selectNoFrom((eb) => eb.val(1).as('x')).execute();
            held++;
            return new Promise<never>(() => {});
          })
          .catch(() => {});
      hold(db.db());
      hold(db.read());
      await until(() => held === 2);
      const backends = async () =>
        Number(
          (
            await admin.query<{ n: string }>('select count(*) as n from pg_stat_activity where datname = $1', [
              new URL(database.url).pathname.slice(1),
            ])
          ).rows[0]!.n,
        );
      assert.ok((await backends()) >= 2, 'the held connections are open');

      let closed = false;
      void db.close().then(() => (closed = true));
      await pollUntil(() => closed, 'close() to end with connections held', 60_000);
      // The server saw them go (a closed socket ends its backend at once; allow it a moment).
      await pollUntil(async () => (await backends()) === 0, 'no connection left to the database', 5_000);
    } finally {
      await admin.end();
      await database.drop();
    }
  },
);
