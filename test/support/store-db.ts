/**
 * A database of its own for a store-level test (SQLite in a temp directory, or a fresh PostgreSQL database on the
 * PostgreSQL pass), migrated, with one user to own uploads, and more connections to it on request; dropped afterwards.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Insertable } from 'kysely';
import { openDatabase, type Database } from '../../src/store/database.ts';
import type { UploadsTable } from '../../src/store/database-types.ts';
import { createTestDatabase } from './pg.ts';
import { onPostgres } from './env.ts';

export async function withStoreDatabase(
  name: string,
  at: Date,
  fn: (db: Database, userId: string, another: () => Promise<Database>) => Promise<void>,
): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), `pixvote-${name}-`));
  const pg = onPostgres ? await createTestDatabase() : null;
  const opts = { databaseUrl: pg?.url ?? null, sqlitePath: join(dir, 'app.db') };
  const db = await openDatabase(opts);
  // More connections to the same database, as other processes would hold them; closed with it.
  const others: Database[] = [];
  const another = async () => {
    const other = await openDatabase(opts);
    others.push(other);
    return other;
  };
  try {
    const userId = randomUUID();
    await db
      .db()
      .insertInto('users')
      .values({
        id: userId,
        username: 'owner',
        username_key: 'owner',
        email: 'owner@x.test',
        email_key: 'owner@x.test',
        password_hash: 'x',
        role: 'user',
        created_at: db.dialect.date(at),
      })
      .execute();
    await fn(db, userId, another);
  } finally {
    for (const other of others) await other.close();
    await db.close();
    await pg?.drop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** A visible public image upload of `userId` made at `at`, with the columns given (hashes, state); its id. */
export async function insertImageUpload(
  db: Database,
  userId: string,
  at: Date,
  columns: Partial<Insertable<UploadsTable>>,
): Promise<string> {
  const id = randomUUID();
  await db
    .db()
    .insertInto('uploads')
    .values({
      id,
      user_id: userId,
      upload_type: 'image',
      description: '',
      is_private: db.dialect.bool(false),
      created_at: db.dialect.date(at),
      moderation: 'visible',
      ...columns,
    })
    .execute();
  return id;
}
