/**
 * Which databases this test run targets. scripts/test.ts runs the suite once on SQLite and once on
 * PostgreSQL + Redis (PIXVOTE_TEST_DB=postgres); a file run alone defaults to SQLite.
 */
export const TEST_DB = (process.env.PIXVOTE_TEST_DB ?? 'sqlite') as 'sqlite' | 'postgres';
export const TEST_PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const onPostgres = TEST_DB === 'postgres';
