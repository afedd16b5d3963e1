import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Database } from '../../src/store/database.ts';
import { hammingHex, uploadChunkColumns } from '../../src/store/similarity/hamming.ts';
import { similarityIndexFor } from '../../src/store/similarity/similarity-index.ts';
import { BlocklistRepository } from '../../src/store/moderation/blocklist.repository.ts';
import { ModerationRepository } from '../../src/store/moderation/moderation.repository.ts';
import { JobRepository } from '../../src/store/moderation/job.repository.ts';
import { UploadRepository } from '../../src/store/repositories/upload.repository.ts';
import { ModerationService } from '../../src/domain/moderation/moderation.service.ts';
import type { NewBlocklistEntry } from '../../src/domain/moderation/moderation.types.ts';
import type { ModerationState } from '../../src/domain/uploads/upload.types.ts';
import { insertImageUpload, withStoreDatabase } from '../support/store-db.ts';
import { flipBits, hex8, lcgRandom } from '../support/hashes.ts';

const DISTANCE = 8;
const AT = new Date(Date.UTC(2026, 1, 1));

const randomHash = (r: () => number) => hex8(Math.floor(r() * 2 ** 32)) + hex8(Math.floor(r() * 2 ** 32));
const randomSha = (r: () => number) => randomHash(r) + randomHash(r) + randomHash(r) + randomHash(r);

const withDatabase = (fn: (db: Database, userId: string) => Promise<void>) => withStoreDatabase('blocklist', AT, fn);

async function insertUpload(
  db: Database,
  userId: string,
  u: { sha256: string; phash: string; moderation?: ModerationState; isPrivate?: boolean },
): Promise<string> {
  return insertImageUpload(db, userId, AT, {
    is_private: db.dialect.bool(u.isPrivate ?? false),
    sha256: u.sha256,
    phash: u.phash,
    ...uploadChunkColumns(u.phash),
    moderation: u.moderation ?? 'visible',
  });
}

const states = async (db: Database) =>
  new Map(
    (await db.db().selectFrom('uploads').select(['id', 'moderation']).execute()).map((r) => [r.id, r.moderation]),
  );

const autoHolds = async (db: Database) =>
  (
    await db
      .db()
      .selectFrom('modlog')
      .select('target_id')
      .where('action', '=', 'auto_hold')
      .orderBy('target_id')
      .execute()
  ).map((r) => r.target_id);

const pendingCount = async (db: Database) =>
  Number(
    (
      await db
        .db()
        .selectFrom('blocklist_pending')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

function moderationService(db: Database, blocklist: BlocklistRepository): ModerationService {
  const similarity = similarityIndexFor(db.dialect, 'multi-index-hashing');
  const uploads = new UploadRepository(db, similarity);
  return new ModerationService({
    store: new ModerationRepository(db, uploads, similarity),
    blocklist,
    jobs: new JobRepository(db, similarity),
    uploads,
    clock: { now: () => AT },
    policy: { reportHoldThreshold: 3, blocklistDistance: DISTANCE },
    releaseMedia: async () => {},
  });
}

for (const [path, scanFrom, scanPage] of [
  ['one lookup per entry', undefined, undefined],
  ['one scan of the stored hashes', 1, undefined],
  // Pages of 4 uploads: matches fall on either side of many page boundaries.
  ['one scan in pages of 4', 1, 4],
] as const) {
  const options = { ...(scanFrom ? { scanFrom } : {}), ...(scanPage ? { scanPage } : {}) };
  test(
    `the blocklist job (${path}) holds the visible uploads an entry matches by SHA-256 or within ` +
      `${DISTANCE} bits, not farther ones nor removed or held ones, with one auto_hold line each`,
    async () => {
      await withDatabase(async (db, userId) => {
        const r = lcgRandom((scanFrom ?? 16) + (scanPage ?? 0));
        const blocked = randomHash(r);
        const blockedSha = randomSha(r);
        const up = (u: Parameters<typeof insertUpload>[2]) => insertUpload(db, userId, u);
        const match = {
          exactSha: await up({ sha256: blockedSha, phash: randomHash(r) }),
          samePhash: await up({ sha256: randomSha(r), phash: blocked }),
          at3: await up({ sha256: randomSha(r), phash: flipBits(blocked, 3, r) }),
          at8: await up({ sha256: randomSha(r), phash: flipBits(blocked, 8, r) }),
          private: await up({ sha256: randomSha(r), phash: flipBits(blocked, 1, r), isPrivate: true }),
        };
        const spared = {
          at9: await up({ sha256: randomSha(r), phash: flipBits(blocked, 9, r) }),
          at12: await up({ sha256: randomSha(r), phash: flipBits(blocked, 12, r) }),
          removed: await up({ sha256: randomSha(r), phash: flipBits(blocked, 2, r), moderation: 'removed' }),
          held: await up({ sha256: randomSha(r), phash: flipBits(blocked, 2, r), moderation: 'held' }),
        };
        const others = [];
        for (let i = 0; i < 30; i++) others.push(await up({ sha256: randomSha(r), phash: randomHash(r) }));
        const entries: NewBlocklistEntry[] = [
          { sha256: blockedSha, phash: null, reason: 'exact' },
          { sha256: null, phash: blocked, reason: 'near' },
          // Entries that match nothing stored.
          ...Array.from({ length: 5 }, (_, i) => ({
            sha256: i % 2 ? randomSha(r) : null,
            phash: randomHash(r),
            reason: 'other',
          })),
        ];
        const storedHashes = await db.db().selectFrom('uploads').select('phash').execute();
        for (const e of entries.slice(2))
          assert.ok(
            storedHashes.every((s) => hammingHex(s.phash!, e.phash!) > DISTANCE),
            'fillers match nothing',
          );

        const blocklist = new BlocklistRepository(db, options);
        const moderator = { id: userId, username: 'owner' };
        const added = await blocklist.add(entries, { source: 'import', moderator, at: AT });
        assert.deepEqual({ ...added, job: undefined }, { added: entries.length, skipped: 0, job: undefined });
        assert.equal(await pendingCount(db), entries.length);
        const held = await moderationService(db, blocklist).holdBlocklistMatches();
        assert.equal(held, Object.keys(match).length);

        const after = await states(db);
        for (const [name, id] of Object.entries(match)) assert.equal(after.get(id), 'held', `${name} is held`);
        assert.equal(after.get(spared.at9), 'visible', 'distance 9 stays visible');
        assert.equal(after.get(spared.at12), 'visible', 'distance 12 stays visible');
        assert.equal(after.get(spared.removed), 'removed', 'a removed upload stays removed');
        assert.equal(after.get(spared.held), 'held');
        for (const id of others) assert.equal(after.get(id), 'visible');
        assert.deepEqual(await autoHolds(db), Object.values(match).sort(), 'one auto_hold line per held upload');
        assert.equal(await pendingCount(db), 0, 'the queue is empty');

        // A crash after holding but before dequeueing runs the entries again: nothing is held twice.
        const ids = await db.db().selectFrom('blocklist').select('id').execute();
        await db
          .db()
          .insertInto('blocklist_pending')
          .values(ids.map((e) => ({ entry_id: e.id, created_at: db.dialect.date(AT) })))
          .execute();
        assert.equal(await moderationService(db, blocklist).holdBlocklistMatches(), 0);
        assert.deepEqual(await autoHolds(db), Object.values(match).sort(), 'still one line per held upload');
        assert.equal(await pendingCount(db), 0);
      });
    },
  );

  test(`an interrupted blocklist job (${path}) resumes from its queue on the next run`, async () => {
    await withDatabase(async (db, userId) => {
      const r = lcgRandom(scanFrom ?? 61);
      const entries: NewBlocklistEntry[] = [];
      const targets: string[] = [];
      for (let i = 0; i < 6; i++) {
        const phash = randomHash(r);
        const sha256 = randomSha(r);
        targets.push(
          await insertUpload(db, userId, i % 2 ? { sha256, phash: randomHash(r) } : { sha256: randomSha(r), phash }),
        );
        entries.push(
          i % 2
            ? { sha256, phash: null, reason: 'exact' }
            : { sha256: null, phash: flipBits(phash, 1 + i, r), reason: 'near' },
        );
      }
      const moderator = { id: userId, username: 'owner' };
      await new BlocklistRepository(db, options).add(entries, {
        source: 'import',
        moderator,
        at: AT,
      });
      // The first step of two entries, then the process stops.
      const first = await new BlocklistRepository(db, options).holdMatches(2, DISTANCE, AT);
      assert.equal(first.entries, 2);
      assert.equal(await pendingCount(db), entries.length - 2);
      const heldFirst = [...(await states(db)).values()].filter((s) => s === 'held').length;
      assert.equal(first.held, heldFirst);

      // A new process: its own repository and service, the queue from the database.
      const blocklist = new BlocklistRepository(db, options);
      const rest = await moderationService(db, blocklist).holdBlocklistMatches(2);
      assert.equal(first.held + rest, targets.length);
      const after = await states(db);
      for (const id of targets) assert.equal(after.get(id), 'held');
      assert.deepEqual(await autoHolds(db), [...targets].sort());
      assert.equal(await pendingCount(db), 0);
    });
  });
}

test('the scan of the stored hashes gives the event loop a turn after each page', async () => {
  await withDatabase(async (db, userId) => {
    const r = lcgRandom(77);
    for (let i = 0; i < 40; i++) await insertUpload(db, userId, { sha256: randomSha(r), phash: randomHash(r) });
    const blocklist = new BlocklistRepository(db, { scanFrom: 1, scanPage: 4 });
    await blocklist.add([{ sha256: null, phash: randomHash(r), reason: 'near' }], {
      source: 'import',
      moderator: { id: userId, username: 'owner' },
      at: AT,
    });
    // A request arriving meanwhile is a macrotask: count how often one gets to run during the scan.
    let turns = 0;
    let scanning = true;
    const tick = () => {
      turns++;
      if (scanning) setImmediate(tick);
    };
    setImmediate(tick);
    await blocklist.holdMatches(10, DISTANCE, AT);
    scanning = false;
    // 40 uploads in pages of 4: at least 10 turns (SQLite reads each page synchronously: without the turns the
    // whole scan would run in one).
    assert.ok(turns >= 10, `${turns} turns`);
  });
});
