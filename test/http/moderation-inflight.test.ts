/**
 * Issue 27, bugs 1 and 2, through the real HTTP API (both databases), with a deterministic pause point instead of
 * luck of timing: each upload is held right after its worker task (its blocklist checks passed: SHA-256 before the
 * task, perceptual hash inside it) and before its insert, while an admin blocklists its bytes or bans its owner with
 * `remove_uploads` and the background jobs run. Released, the upload must be refused (400 `blocked_content`, 403
 * `banned`) with nothing stored: no row, no file, nothing staged, no temp file. Before the fix both answered 201 and
 * stayed visible (the hold job and the ban's removal had looked before the row existed).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { countUploads, diskState, uploadImage } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { banRemovalDone, banRemovalJob } from '../support/jobs.ts';
import type { ProcessedImage } from '../../src/domain/uploads/processed-image.ts';

let app: TestApp;
let admin: TestUser;
let seed = 27_000;

before(async () => {
  // Every image is its own: never answered as a near duplicate of another.
  app = await startApp({ NEAR_DUPLICATE_DISTANCE: '-1' });
  admin = await registerAdmin(app, `mod_${Math.random().toString(36).slice(2, 8)}`);
});
after(() => app.close());

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const image = () => photoJpeg({ width: 160, height: 120, seed: seed++ });

/**
 * Holds the next upload between its worker task and its insert: resolves `reached` with what the task computed
 * (the perceptual hash among it), and lets the upload go on when `release` is called.
 */
function pauseNextUpload() {
  const pool = app.composed.pool;
  const original = pool.process.bind(pool);
  let reached!: (p: ProcessedImage | null) => void;
  const atPause = new Promise<ProcessedImage | null>((r) => (reached = r));
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  pool.process = async (...args: Parameters<typeof pool.process>) => {
    pool.process = original;
    const processed = await original(...args);
    reached(processed);
    await released;
    return processed;
  };
  return { atPause, release };
}

async function nothingStored(rows: number, files: number) {
  assert.equal(await countUploads(app), rows, 'no row');
  const disk = await diskState(app);
  assert.equal(disk.media.length, files, 'no stored file');
  assert.deepEqual([disk.staging, disk.tmp], [[], []], 'nothing staged, no temp file');
}

/** Waits until every `blocklist_hold` job is done (the hold job has run on every entry). */
const holdJobsDone = async () => {
  for (;;) {
    const r = await app.api.get('/api/admin/jobs?limit=100', { token: admin.token });
    assert.equal(r.status, 200, r.text);
    const pending = r.body.jobs.filter(
      (j: { kind: string; status: string }) => j.kind === 'blocklist_hold' && j.status !== 'done',
    );
    if (!pending.length) return;
    await new Promise((res) => setTimeout(res, 50));
  }
};

for (const by of ['sha256', 'phash'] as const) {
  test(`bug 1: an upload in flight when its ${by} is blocklisted is refused, nothing stored`, async () => {
    const user = await registerUser(app.api);
    const bytes = await image();
    const rows = await countUploads(app);
    const files = (await diskState(app)).media.length;
    const pause = pauseNextUpload();
    const answer = uploadImage(app.api, user.token, bytes);
    const processed = await pause.atPause;
    assert.ok(processed, 'the upload passed its blocklist checks and was processed');
    const entry = by === 'sha256' ? { sha256: sha256(bytes) } : { phash: processed.phash };
    const added = await app.api.post(
      '/api/admin/blocklist',
      { entries: [{ ...entry, reason: 'in flight' }] },
      { token: admin.token },
    );
    assert.equal(added.status, 200, added.text);
    assert.deepEqual({ ...added.body, job: undefined }, { added: 1, skipped: 0, job: undefined });
    // The hold job runs on the new entry now, before the row exists: it holds nothing.
    await holdJobsDone();
    pause.release();
    const r = await answer;
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error, 'blocked_content');
    await nothingStored(rows, files);
  });
}

test('bug 2: an upload in flight when its owner is banned with remove_uploads is refused, nothing stored', async () => {
  const victim = await registerUser(app.api);
  const earlier = await uploadImage(app.api, victim.token, await image());
  assert.equal(earlier.status, 201, earlier.text);
  const rows = await countUploads(app);
  const files = (await diskState(app)).media.length;
  const pause = pauseNextUpload();
  const answer = uploadImage(app.api, victim.token, await image());
  assert.ok(await pause.atPause);
  const ban = await app.api.post(
    `/api/admin/users/${victim.id}/ban`,
    { reason: 'in flight', until: null, remove_uploads: true },
    { token: admin.token },
  );
  assert.equal(ban.status, 200, ban.text);
  // The removal job runs now, before the in-flight row exists, and removes the earlier upload only.
  const job = await banRemovalDone(app.api, admin.token, victim.id);
  assert.deepEqual(job.progress, { done: 1, total: 1 });
  pause.release();
  const r = await answer;
  assert.equal(r.status, 403, r.text);
  assert.equal(r.body.error, 'banned');
  assert.match(r.body.message, /banned permanently/);
  assert.equal(await countUploads(app), rows, 'no row');
  const disk = await diskState(app);
  assert.ok(disk.media.length < files, "the earlier upload's files are gone, and no new ones came");
  assert.deepEqual([disk.staging, disk.tmp], [[], []], 'nothing staged, no temp file');
  assert.equal((await app.api.get(`/api/upload/${earlier.body.id}`)).status, 410);
  assert.equal((await banRemovalJob(app.api, admin.token, victim.id)).progress.done, 1, 'nothing else to remove');
});
