import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Insertable } from 'kysely';
import { openDatabase } from '../../src/store/database.ts';
import type { UploadsTable } from '../../src/store/database-types.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres } from '../support/env.ts';
import { queueKeyMismatches } from '../support/uploads.ts';
import { uploadChunkColumns } from '../../src/store/similarity/hamming.ts';

type Db = Awaited<ReturnType<typeof openDatabase>>;

/**
 * A database with every migration applied, rows written as older code wrote them (`write`), then the
 * migration `rerun` marked as not applied and the database opened again: `check` sees what it did.
 */
async function afterRerunOf(
  rerun: string,
  write: (
    db: Db,
    fixtures: { at: Date | number; upload: (isPrivate: boolean) => Insertable<UploadsTable> },
  ) => Promise<void>,
  check: (db: Db) => Promise<void>,
) {
  const dir = await mkdtemp(join(tmpdir(), 'pixvote-tags-migration-'));
  const pg = onPostgres ? await createTestDatabase({ empty: true }) : null;
  const open = () => openDatabase({ databaseUrl: pg?.url ?? null, sqlitePath: join(dir, 'app.db') });
  let db = await open();
  try {
    const d = db.dialect;
    const at = d.date(new Date());
    const userId = randomUUID();
    await db
      .db()
      .insertInto('users')
      .values({
        id: userId,
        username: 'old',
        username_key: 'old',
        email: 'old@example.test',
        email_key: 'old@example.test',
        password_hash: 'x',
        role: 'user',
        created_at: at,
      })
      .execute();
    const upload = (isPrivate: boolean): Insertable<UploadsTable> => ({
      id: randomUUID(),
      user_id: userId,
      upload_type: 'link',
      external_url: 'https://example.com/',
      is_private: d.bool(isPrivate),
      created_at: at,
    });
    await write(db, { at, upload });
    await db.db().deleteFrom('schema_migrations').where('name', '=', rerun).execute();
    await db.close();
    db = await open();
    await check(db);
  } finally {
    await db.close();
    await pg?.drop();
    await rm(dir, { recursive: true, force: true });
  }
}

test('m007 recounts tags written before counts left private uploads out', async () => {
  await afterRerunOf(
    'm007-listed-tag-counts',
    async (db, { at, upload }) => {
      const uploads = [upload(false), upload(true), upload(true)];
      await db.db().insertInto('uploads').values(uploads).execute();
      // As the old code kept them: every link counted, private ones included.
      const tags = [
        { id: randomUUID(), name: 'mixed', slug: 'mixed', upload_count: 3, created_at: at },
        { id: randomUUID(), name: 'hidden', slug: 'hidden', upload_count: 2, created_at: at },
      ];
      await db.db().insertInto('tags').values(tags).execute();
      const link = (u: { id: string }, t: { id: string }) => ({ upload_id: u.id, tag_id: t.id, created_at: at });
      await db
        .db()
        .insertInto('upload_tags')
        .values([...uploads.map((u) => link(u, tags[0]!)), link(uploads[1]!, tags[1]!), link(uploads[2]!, tags[1]!)])
        .execute();
    },
    async (db) => {
      const counts = await db.db().selectFrom('tags').select(['slug', 'upload_count']).orderBy('slug').execute();
      assert.deepEqual(
        counts.map((r) => [r.slug, Number(r.upload_count)]),
        [
          ['hidden', 0],
          ['mixed', 1],
        ],
      );
    },
  );
});

test(
  'm008 folds tag names made before NFKC folding: ' + 'renamed when free, merged into their plain twin otherwise',
  async () => {
    const tag = (name: string) => ({
      id: randomUUID(),
      name,
      slug: name.replace(/ /g, '-'),
      upload_count: 0,
      created_at: 0 as Date | number,
    });
    const [cats, wideCats, wideDogs, invisible] = [tag('cats'), tag('ｃａｔｓ'), tag('ｄｏｇｓ'), tag('\u3164')];
    let a = { id: '' };
    let b = { id: '' };
    let c = { id: '' };
    await afterRerunOf(
      'm008-fold-tag-names',
      async (db, { at, upload }) => {
        const rows = [upload(false), upload(false), upload(false)] as const;
        [a, b, c] = rows;
        await db.db().insertInto('uploads').values(rows).execute();
        await db
          .db()
          .insertInto('tags')
          .values([cats, wideCats, wideDogs, invisible].map((t) => ({ ...t, created_at: at })))
          .execute();
        const link = (u: { id: string }, t: { id: string }) => ({ upload_id: u.id, tag_id: t.id, created_at: at });
        // a: both cat tags; b: only the wide one; c: the wide dogs and an invisible "letter".
        await db
          .db()
          .insertInto('upload_tags')
          .values([link(a, cats), link(a, wideCats), link(b, wideCats), link(c, wideDogs), link(c, invisible)])
          .execute();
      },
      async (db) => {
        const tags = await db
          .db()
          .selectFrom('tags')
          .select(['id', 'name', 'slug', 'upload_count'])
          .orderBy('slug')
          .execute();
        assert.deepEqual(
          tags.map((t) => [t.name, t.slug, Number(t.upload_count)]),
          [
            ['cats', 'cats', 2],
            ['dogs', 'dogs', 1],
            ['\u3164', '\u3164', 1],
          ],
        );
        assert.equal(tags.find((t) => t.name === 'dogs')!.id, wideDogs.id, 'renamed in place');
        const links = await db.db().selectFrom('upload_tags').select(['upload_id', 'tag_id']).execute();
        const of = (u: { id: string }) =>
          links
            .filter((l) => l.upload_id === u.id)
            .map((l) => l.tag_id)
            .sort();
        assert.deepEqual(of(a), [cats.id]);
        assert.deepEqual(of(b), [cats.id]);
        assert.deepEqual(of(c), [invisible.id, wideDogs.id].sort());
      },
    );
  },
);

test("m020 fills the open queue's columns from the reports and states stored before it", async () => {
  await afterRerunOf(
    'm020-queue-key',
    async (db, { at, upload }) => {
      const d = db.dialect;
      const reporters = Array.from({ length: 3 }, () => randomUUID());
      await db
        .db()
        .insertInto('users')
        .values(
          reporters.map((id, i) => ({
            id,
            username: `reporter${i}`,
            username_key: `reporter${i}`,
            email: `r${i}@example.test`,
            email_key: `r${i}@example.test`,
            password_hash: 'x',
            role: 'user',
            created_at: at,
          })),
        )
        .execute();
      // Every row names every column: one INSERT of rows of several shapes would give SQLite NULLs for the others.
      const row = (moderation: 'visible' | 'held' | 'removed', flagged = false) => ({
        ...upload(false),
        moderation,
        person_flag: d.bool(flagged),
      });
      const rows = [
        row('visible'), // reported twice (and once more, closed)
        row('held'), // held, reported once
        row('visible', true), // flagged
        row('removed'), // removed, with a report left open
        row('visible'), // nothing
      ];
      await db.db().insertInto('uploads').values(rows).execute();
      const report = (u: number, r: number, status: 'open' | 'closed') => ({
        id: randomUUID(),
        upload_id: rows[u]!.id,
        user_id: reporters[r]!,
        reason: 'spam',
        status,
        created_at: at,
      });
      await db
        .db()
        .insertInto('reports')
        .values([
          report(0, 0, 'open'),
          report(0, 1, 'open'),
          report(0, 2, 'closed'),
          report(1, 0, 'open'),
          report(3, 0, 'open'),
        ])
        .execute();
      // As the code before m020 left the table: without its columns.
      await db.db().schema.dropIndex('uploads_queue_index').execute();
      await db.db().schema.alterTable('uploads').dropColumn('queue_key').execute();
      await db.db().schema.alterTable('uploads').dropColumn('open_reports').execute();
    },
    async (db) => {
      assert.deepEqual(await queueKeyMismatches(db), []);
      const queued = await db
        .db()
        .selectFrom('uploads')
        .select(['moderation', 'queue_key'])
        .where('queue_key', 'is not', null)
        .orderBy('queue_key')
        .execute();
      assert.deepEqual(
        queued.map((r) => [r.moderation, Number(r.queue_key)]),
        [
          ['held', -1],
          ['visible', 999_999_998],
          ['visible', 1_000_000_000],
        ],
      );
    },
  );
});

test('m021 splits every stored hash into the three chunk columns and drops the four old ones', async () => {
  // The top bit set, every bit, none, and hashes whose chunk borders (bits 42 and 21) matter.
  const hashes = ['8000000000000001', 'ffffffffffffffff', '0000000000000000', '0000040000200000', '3c4a5b6c7d8e9fa0'];
  let ids: string[] = [];
  await afterRerunOf(
    'm021-three-chunk-phash',
    async (db, { upload }) => {
      const s = db.db().schema;
      const rows = [...hashes.map((phash) => ({ ...upload(false), phash })), { ...upload(false), phash: null }];
      ids = rows.map((r) => r.id);
      await db.db().insertInto('uploads').values(rows).execute();
      // As the code before m021 left the table: four 16-bit chunk columns with their indexes, none of the three.
      for (const c of ['mih0', 'mih1', 'mih2']) {
        await s.dropIndex(`uploads_${c}_covering_index`).execute();
        await s.alterTable('uploads').dropColumn(c).execute();
      }
      for (const c of ['ph0', 'ph1', 'ph2', 'ph3']) {
        await s.alterTable('uploads').addColumn(c, 'integer').execute();
        await s.createIndex(`uploads_${c}_covering_index`).on('uploads').columns([c, 'phash']).execute();
      }
    },
    async (db) => {
      const rows = await db.db().selectFrom('uploads').selectAll().execute();
      const byId = new Map(rows.map((r) => [r.id, r]));
      for (const [i, id] of ids.entries()) {
        const r = byId.get(id)!;
        const chunks = { mih0: r.mih0, mih1: r.mih1, mih2: r.mih2 };
        assert.deepEqual(chunks, uploadChunkColumns(hashes[i] ?? null), `hash ${hashes[i] ?? 'none'}`);
      }
      assert.deepEqual(uploadChunkColumns('ffffffffffffffff'), {
        mih0: 2 ** 22 - 1,
        mih1: 2 ** 21 - 1,
        mih2: 2 ** 21 - 1,
      });
      assert.deepEqual(uploadChunkColumns('0000040000200000'), { mih0: 1, mih1: 1, mih2: 0 });
      assert.ok(
        rows.every((r) => !('ph0' in r)),
        'the old chunk columns are gone',
      );
    },
  );
});
