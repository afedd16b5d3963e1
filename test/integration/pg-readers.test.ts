/**
 * PostgreSQL's long reads run on a pool of their own (`pgReaders`, src/store/database.ts), on a real database: no more
 * than that many run at once, a short read on the main pool is not held up behind them, a read sees every write
 * committed before it, rows come back typed as on the main pool, and closing the database ends the pool. Runs on the
 * PostgreSQL pass. No wall-clock assertion: which backend ran each read, and what answered first, are compared.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres } from '../support/env.ts';
import { isDatabaseUnavailable } from '../../src/store/dialect.ts';
import { until } from '../support/budget.ts';

const skip = !onPostgres && 'PostgreSQL pass only';
let pg: Awaited<ReturnType<typeof createTestDatabase>> | null = null;
let db: Database;

before(async () => {
  if (skip) return;
  pg = await createTestDatabase();
  db = await openDatabase({ databaseUrl: pg.url, sqlitePath: '', pgReaders: 2 });
});
after(async () => {
  if (skip) return;
  await db?.close();
  await pg?.drop();
});

/** A read that keeps its backend busy for a while (no wall-clock assertion rests on it) and names that backend. */
const slowRead = (seconds: number) =>
  sql<{ pid: number }>`select pg_backend_pid() as pid, pg_sleep(${seconds})`.execute(db.read());

test(
  'at most pgReaders long reads run at once; a short read on the main pool answers meanwhile',
  { skip },
  async () => {
    const order: string[] = [];
    const reads = Array.from({ length: 6 }, (_, i) =>
      slowRead(0.2).then((r) => {
        order.push(`read ${i}`);
        return r.rows[0]!.pid;
      }),
    );
    // Sent after the six: the main pool's connections are not the readers', so it does not wait behind them.
    const short = sql<{ ok: number }>`select 1 as ok`.execute(db.db()).then(() => order.push('main'));
    // Meanwhile, on the main pool, PostgreSQL is asked how many backends run one of the reads: never more than two.
    const running = async () => {
      const { rows } = await sql<{ n: string }>`select count(*) as n from pg_stat_activity
        where datname = current_database() and state = 'active'
        and query like 'select pg_backend_pid() as pid%'`.execute(db.db());
      return Number(rows[0]!.n);
    };
    const seen: number[] = [];
    while (order.filter((o) => o.startsWith('read')).length < 5) {
      seen.push(await running());
      await new Promise((r) => setTimeout(r, 10));
    }
    const pids = await Promise.all(reads);
    await short;
    assert.equal(new Set(pids).size, 2, `backends that ran the six reads: ${[...new Set(pids)].join(', ')}`);
    assert.equal(order[0], 'main', `answered in the order ${order.join(', ')}`);
    assert.ok(Math.max(...seen) === 2, `backends running a read at once, sampled: ${seen.join(', ')}`);
  },
);

test('a read sees every write committed before it, typed as on the main pool', { skip }, async () => {
  for (let i = 0; i < 10; i++) {
    const id = randomUUID();
    const at = new Date(Date.UTC(2026, 10, 28, 8, i));
    await db.transaction((_em, tx) =>
      tx
        .insertInto('tags')
        .values({ id, name: `tag ${i}`, slug: `tag-${i}`, upload_count: i, created_at: db.dialect.date(at) })
        .execute(),
    );
    const q = (k: ReturnType<Database['read']>) =>
      k.selectFrom('tags').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    const [onReaders, onMain] = await Promise.all([q(db.read()), q(db.db())]);
    assert.deepEqual(onReaders, onMain);
    assert.equal(db.dialect.readDate(onReaders.created_at).getTime(), at.getTime());
    const count = await db
      .read()
      .selectFrom('tags')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    assert.equal(Number(count.n), i + 1);
  }
});

test('closing the database ends the readers’ connections', { skip }, async () => {
  const other = await openDatabase({ databaseUrl: pg!.url, sqlitePath: '', pgReaders: 2 });
  const pid = (await slowRead(0).then(() => sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(other.read())))
    .rows[0]!.pid;
  await other.close();
  // A closed connection's backend leaves pg_stat_activity shortly after: wait for it, do not time it.
  await until(async () => {
    const { rows } = await sql<{ n: string }>`select count(*) as n from pg_stat_activity where pid = ${pid}`.execute(
      db.db(),
    );
    return Number(rows[0]!.n) === 0;
  }, 50);
});

test(
  'a read that waits past the connection timeout for a reader fails as the database being busy (503)',
  { skip },
  async () => {
    const order: string[] = [];
    // Both readers held longer than the pool's 3 s connection timeout (database.ts).
    const held = [slowRead(4.5), slowRead(4.5)].map((p) => p.then(() => order.push('held')));
    await new Promise((r) => setTimeout(r, 200));
    const waiting = sql`select 1`.execute(db.read());
    const failure = await waiting.then(
      () => null,
      (e: unknown) => e,
    );
    order.push('waiting');
    await Promise.all(held);
    assert.ok(failure, 'the read waiting for a reader failed');
    assert.ok(
      isDatabaseUnavailable(failure),
      `${(failure as Error).message}: mapped to 503 busy (main.ts classifyError)`,
    );
    assert.deepEqual(order, ['waiting', 'held', 'held'], 'it gave up before a reader was free');
  },
);
