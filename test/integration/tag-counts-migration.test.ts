import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/store/database.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres } from '../support/env.ts';

test('m007 recounts tags written before counts left private uploads out', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'pixvote-tagcount-'));
  const pg = onPostgres ? await createTestDatabase() : null;
  const open = () => openDatabase({ databaseUrl: pg?.url ?? null, sqlitePath: join(dir, 'app.db') });
  let db = await open();
  try {
    const d = db.dialect;
    const at = d.date(new Date());
    const userId = randomUUID();
    await db.db().insertInto('users').values({ id: userId, username: 'old', username_key: 'old', email: 'old@example.test', email_key: 'old@example.test', password_hash: 'x', role: 'user', created_at: at }).execute();
    const upload = (isPrivate: boolean) => ({ id: randomUUID(), user_id: userId, upload_type: 'link', external_url: 'https://example.com/', is_private: d.bool(isPrivate), created_at: at });
    const uploads = [upload(false), upload(true), upload(true)];
    await db.db().insertInto('uploads').values(uploads).execute();
    // As the old code kept them: every link counted, private ones included.
    const tags = [
      { id: randomUUID(), name: 'mixed', slug: 'mixed', upload_count: 3, created_at: at },
      { id: randomUUID(), name: 'hidden', slug: 'hidden', upload_count: 2, created_at: at },
    ];
    await db.db().insertInto('tags').values(tags).execute();
    const link = (u: { id: string }, t: { id: string }) => ({ upload_id: u.id, tag_id: t.id, created_at: at });
    await db.db().insertInto('upload_tags').values([...uploads.map((u) => link(u, tags[0]!)), link(uploads[1]!, tags[1]!), link(uploads[2]!, tags[1]!)]).execute();
    await db.db().deleteFrom('schema_migrations').where('name', '=', 'm007-listed-tag-counts').execute();
    await db.close();

    db = await open();
    const counts = await db.db().selectFrom('tags').select(['slug', 'upload_count']).orderBy('slug').execute();
    assert.deepEqual(counts.map((r) => [r.slug, Number(r.upload_count)]), [['hidden', 0], ['mixed', 1]]);
  } finally {
    await db.close();
    await pg?.drop();
    await rm(dir, { recursive: true, force: true });
  }
});
