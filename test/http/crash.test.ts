import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { access, mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { spawnServer, type ServerProcess } from '../support/process.ts';
import { startApp } from '../support/app.ts';
import { registerUser, type TestUser } from '../support/users.ts';
import { diskStateOf, uploadFields, uploadImage } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres } from '../support/env.ts';
import { openDatabase } from '../../src/store/database.ts';
import { until } from '../support/budget.ts';

const VARIANTS = ['thumb', 'medium', 'full'];

/** Starts an upload whose body trickles in and never finishes (the process is killed meanwhile). */
function trickle(url: string, token: string, jpeg: Buffer): void {
  const boundary = 'x-pixvote-test';
  const head =
    `--${boundary}\r\ncontent-disposition: form-data; name="upload_type"\r\n\r\nimage\r\n` +
    `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="t.jpg"\r\n` +
    'content-type: image/jpeg\r\n\r\n';
  const req = request(`${url}/api/v1/upload`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(head.length + jpeg.length + 40),
    },
  });
  req.on('error', () => {});
  req.write(head);
  req.write(jpeg.subarray(0, Math.floor(jpeg.length / 2)));
}

/** How many images the server's pipeline has decoded so far (its /metrics). */
async function decoded(s: ServerProcess): Promise<number> {
  const text = (await s.api.get('/metrics')).text;
  return Number(/^pixvote_pipeline_stage_duration_seconds_count\{stage="decode"\} (\d+)$/m.exec(text)?.[1] ?? 0);
}

async function consistency(dataDir: string, databaseUrl: string | null, accepted: string[]) {
  const db = await openDatabase({ databaseUrl, sqlitePath: join(dataDir, 'app.db') });
  try {
    const rows = await db.db().selectFrom('uploads').select(['id', 'media_key']).execute();
    const ids = new Set(rows.map((r) => r.id));
    for (const id of accepted) assert.ok(ids.has(id), `upload ${id} answered 201 before the crash and is still there`);
    const keys = new Set(rows.map((r) => r.media_key).filter(Boolean));
    for (const key of keys) {
      for (const v of VARIANTS)
        await access(join(dataDir, 'media', key!.slice(0, 2), `${key}.${v}.webp`)).catch(() =>
          assert.fail(`row with media ${key} lacks its ${v} file`),
        );
    }
    const disk = await diskStateOf(dataDir);
    for (const file of disk.media)
      assert.ok(keys.has(basename(file).split('.')[0]!), `file ${basename(file)} has a row`);
    assert.deepEqual(disk.staging, [], 'the start-up sweep left nothing staged');
    assert.deepEqual(disk.tmp, [], 'the start-up sweep left no temp file');
    const garbage = await db.db().selectFrom('media_garbage').select('media_key').execute();
    assert.equal(garbage.length, 0);
  } finally {
    await db.close();
  }
}

test(
  'SIGKILL while uploads stream in, while they are in the pipeline, and right after commits: ' +
    'after restart every row has its files and every file its row',
  async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'pixvote-crash-'));
    const database = onPostgres ? await createTestDatabase() : null;
    const env = {
      DATA_DIR: dataDir,
      WORKERS: '1',
      WORKER_QUEUE: '50',
      HUMAN_POLICY: 'off',
      RATE_LIMIT_AUTH: '1000/15m',
      RATE_LIMIT_UPLOAD: '10000/1h',
      RATE_LIMIT_GENERAL: '100000/15m',
      ...(database ? { DATABASE_URL: database.url } : {}),
    };
    const accepted: string[] = [];
    let server: ServerProcess | null = null;
    const recoveries: unknown[] = [];
    const restart = async () => {
      server = await spawnServer(env);
      recoveries.push(...server.logs.filter((l) => l.msg === 'media recovered'));
      return server;
    };
    const crash = async () => {
      server!.kill('SIGKILL');
      await server!.exited;
    };
    try {
      let s = await restart();
      const user: TestUser = await registerUser(s.api);
      const images = await Promise.all(
        Array.from({ length: 8 }, (_, i) => photoJpeg({ width: 2400, height: 1800, seed: 1300 + i, metadata: false })),
      );

      // 1. While uploads stream in: bodies half sent.
      for (const img of images.slice(0, 3)) trickle(s.url, user.token, img);
      // Killed once the server is writing all three bodies to its temp files.
      await until(async () => (await diskStateOf(dataDir)).tmp.length >= 3);
      await crash();
      s = await restart();
      await consistency(dataDir, database?.url ?? null, accepted);

      // 2. While they are in the pipeline: whole bodies sent, one worker thread, a queue behind it.
      const track = (p: Promise<{ status: number; body: { id?: string } }>) =>
        p.then(
          (r) => {
            if (r.status === 201 && r.body.id) accepted.push(r.body.id);
          },
          () => {},
        );
      const inPipeline = images.map((img) => track(uploadImage(s.api, user.token, img)));
      // Killed once the first image is through its decode: the thread is busy and the others wait behind it.
      await until(async () => (await decoded(s)) >= 1);
      await crash();
      await Promise.all(inPipeline);
      s = await restart();
      await consistency(dataDir, database?.url ?? null, accepted);

      // 3. Right after commits: eight lanes of small uploads back to back, killed mid-stream.
      const small = await Promise.all(
        Array.from({ length: 16 }, (_, i) => photoJpeg({ width: 320, height: 240, seed: 1400 + i, metadata: false })),
      );
      const before = accepted.length;
      let n = 0;
      let running = true;
      const lane = async () => {
        while (running) {
          const i = n++;
          const img = small[i % small.length]!;
          // Distinct bytes each time (a changed JPEG comment), so none is a duplicate.
          const bytes = Buffer.concat([
            img.subarray(0, 2),
            Buffer.from([0xff, 0xfe, 0, 8]),
            Buffer.from(String(i).padStart(6, '0')),
            img.subarray(2),
          ]);
          await track(
            i % 3
              ? uploadImage(s.api, user.token, bytes)
              : uploadFields(s.api, user.token, { upload_type: 'link', external_url: `https://example.com/c${i}` }),
          );
        }
      };
      const lanes = Array.from({ length: 8 }, lane);
      // Kill it while commits are flowing: once a few have been accepted (however slow the machine),
      // not at a fixed time.
      await until(() => accepted.length >= before + 4);
      await crash();
      running = false;
      await Promise.all(lanes);
      assert.ok(accepted.length > before, 'uploads were being accepted when the process died');
      assert.ok(accepted.length > 0, 'some uploads were accepted before the crashes');
      s = await restart();
      await consistency(dataDir, database?.url ?? null, accepted);
      for (const id of accepted) assert.equal((await s.api.get(`/api/upload/${id}`)).status, 200);
      if (process.env.PIXVOTE_TEST_VERBOSE) console.log({ accepted: accepted.length, recoveries });
      s.kill('SIGTERM');
      assert.equal((await s.exited).code, 0);
    } finally {
      if (server && (server as ServerProcess).proc.exitCode === null) (server as ServerProcess).kill('SIGKILL');
      await database?.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  },
);

test(
  'a crash between the database commit and the rename into place: ' +
    'start-up moves the staged files of the committed row in',
  async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'pixvote-commit-gap-'));
    const database = onPostgres ? await createTestDatabase() : null;
    const shared = { sharedDataDir: dataDir, ...(database ? { databaseUrl: database.url } : {}) };
    try {
      const first = await startApp({}, shared);
      const user = await registerUser(first.api);
      const up = await uploadImage(first.api, user.token, await photoJpeg({ width: 800, height: 600, seed: 1701 }));
      assert.equal(up.status, 201, up.text);
      await first.close();
      // The state such a crash leaves: the row committed, its files still in the dead process's staging directory.
      const shard = (await readdir(join(dataDir, 'media')))[0]!;
      const files = await readdir(join(dataDir, 'media', shard));
      assert.equal(files.length, 3);
      const key = files[0]!.split('.')[0]!;
      const staged = join(dataDir, 'staging', `${hostname()}~999999~1`, key);
      await mkdir(staged, { recursive: true });
      for (const f of files) await rename(join(dataDir, 'media', shard, f), join(staged, f));

      const second = await startApp({}, shared);
      try {
        for (const f of files)
          await access(join(dataDir, 'media', shard, f)).catch(() => assert.fail(`${f} was not moved into place`));
        assert.deepEqual((await diskStateOf(dataDir)).staging, [], 'nothing left staged');
        for (const size of ['thumb', 'medium', 'full'])
          assert.equal((await second.api.get(`/api/image/${up.body.id}?size=${size}`)).status, 200);
      } finally {
        await second.close();
      }
    } finally {
      await database?.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  },
);
