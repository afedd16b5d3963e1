import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { openDatabase } from '../../src/store/database.ts';
import { TEST_PG_URL } from './env.ts';

const MIGRATIONS_DIR = join(import.meta.dirname, '../../src/store/migrations');
/** What applies them (the migrator's settings, its table). */
const MIGRATOR = join(import.meta.dirname, '../../src/store/database.ts');
/** Arbitrary, fixed: the advisory lock under which one test process builds the migrated template. */
const TEMPLATE_LOCK = 7_461_953_017;

/**
 * The migrated template of this checkout's migrations: `pv_tmpl_<hash of src/store/migrations and database.ts>`.
 * Migrating an empty database costs 2–4 s under load, copying a migrated one ~1 s: each test app's database is a
 * copy. Built once per set of migrations (by the first test process that needs it, under an advisory lock; built
 * under another name and renamed, so a process killed while building leaves no half-made template) and kept between
 * runs, as a compile cache is; a change to any migration (or to the migrator) makes a new one.
 */
let template: Promise<string> | null = null;
function migratedTemplate(): Promise<string> {
  return (template ??= (async () => {
    const hash = createHash('sha256');
    for (const file of readdirSync(MIGRATIONS_DIR).sort())
      hash.update(file).update(readFileSync(join(MIGRATIONS_DIR, file)));
    hash.update(readFileSync(MIGRATOR));
    const name = `pv_tmpl_${hash.digest('hex').slice(0, 16)}`;
    const admin = new pg.Client({ connectionString: TEST_PG_URL });
    await admin.connect();
    try {
      await admin.query('select pg_advisory_lock($1)', [TEMPLATE_LOCK]);
      const exists = await admin.query('select 1 from pg_database where datname = $1', [name]);
      if (!exists.rowCount) {
        const building = `${name}_building_${process.pid}`;
        await admin.query(`drop database if exists ${building} with (force)`);
        await admin.query(`create database ${building}`);
        const url = new URL(TEST_PG_URL);
        url.pathname = `/${building}`;
        try {
          const db = await openDatabase({ databaseUrl: url.toString(), sqlitePath: '' });
          await db.close();
        } catch (e) {
          await admin.query(`drop database if exists ${building} with (force)`);
          throw e;
        }
        await admin.query(`alter database ${building} rename to ${name}`);
      }
    } finally {
      await admin.query('select pg_advisory_unlock($1)', [TEMPLATE_LOCK]).catch(() => {});
      await admin.end();
    }
    return name;
  })());
}

/**
 * Creates a throw-away PostgreSQL database for one test app; returns its URL and a dropper. It has every migration
 * applied (a copy of the migrated template), unless `empty`: the tests of the migrations themselves start empty.
 */
export async function createTestDatabase(
  opts: { empty?: boolean } = {},
): Promise<{ url: string; drop(): Promise<void> }> {
  const from = opts.empty ? null : await migratedTemplate();
  const name = `pv_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_PG_URL });
  await admin.connect();
  try {
    await admin.query(`create database ${name}${from ? ` template ${from}` : ''}`);
  } finally {
    await admin.end();
  }
  const url = new URL(TEST_PG_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: TEST_PG_URL });
      await c.connect();
      try {
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}
