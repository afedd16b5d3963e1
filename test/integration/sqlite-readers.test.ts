/**
 * SQLite's long reads run on reader threads (src/store/sqlite-readers.ts), on a real database file: the event loop
 * keeps turning while one runs, a read sees every write committed before it, the listing repositories use them, and
 * closing the database stops the threads. No wall-clock assertion: the loop's turns are counted.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { sql, type Kysely } from 'kysely';
import { openDatabase, type Database } from '../../src/store/database.ts';
import type { DB } from '../../src/store/database-types.ts';
import { FeedRepository } from '../../src/store/repositories/feed.repository.ts';
import { UploadRepository } from '../../src/store/repositories/upload.repository.ts';
import { similarityIndexFor } from '../../src/store/similarity/similarity-index.ts';
import { until } from '../support/budget.ts';

const dir = mkdtempSync(join(tmpdir(), 'pixvote-sqlite-readers-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const open = (name: string, sqliteReaders: number) =>
  openDatabase({ databaseUrl: null, sqlitePath: join(dir, `${name}.db`), sqliteReaders });

/** A statement that takes a while whatever the machine: counts to 2 million in a recursive CTE. */
const expensive = (db: Kysely<DB>) =>
  sql<{ n: number }>`with recursive c(x) as (select 1 union all select x + 1 from c where x < 2000000)
    select count(*) as n from c`.execute(db);

/** How many times the event loop came round (setImmediate) while `work` ran. */
async function turnsDuring<T>(work: () => Promise<T>): Promise<{ turns: number; value: T }> {
  let turns = 0;
  let done = false;
  const spin = () => {
    if (done) return;
    turns++;
    setImmediate(spin);
  };
  const running = work();
  setImmediate(spin);
  try {
    const value = await running;
    return { turns, value };
  } finally {
    done = true;
  }
}

test('a long read on the readers leaves the event loop turning; on the main connection it holds it', async () => {
  const db = await open('loop', 1);
  try {
    const off = await turnsDuring(() => expensive(db.read()));
    const on = await turnsDuring(() => expensive(db.db()));
    assert.equal(Number(off.value.rows[0]!.n), 2_000_000);
    assert.equal(Number(on.value.rows[0]!.n), 2_000_000);
    // The main connection runs the statement synchronously: the loop does not come round until it is over.
    assert.ok(on.turns <= 1, `main connection: ${on.turns} turns`);
    assert.ok(off.turns >= 20, `readers: only ${off.turns} turns while the statement ran`);
  } finally {
    await db.close();
  }
});

test('a read on the readers sees every write committed before it; reads refuse to write', async () => {
  const db = await open('consistency', 2);
  try {
    for (let i = 0; i < 20; i++) {
      const id = crypto.randomUUID();
      await db.transaction((_em, tx) =>
        tx
          .insertInto('tags')
          .values({ id, name: `tag ${i}`, slug: `tag-${i}`, upload_count: i, created_at: db.dialect.date(new Date()) })
          .execute(),
      );
      // Right after the commit, on either thread.
      const [a, b] = await Promise.all([
        db.read().selectFrom('tags').select('id').where('id', '=', id).executeTakeFirst(),
        db
          .read()
          .selectFrom('tags')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow(),
      ]);
      assert.equal(a?.id, id);
      assert.equal(Number(b.n), i + 1);
    }
    // The reader threads' connections read through a memory map too, as the main one does (node-sqlite.ts).
    const { rows } = await sql<{ mmap_size: number }>`pragma mmap_size`.execute(db.read());
    assert.equal(rows[0]?.mmap_size, 0x7fff0000);
    await assert.rejects(db.read().deleteFrom('tags').execute(), /return rows only|readonly|read-only/i);
    await assert.rejects(
      db
        .read()
        .transaction()
        .execute(async () => {}),
      /no transaction/,
    );
  } finally {
    await db.close();
  }
});

test('the feed repository reads a listing on the readers', async () => {
  const db = await open('feed', 1);
  try {
    const feeds = new FeedRepository(
      db,
      new UploadRepository(db, similarityIndexFor(db.dialect, 'multi-index-hashing')),
    );
    // Held up by an expensive read on the only reader, the listing waits behind it, and the loop keeps turning.
    const { turns, value } = await turnsDuring(async () => {
      const slow = expensive(db.read());
      const page = await feeds.publicPage({ page: 1, limit: 12, sort: 'new' }, { offset: 0 }, 13);
      await slow;
      return page;
    });
    assert.deepEqual(value, []);
    assert.ok(turns >= 20, `only ${turns} turns`);
  } finally {
    await db.close();
  }
});

/** OS threads of this process (Linux). */
const threads = () => Number(/^Threads:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]);

test('closing the database stops its reader threads', { skip: process.platform !== 'linux' }, async () => {
  // Everything a database brings up once per process (libuv's pool, modules) before the baseline is read.
  await readFile(import.meta.filename);
  const warm = await open('warm', 0);
  await warm
    .read()
    .selectNoFrom((eb) => eb.val(1).as('ok'))
    .execute();
  await warm.close();
  const before = threads();
  const db: Database = await open('threads', 3);
  await Promise.all([1, 2, 3, 4, 5, 6].map(() => expensive(db.read())));
  assert.ok(threads() >= before + 3, `${threads()} threads with 3 readers, ${before} before`);
  await db.close();
  // A terminated worker's OS thread is joined shortly after its exit event: wait for it, do not time it.
  await until(() => threads() <= before, 50);
  assert.ok(threads() <= before, `${threads()} threads after close, ${before} before`);
  await assert.rejects(
    db
      .read()
      .selectNoFrom((eb) => eb.val(1).as('ok'))
      .execute(),
    /closed/,
  );
});
