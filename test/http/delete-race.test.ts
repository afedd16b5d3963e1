/**
 * Files shared by content (another user's private upload of the same bytes) against deletes that race
 * the upload sharing them, and the answer such an upload gets: the same as any fresh upload's.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { currentMetrics, startApp, type TestApp } from '../support/app.ts';
import { registerUser, type TestUser } from '../support/users.ts';
import { diskState, uploadImage } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';
import type { Reply } from '../support/http.ts';

let app: TestApp;

before(async () => {
  // Near matching off: 150 random little images must each be stored, never answered as a near duplicate
  // of another pair's image. Two workers keep the uploads of parallel pairs moving.
  app = await startApp({ NEAR_DUPLICATE_DISTANCE: '-1', WORKERS: '2' });
});
after(() => app.close());

const SIZES = ['thumb', 'medium', 'full'] as const;

/** Every row's stored files are in place, every stored file belongs to a row, and no release is pending. */
async function assertRowsAndFilesAgree(): Promise<void> {
  const rows = await app.composed.db
    .db()
    .selectFrom('uploads')
    .select('media_key')
    .where('media_key', 'is not', null)
    .execute();
  const keys = new Set(rows.map((r) => r.media_key as string));
  const onDisk = new Set((await diskState(app)).media.map((f) => /([0-9a-f-]{36})\.\w+\.webp$/.exec(f)![1]!));
  assert.deepEqual(
    [...onDisk].filter((k) => !keys.has(k)),
    [],
    'no stored file outlives its last row',
  );
  assert.deepEqual(
    [...keys].filter((k) => !onDisk.has(k)),
    [],
    'every row has its files',
  );
  const garbage = await app.composed.db.db().selectFrom('media_garbage').select('media_key').execute();
  assert.deepEqual(garbage, [], 'no release is left pending');
}

async function mediaKeyOf(id: string): Promise<string | undefined> {
  const row = await app.composed.db
    .db()
    .selectFrom('uploads')
    .select('media_key')
    .where('id', '=', id)
    .executeTakeFirst();
  return row?.media_key as string | undefined;
}

/** The record answers 200 and every size of its image answers 200 with bytes. */
async function brokenParts(id: string): Promise<string[]> {
  const broken: string[] = [];
  const record = await app.api.get(`/api/upload/${id}`);
  if (record.status !== 200) broken.push(`record ${record.status}`);
  for (const size of SIZES) {
    const img = await app.api.get(`/api/image/${id}?size=${size}`);
    if (img.status !== 200 || img.bytes.length === 0) broken.push(`${size} ${img.status}`);
  }
  return broken;
}

describe('deleting a private upload while another user uploads the same bytes', () => {
  test('150 races: every accepted upload keeps its record and all its image sizes; rows and files agree', async (t) => {
    const PAIRS = 150;
    const LANES = 6;
    const lanes: Array<{ a: TestUser; b: TestUser }> = [];
    for (let i = 0; i < LANES; i++) lanes.push({ a: await registerUser(app.api), b: await registerUser(app.api) });
    const broken: string[] = [];
    let [sharedFiles, ownFiles] = [0, 0];
    let next = 0;
    const runLane = async ({ a, b }: { a: TestUser; b: TestUser }) => {
      for (let i = next++; i < PAIRS; i = next++) {
        const bytes = await photoJpeg({ width: 48, height: 36, seed: 10_000 + i, metadata: false });
        const started = performance.now();
        const hidden = await uploadImage(app.api, a.token, bytes, { is_private: 'true' });
        assert.equal(hidden.status, 201, hidden.text);
        // B's upload does the same work as A's just did. The delete leaves from 0 to 1.2 times that later, so
        // across the pairs it lands before B's upload looks for stored files, between that and B's insert, during
        // the insert, and after it.
        const delay = ((i % 25) / 20) * (performance.now() - started);
        const hiddenKey = await mediaKeyOf(hidden.body.id);
        const [gone, twin] = await Promise.all([
          new Promise((r) => setTimeout(r, delay)).then(() =>
            app.api.del(`/api/upload/${hidden.body.id}`, { token: a.token }),
          ),
          uploadImage(app.api, b.token, bytes),
        ]);
        assert.equal(gone.status, 200, gone.text);
        assert.equal(twin.status, 201, twin.text);
        const parts = await brokenParts(twin.body.id);
        if (parts.length) broken.push(`pair ${i}: ${parts.join(', ')}`);
        if ((await mediaKeyOf(twin.body.id)) === hiddenKey) sharedFiles++;
        else ownFiles++;
      }
    };
    await Promise.all(lanes.map(runLane));
    assert.deepEqual(broken, [], `${broken.length} of ${PAIRS} accepted uploads lost their files`);
    await assertRowsAndFilesAgree();
    // The races covered both ends: some uploads kept the deleted upload's files, others stored their own.
    t.diagnostic(`${sharedFiles} uploads shared the deleted upload's files, ${ownFiles} stored their own`);
    assert.ok(sharedFiles > 0 && ownFiles > 0, `shared ${sharedFiles}, own ${ownFiles}`);
  });
});

describe("re-uploading bytes that exist only as another user's private upload", () => {
  /** Runs of the encoding stage so far (read from the registry itself: the /metrics rendering may be cached). */
  const encodeRuns = async () =>
    Number(
      /^pixvote_pipeline_stage_duration_seconds_count\{stage="encode"\} (\d+)$/m.exec(await currentMetrics(app))?.[1] ??
        0,
    );

  /** The answer with what must differ between two uploads (their ids, owners, times, own names) taken out. */
  const comparable = (r: Reply) => {
    const { id, user_id, username, created_at, filename, ...rest } = r.body;
    const { url, thumbnail_url, ...image } = rest.image;
    for (const v of [id, user_id, username, created_at, filename, url, thumbnail_url]) assert.equal(typeof v, 'string');
    assert.match(filename, /^[0-9a-f-]{36}\.webp$/);
    const volatile = new Set(['date', 'x-request-id', 'location', 'etag']);
    const headers = [...r.headers].filter(([k]) => !volatile.has(k) && !k.startsWith('ratelimit-'));
    return {
      status: r.status,
      headerNames: [...r.headers.keys()].sort(),
      headers,
      body: { ...rest, image },
      length: r.text.length,
    };
  };

  test(
    'answers as a brand-new upload: same status, headers, ' + 'fields, values and length, after the same pipeline work',
    async () => {
      const [carol, bob] = [await registerUser(app.api), await registerUser(app.api)];
      const bytes = await photoJpeg({ width: 320, height: 240, seed: 31_337 });
      const fields = { is_private: 'true', description: 'the same caption', tags: 'same,tags' };
      const runs0 = await encodeRuns();
      // The first upload of these bytes: nothing like them exists.
      const fresh = await uploadImage(app.api, carol.token, bytes, fields, 'same.jpg');
      assert.equal(fresh.status, 201, fresh.text);
      const runs1 = await encodeRuns();
      const media = (await diskState(app)).media.length;
      // Bob cannot see Carol's private upload: his upload of the same bytes must not tell it exists.
      const twin = await uploadImage(app.api, bob.token, bytes, fields, 'same.jpg');
      assert.equal(twin.status, 201, twin.text);
      assert.equal((await diskState(app)).media.length, media, 'the stored files are shared (this is the twin path)');
      assert.deepEqual(comparable(twin), comparable(fresh));
      assert.equal(twin.body.username, bob.username);
      assert.ok(
        !twin.text.includes(fresh.body.id) && !twin.text.includes(fresh.body.filename.slice(0, 36)),
        'nothing names or ties to the private upload',
      );
      // No shortcut: the twin went through the same worker pipeline (its timing is a fresh upload's).
      assert.equal(runs1 - runs0, 1);
      assert.equal((await encodeRuns()) - runs1, 1, 'the twin was encoded like a fresh upload');
      // And its images are served.
      for (const size of SIZES)
        assert.equal((await app.api.get(`/api/image/${twin.body.id}?size=${size}`)).status, 200);
    },
  );
});

describe('the media sweep at start-up', () => {
  test('removes journalled files no row references, and never the files of a row', async () => {
    const owner = await registerUser(app.api);
    const kept = await uploadImage(
      app.api,
      owner.token,
      await photoJpeg({ width: 64, height: 48, seed: 4242, metadata: false }),
    );
    assert.equal(kept.status, 201, kept.text);
    const keptKey = (await mediaKeyOf(kept.body.id))!;
    // A process killed between a delete's commit and its unlink leaves journalled files without a row.
    const orphanKey = randomUUID();
    const orphanFiles = SIZES.map((v) =>
      join(app.config.dataDir, 'media', orphanKey.slice(0, 2), `${orphanKey}.${v}.webp`),
    );
    await mkdir(dirname(orphanFiles[0]!), { recursive: true });
    for (const f of orphanFiles) await writeFile(f, 'x');
    // And a journal entry for files a row references (stale, as a release that lost a race would leave it).
    const at = app.composed.db.dialect.date(new Date());
    await app.composed.db
      .db()
      .insertInto('media_garbage')
      .values([
        { media_key: orphanKey, created_at: at },
        { media_key: keptKey, created_at: at },
      ])
      .execute();
    // The next process to start sweeps (here a second one, on the same database and media).
    const restarted = await startApp(
      {},
      { sharedDataDir: app.config.dataDir, ...(app.config.databaseUrl ? { databaseUrl: app.config.databaseUrl } : {}) },
    );
    try {
      for (const size of SIZES)
        assert.equal(
          (await restarted.api.get(`/api/image/${kept.body.id}?size=${size}`)).status,
          200,
          `${size} of a live upload`,
        );
      for (const f of orphanFiles)
        await assert.rejects(stat(f), { code: 'ENOENT' }, 'journalled files without a row are removed');
      assert.deepEqual(
        await app.composed.db.db().selectFrom('media_garbage').select('media_key').execute(),
        [],
        'the journal is cleared',
      );
    } finally {
      await restarted.close();
    }
  });
});
