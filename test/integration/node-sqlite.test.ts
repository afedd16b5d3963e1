/**
 * SQLite on Node's own node:sqlite (src/store/node-sqlite.ts): each connection is set up alike, SQLite's
 * errors are recognised (busy → retried, unique → a duplicate), and loading it prints nothing.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { openSqlite } from '../../src/store/node-sqlite.ts';
import { isUniqueViolation, sqliteDialect } from '../../src/store/dialect.ts';

const dir = mkdtempSync(join(tmpdir(), 'pixvote-node-sqlite-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('a connection is set up: WAL, foreign keys, busy wait, mmap, sqlite-vec, hamming64, no extensions', async () => {
  const db = await openSqlite(join(dir, 'setup.db'));
  try {
    assert.equal(db.prepare('pragma journal_mode').get()?.journal_mode, 'wal');
    assert.equal(db.prepare('pragma foreign_keys').get()?.foreign_keys, 1);
    assert.equal(db.prepare('pragma busy_timeout').get()?.timeout, 10_000);
    // The most the build allows (SQLITE_MAX_MMAP_SIZE): at 1M uploads the listings read up to 1.44× their time at
    // 12k through pread, at most 1.13× through the map (bench/README.md).
    assert.equal(db.prepare('pragma mmap_size').get()?.mmap_size, 0x7fff0000);
    assert.match(String(db.prepare('select vec_version() v').get()?.v), /^v0\./);
    assert.equal(db.prepare(`select hamming64('00000000000000ff', '0000000000000000') d`).get()?.d, 8);
    assert.throws(() => db.loadExtension('/nonexistent'), /extension loading is not allowed|not allowed/i);
  } finally {
    db.close();
  }
});

test('a unique violation from node:sqlite is recognised as one', async () => {
  const db = await openSqlite(join(dir, 'unique.db'));
  try {
    db.exec('create table t (id integer primary key, name text unique)');
    db.exec(`insert into t values (1, 'a')`);
    const caught: unknown[] = [];
    for (const sql of [`insert into t values (2, 'a')`, `insert into t values (1, 'b')`]) {
      try {
        db.exec(sql);
      } catch (e) {
        caught.push(e);
      }
    }
    assert.equal(caught.length, 2);
    for (const e of caught) assert.ok(isUniqueViolation(e), String(e));
    assert.ok(isUniqueViolation(new Error('wrapped', { cause: caught[0] })));
    assert.ok(!isUniqueViolation(new Error('no such table: x')));
  } finally {
    db.close();
  }
});

test('a transaction overtaken by another connection (SQLITE_BUSY_SNAPSHOT) runs again, freshly', async () => {
  const path = join(dir, 'busy.db');
  const a = await openSqlite(path);
  const b = await openSqlite(path);
  try {
    a.exec('create table c (id integer primary key, n integer not null)');
    a.exec('insert into c values (1, 0)');
    let runs = 0;
    await sqliteDialect.retrying(async () => {
      runs++;
      a.exec('begin');
      try {
        const n = Number(a.prepare('select n from c where id = 1').get()?.n);
        // Another process commits after this transaction's first read: its write cannot go on from this snapshot.
        if (runs === 1) b.exec('update c set n = n + 10 where id = 1');
        a.prepare('update c set n = ? where id = 1').run(n + 1);
        a.exec('commit');
      } catch (e) {
        a.exec('rollback');
        throw e;
      }
    });
    assert.equal(runs, 2);
    assert.equal(a.prepare('select n from c where id = 1').get()?.n, 11);
  } finally {
    a.close();
    b.close();
  }
});

test('loading node:sqlite through the store prints no ExperimentalWarning (others still show)', () => {
  const moduleUrl = new URL('../../src/store/node-sqlite.ts', import.meta.url).href;
  const script =
    `const m = await import(${JSON.stringify(moduleUrl)}); m.nodeSqlite(); ` + `process.emitWarning('still shown');`;
  const r = spawnSync(
    process.execPath,
    ['--experimental-strip-types', '--disable-warning=ExperimentalWarning:Type', '--input-type=module', '-e', script],
    { encoding: 'utf8', cwd: fileURLToPath(new URL('../..', import.meta.url)) },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /SQLite is an experimental feature/);
  assert.match(r.stderr, /still shown/);
});
