import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { TEST_PG_URL } from './env.ts';

/** Creates a throw-away PostgreSQL database for one test app; returns its URL and a dropper. */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `pv_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_PG_URL });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
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
