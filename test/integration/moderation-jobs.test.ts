/**
 * The store under the durable moderation jobs and the insert's re-checks (issue 27), on the real database (SQLite
 * and PostgreSQL):
 *   - an upload's insert that arrives while a blocklist addition or a ban is being committed waits for it and is
 *     refused by it (the locks of insert-guard.ts), instead of committing beside it unseen by the hold job or the
 *     ban's removal;
 *   - a `ban_removal` job is claimed by one runner at a time, taken over once its lease expires, removes each upload
 *     once (one modlog line) even when two runners step it at once, and fails for good after repeated errors;
 *   - a blocklist addition is a `blocklist_hold` job whose progress counts the entries the hold job handled.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { similarityIndexFor } from '../../src/store/similarity/similarity-index.ts';
import { addBlocklistEntries, BlocklistRepository } from '../../src/store/moderation/blocklist.repository.ts';
import { ModerationRepository } from '../../src/store/moderation/moderation.repository.ts';
import { JobRepository } from '../../src/store/moderation/job.repository.ts';
import { UploadRepository } from '../../src/store/repositories/upload.repository.ts';
import type { NewUpload } from '../../src/domain/uploads/ports.ts';
import { JOB_BATCH, ModerationService } from '../../src/domain/moderation/moderation.service.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres } from '../support/env.ts';
import { insertUser } from '../support/users.ts';
import { newUpload } from '../support/memory-ports.ts';

const AT = new Date(Date.UTC(2026, 1, 1));
const MOD = { id: randomUUID(), username: 'mod' };

async function withDatabase(fn: (db: Database, repos: ReturnType<typeof reposOf>) => Promise<void>) {
  const dir = await mkdtemp(join(tmpdir(), 'pixvote-jobs-'));
  const pg = onPostgres ? await createTestDatabase() : null;
  const db = await openDatabase({ databaseUrl: pg?.url ?? null, sqlitePath: join(dir, 'app.db') });
  try {
    await fn(db, reposOf(db));
  } finally {
    await db.close();
    await pg?.drop();
    await rm(dir, { recursive: true, force: true });
  }
}

function reposOf(db: Database) {
  const similarity = similarityIndexFor(db.dialect, 'multi-index-hashing');
  const uploads = new UploadRepository(db, similarity);
  return {
    uploads,
    moderation: new ModerationRepository(db, uploads, similarity),
    blocklist: new BlocklistRepository(db),
    jobs: new JobRepository(db, similarity),
  };
}

const addUser = (db: Database) => insertUser(db, AT);

/** A row as the upload service builds it: an image with these hashes, or a link. */
function row(userId: string, hashes: { sha256: string; phash: string } | null = null): NewUpload {
  return newUpload({
    userId,
    uploadType: hashes ? 'image' : 'link',
    externalUrl: hashes ? null : `https://example.com/${randomUUID()}`,
    createdAt: AT,
    sha256: hashes?.sha256 ?? null,
    phash: hashes?.phash ?? null,
  });
}

const hex = (len: number) => randomUUID().replace(/-/g, '').repeat(2).slice(0, len);

/** Whether `p` is still pending after the event loop (and the database) had `ms` to settle it. */
async function pendingAfter(p: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false;
  void p.then(
    () => (settled = true),
    () => (settled = true),
  );
  await new Promise((r) => setTimeout(r, ms));
  return !settled;
}

/** Runs `write` in a transaction that stays open until the returned `commit` is called. */
function openTransaction(db: Database, write: Parameters<Database['transaction']>[0]) {
  let commit!: () => void;
  const gate = new Promise<void>((r) => (commit = r));
  let written!: () => void;
  const ready = new Promise<void>((r) => (written = r));
  const done = db.transaction(async (em, tx) => {
    await write(em, tx);
    written();
    await gate;
  });
  return { ready, commit, done };
}

test('an insert arriving while a blocklist addition commits waits, then is refused (sha256, phash)', async () => {
  await withDatabase(async (db, { uploads }) => {
    const userId = await addUser(db);
    for (const by of ['sha256', 'phash'] as const) {
      const hashes = { sha256: hex(64), phash: hex(16) };
      const entry = by === 'sha256' ? { sha256: hashes.sha256, phash: null } : { sha256: null, phash: hashes.phash };
      const version = await new BlocklistRepository(db).version();
      const add = openTransaction(db, (_em, tx) =>
        addBlocklistEntries(tx, db.dialect, [{ ...entry, reason: 'x' }], { source: 'import', moderator: MOD, at: AT }),
      );
      await add.ready;
      const upload = row(userId, hashes);
      const insert = uploads.insert(upload, [], { blocklist: { version, distance: 4 } });
      const waited = await pendingAfter(insert, 300);
      add.commit();
      await add.done;
      assert.ok(waited, `${by}: the insert waits for the addition's commit`);
      assert.deepEqual(await insert, { ok: false, refused: 'blocked' }, by);
      assert.equal(await uploads.findById(upload.id), null, `${by}: nothing stored`);
    }
  });
});

test("the insert repeats the blocklist's lookups only when its version moved since the upload read it", async () => {
  await withDatabase(async (db, { uploads, blocklist }) => {
    const userId = await addUser(db);
    const hashes = { sha256: hex(64), phash: hex(16) };
    const before = await blocklist.version();
    await blocklist.add([{ ...hashes, reason: 'x' }], { source: 'import', moderator: MOD, at: AT });
    const after = await blocklist.version();
    assert.equal(after, before + 1, 'an addition bumps the version');
    await blocklist.add([{ ...hashes, reason: 'again' }], { source: 'import', moderator: MOD, at: AT });
    assert.equal(await blocklist.version(), after, 'one that adds nothing does not');
    // Read before the entry came: checked again, refused.
    const seenBefore = { version: before, distance: 4 };
    assert.deepEqual(await uploads.insert(row(userId, hashes), [], { blocklist: seenBefore }), {
      ok: false,
      refused: 'blocked',
    });
    // Read after it: the upload's early checks saw it (and refused the upload), so the insert does not look again.
    const seenAfter = { version: after, distance: 4 };
    assert.equal((await uploads.insert(row(userId, hashes), [], { blocklist: seenAfter })).ok, true);
  });
});

test('an insert arriving while a ban commits waits for it and is refused; after an unban it is stored', async () => {
  await withDatabase(async (db, { uploads, moderation }) => {
    const userId = await addUser(db);
    const until = new Date(AT.getTime() + 3_600_000);
    const ban = openTransaction(db, (_em, tx) =>
      tx
        .updateTable('users')
        .set({ banned_until: db.dialect.date(until), ban_reason: 'x' })
        .where('id', '=', userId)
        .execute(),
    );
    await ban.ready;
    const upload = row(userId);
    const insert = uploads.insert(upload, []);
    const waited = await pendingAfter(insert, 300);
    ban.commit();
    await ban.done;
    assert.ok(waited, 'the insert waits for the ban');
    const refused = await insert;
    assert.equal(refused.ok, false);
    assert.ok('refused' in refused && refused.refused === 'banned' && refused.until.getTime() === until.getTime());
    assert.equal(await uploads.findById(upload.id), null, 'nothing stored');
    // A ban that has ended refuses nothing.
    await moderation.setBan(userId, null, { moderator: MOD, at: AT });
    assert.deepEqual(await uploads.insert(row(userId), []), { ok: true, sharedMedia: false });
  });
});

test('a ban_removal job: one claimer at a time, taken over after its lease, each upload removed once', async () => {
  await withDatabase(async (db, { uploads, moderation, jobs }) => {
    const userId = await addUser(db);
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const r = row(userId);
      assert.equal((await uploads.insert(r, [])).ok, true);
      ids.push(r.id);
    }
    const jobId = randomUUID();
    assert.ok(
      await moderation.setBan(
        userId,
        { until: new Date(AT.getTime() + 3_600_000), reason: 'spam' },
        { moderator: MOD, at: AT, removal: { jobId, reason: 'account banned: spam' } },
      ),
    );
    const queued = await jobs.find(jobId);
    assert.equal(queued?.status, 'queued');
    assert.deepEqual([queued?.done, queued?.total], [0, 7]);
    assert.deepEqual(queued?.target, { type: 'user', id: userId });

    const claimed = await jobs.claim('a', 10_000, AT);
    assert.equal(claimed?.id, jobId);
    assert.equal(claimed?.status, 'running');
    assert.equal(await jobs.claim('b', 10_000, new Date(AT.getTime() + 9_000)), null, 'the lease holds it');
    const first = await jobs.removalStep(jobId, 'a', 3, 10_000, AT);
    assert.deepEqual(first, { removed: 3, releasedMedia: [], finished: false, leaseLost: false });

    // Runner a stalls; b takes the job over once the lease has expired. Both step it at once: a removal is done
    // by whichever locks the upload first, never by both.
    const later = new Date(AT.getTime() + 20_001);
    assert.equal((await jobs.claim('b', 10_000, later))?.id, jobId);
    assert.equal((await jobs.removalStep(jobId, 'a', 3, 10_000, later)).leaseLost, true, 'a lost its lease');
    const [b1, b2] = await Promise.all([
      jobs.removalStep(jobId, 'b', 3, 10_000, later),
      jobs.removalStep(jobId, 'b', 3, 10_000, later),
    ]);
    let removed = 3 + b1.removed + b2.removed;
    let finished = b1.finished || b2.finished;
    while (!finished) {
      const step = await jobs.removalStep(jobId, 'b', 3, 10_000, later);
      removed += step.removed;
      finished = step.finished;
    }
    assert.equal(removed, 7, 'seven removals in all');
    const done = await jobs.find(jobId);
    assert.equal(done?.status, 'done');
    assert.deepEqual([done?.done, done?.total], [7, 7]);
    const lines = await db
      .db()
      .selectFrom('modlog')
      .select(['target_id', 'moderator_id', 'reason'])
      .where('action', '=', 'remove')
      .execute();
    assert.deepEqual(lines.map((l) => l.target_id).sort(), [...ids].sort(), 'exactly one remove line each');
    assert.ok(lines.every((l) => l.moderator_id === MOD.id && l.reason === 'account banned: spam'));
    const states = await db.db().selectFrom('uploads').select('moderation').where('user_id', '=', userId).execute();
    assert.ok(states.every((s) => s.moderation === 'removed'));
    assert.equal(await jobs.claim('c', 10_000, later), null, 'a done job is never claimed again');
  });
});

test('a job whose runs fail is claimed again after a back-off, and fails for good after five', async () => {
  await withDatabase(async (db, { moderation, jobs }) => {
    const userId = await addUser(db);
    const jobId = randomUUID();
    await moderation.setBan(
      userId,
      { until: new Date(AT.getTime() + 3_600_000), reason: 'x' },
      { moderator: MOD, at: AT, removal: { jobId, reason: 'x' } },
    );
    let at = AT.getTime();
    for (let attempt = 1; attempt <= 5; attempt++) {
      assert.equal((await jobs.claim('a', 10_000, new Date(at)))?.id, jobId, `claimed for attempt ${attempt}`);
      await jobs.fail(jobId, 'a', `boom ${attempt}`, new Date(at), 5);
      assert.equal(await jobs.claim('a', 10_000, new Date(at + 1_000)), null, 'not during the back-off');
      at += 6_000;
    }
    const failed = await jobs.find(jobId);
    assert.equal(failed?.status, 'failed');
    assert.equal(failed?.error, 'boom 5');
    assert.equal(await jobs.claim('a', 10_000, new Date(at)), null);
    assert.deepEqual(
      (await jobs.list('failed', 0, 10)).map((j) => j.id),
      [jobId],
    );
  });
});

test('a blocklist addition is a blocklist_hold job; its progress counts the entries the hold job handled', async () => {
  await withDatabase(async (db, { blocklist, jobs }) => {
    const entries = Array.from({ length: 5 }, () => ({ sha256: hex(64), phash: null, reason: 'r' }));
    const added = await blocklist.add(entries, { source: 'import', moderator: MOD, at: AT });
    const [job] = await jobs.list(null, 0, 10);
    assert.deepEqual(added, { added: 5, skipped: 0, job: { id: job?.id } });
    assert.equal(job?.kind, 'blocklist_hold');
    assert.deepEqual([job?.status, job?.done, job?.total], ['queued', 0, 5]);
    assert.deepEqual(job?.target, { type: 'blocklist', id: null });
    assert.deepEqual((await blocklist.holdMatches(2, 4, AT)).entries, 2);
    const half = await jobs.find(job.id);
    assert.deepEqual([half?.status, half?.done], ['running', 2]);
    // An entry deleted while still queued (the newest: the hold job takes the oldest first) counts as handled.
    const [last] = await blocklist.list(0, 1);
    assert.ok(await blocklist.remove(last!.id, { moderator: MOD, at: AT }));
    assert.equal((await jobs.find(job.id))?.done, 3);
    while ((await blocklist.holdMatches(2, 4, AT)).entries);
    const done = await jobs.find(job.id);
    assert.deepEqual([done?.status, done?.done, done?.total], ['done', 5, 5]);
  });
});

test("the runner's signal (shutdown) stops a job between two steps and gives its lease back", async () => {
  await withDatabase(async (db, repos) => {
    const userId = await addUser(db);
    for (let i = 0; i < JOB_BATCH * 3; i++) assert.equal((await repos.uploads.insert(row(userId), [])).ok, true);
    const jobId = randomUUID();
    await repos.moderation.setBan(
      userId,
      { until: new Date(AT.getTime() + 3_600_000), reason: 'x' },
      { moderator: MOD, at: AT, removal: { jobId, reason: 'x' } },
    );
    const stop = new AbortController();
    let changed = 0;
    const service = new ModerationService({
      store: repos.moderation,
      blocklist: repos.blocklist,
      jobs: repos.jobs,
      uploads: repos.uploads,
      clock: { now: () => AT },
      policy: { reportHoldThreshold: 3, blocklistDistance: 4 },
      releaseMedia: async () => {},
      // Shutdown comes once the first step's removals are in (the feeds are told after each step).
      events: { onChanged: async () => void (++changed === 1 && stop.abort()) },
    });
    assert.equal(await service.runJobs(stop.signal), JOB_BATCH, 'one step, then it stopped');
    const job = await repos.jobs.find(jobId);
    assert.deepEqual([job?.status, job?.done, job?.total], ['running', JOB_BATCH, JOB_BATCH * 3]);
    const lease = await db
      .db()
      .selectFrom('moderation_jobs')
      .select(['lease_owner', 'lease_until'])
      .where('id', '=', jobId)
      .executeTakeFirstOrThrow();
    assert.deepEqual(lease, { lease_owner: null, lease_until: null }, 'the lease is given back');
    // Another process takes it over at once and finishes it.
    assert.equal(await service.runJobs(), JOB_BATCH * 2);
    const done = await repos.jobs.find(jobId);
    assert.deepEqual([done?.status, done?.done, done?.total], ['done', JOB_BATCH * 3, JOB_BATCH * 3]);
  });
});
