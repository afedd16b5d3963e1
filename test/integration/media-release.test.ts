/**
 * Releasing stored files (UploadRepository.releaseMedia) on the real database, SQLite and PostgreSQL, with a second
 * connection standing in for another process:
 *   - the removal (on S3 a network round trip) holds no lock: while it runs, another connection writes, and takes the
 *     same files' lock, without waiting (on SQLite a held write lock made every other process's writer busy-wait,
 *     blocking its event loop, up to the busy timeout);
 *   - the journal entry (media_garbage) stays until the files are gone, so a crash or a failed removal leaves it
 *     for the sweep, and is cleared once they are;
 *   - files a row still references are not removed, and their stale journal entry is cleared.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Database } from '../../src/store/database.ts';
import { UploadRepository } from '../../src/store/repositories/upload.repository.ts';
import { similarityIndexFor } from '../../src/store/similarity/similarity-index.ts';
import { lockMedia } from '../../src/store/upload-rows.ts';
import { insertImageUpload, withStoreDatabase } from '../support/store-db.ts';

const AT = new Date(Date.UTC(2026, 1, 1));

const repository = (db: Database) => new UploadRepository(db, similarityIndexFor(db.dialect, 'multi-index-hashing'));

async function journal(db: Database, mediaKey: string, at = AT): Promise<void> {
  await db
    .db()
    .insertInto('media_garbage')
    .values({ media_key: mediaKey, created_at: db.dialect.date(at) })
    .execute();
}

const journalled = async (db: Database) =>
  (await db.db().selectFrom('media_garbage').select('media_key').execute()).map((r) => r.media_key);

/** Rejects when `p` takes longer than `ms`: a wait on a lock shows as a timeout, not a hang. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer!: NodeJS.Timeout;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} waited over ${ms} ms: a lock is held`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

test('the removal holds no lock: meanwhile another connection writes, and takes the files’ lock, at once', async () => {
  await withStoreDatabase('media-release', AT, async (db, userId, another) => {
    const other = await another();
    const key = randomUUID();
    await journal(db, key);
    let sawJournal: string[] = [];
    const released = await repository(db).releaseMedia(key, async () => {
      // Another process, mid-removal: a write, and the same files' lock (an insert that would share them takes it).
      await within(
        other.transaction(async (_em, tx) => {
          await lockMedia(tx, other.dialect, key);
          await tx.updateTable('users').set({ ban_reason: 'written' }).where('id', '=', userId).execute();
        }),
        3000,
        'a write during the removal',
      );
      sawJournal = await journalled(other);
    });
    assert.equal(released, true);
    assert.deepEqual(sawJournal, [key], 'the journal entry is there while the files are being removed');
    assert.deepEqual(await journalled(db), [], 'and gone once they are');
    const user = await db.db().selectFrom('users').select('ban_reason').where('id', '=', userId).executeTakeFirst();
    assert.equal(user?.ban_reason, 'written');
  });
});

test('a removal that fails leaves the journal entry for the sweep, which finishes it', async () => {
  await withStoreDatabase('media-release', AT, async (db) => {
    const key = randomUUID();
    await journal(db, key);
    await assert.rejects(
      repository(db).releaseMedia(key, async () => {
        throw new Error('S3 unreachable');
      }),
      /S3 unreachable/,
    );
    assert.deepEqual(await journalled(db), [key]);
    assert.deepEqual(await repository(db).pendingGarbage(), [key], 'the sweep finds it');
    let removed = 0;
    assert.equal(await repository(db).releaseMedia(key, async () => void removed++), true);
    assert.equal(removed, 1);
    assert.deepEqual(await journalled(db), []);
  });
});

test('files a row references are kept, and their stale journal entry is cleared', async () => {
  await withStoreDatabase('media-release', AT, async (db, userId) => {
    const key = randomUUID();
    await insertImageUpload(db, userId, AT, { media_key: key, sha256: 'a'.repeat(64) });
    await journal(db, key);
    let removed = 0;
    assert.equal(await repository(db).releaseMedia(key, async () => void removed++), false);
    assert.equal(removed, 0);
    assert.deepEqual(await journalled(db), []);
  });
});
