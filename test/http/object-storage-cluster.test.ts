/**
 * The proof of many machines (issue 19): three gateway processes with three different DATA_DIRs (no directory in
 * common), one PostgreSQL, one Redis and one object store (the real server of scripts/s3-server.sh). Upload on one;
 * read, serve, dedupe, vote and delete on the others; then kill -9 one of them during a load of uploads and
 * deletes: every accepted upload has its objects (0 lost), and after a sweep every object has its row (0 orphans).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { spawnServer, type ServerProcess } from '../support/process.ts';
import { registerUser } from '../support/users.ts';
import { uploadImage } from '../support/uploads.ts';
import { photoJpeg, pngImage } from '../support/fixtures.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres, TEST_REDIS_URL } from '../support/env.ts';
import { dropRedisKeys, testRedisPrefix } from '../support/redis.ts';
import { createTestBucket, s3Skip, type TestBucket } from '../support/s3.ts';

const skip =
  (!onPostgres && 'gateways on several machines share PostgreSQL + Redis (runs in the PostgreSQL + Redis pass)') ||
  (await s3Skip());

let bucket: TestBucket;
let database: { url: string; drop(): Promise<void> };
let env: Record<string, string>;
const dataDirs: string[] = [];
const running: ServerProcess[] = [];

async function gateway(extra: Record<string, string> = {}): Promise<ServerProcess> {
  const dataDir = await mkdtemp(join(tmpdir(), 'pixvote-s3-gw-'));
  dataDirs.push(dataDir);
  const s = await spawnServer({ ...env, DATA_DIR: dataDir, ...extra });
  running.push(s);
  return s;
}

before(async () => {
  if (skip) return;
  bucket = await createTestBucket();
  database = await createTestDatabase();
  env = {
    ...bucket.env(undefined, 'media'),
    DATABASE_URL: database.url,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: testRedisPrefix(),
    // Machines with no directory in common share the secret by configuration, not through DATA_DIR.
    JWT_SECRET: randomBytes(32).toString('hex'),
    WORKERS: '1',
    HUMAN_POLICY: 'off',
    RATE_LIMIT_AUTH: '1000/15m',
    RATE_LIMIT_UPLOAD: '10000/1h',
    RATE_LIMIT_VOTE: '10000/1h',
    RATE_LIMIT_GENERAL: '100000/15m',
  };
});
after(async () => {
  if (skip) return;
  for (const s of running) s.kill('SIGKILL');
  await Promise.all(running.map((s) => s.exited));
  await database.drop();
  await dropRedisKeys(env.REDIS_PREFIX!);
  await bucket.drop();
  for (const d of dataDirs) await rm(d, { recursive: true, force: true });
});

const keyOf = (filename: string) => filename.replace(/\.webp$/, '');

/** Media keys of the objects in the store, with how many variants each has. */
async function storedKeys(): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const k of await bucket.keys()) {
    const key = k.split('/').pop()!.split('.')[0]!;
    out.set(key, (out.get(key) ?? 0) + 1);
  }
  return out;
}

async function rowKeys(): Promise<Set<string>> {
  const c = new pg.Client({ connectionString: database.url });
  await c.connect();
  try {
    const r = await c.query<{ media_key: string }>('select media_key from uploads where media_key is not null');
    return new Set(r.rows.map((x) => x.media_key));
  } finally {
    await c.end();
  }
}

test(
  'three gateways with no directory in common, one store: one service; kill -9 loses nothing',
  { skip },
  async () => {
    const [a, b, c] = await Promise.all([gateway(), gateway(), gateway()]);
    const [alice, bob] = await Promise.all([registerUser(a.api), registerUser(b.api)]);

    // Upload on A; read and serve on B and C, the same bytes.
    const up = await uploadImage(a.api, alice.token, await photoJpeg({ width: 800, height: 600, seed: 1990 }));
    assert.equal(up.status, 201, up.text);
    const fromB = await b.api.get(`/api/image/${up.body.id}`);
    const fromC = await c.api.get(`/api/image/${up.body.id}?size=full`);
    assert.equal(fromB.status, 200);
    assert.deepEqual(fromB.bytes, fromC.bytes);
    assert.equal((await c.api.get(`/api/upload/${up.body.id}`)).body.id, up.body.id);

    // Dedupe on B: the same bytes are a duplicate of A's upload.
    const again = await uploadImage(b.api, alice.token, await photoJpeg({ width: 800, height: 600, seed: 1990 }));
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.existingUploadId, up.body.id);

    // Vote on C.
    const vote = await c.api.post('/api/vote', { uploadId: up.body.id, vote: 'fucks' }, { token: bob.token });
    assert.equal(vote.status, 200, vote.text);
    assert.equal((await a.api.get(`/api/upload/${up.body.id}`)).body.upvotes, 1);

    // A private upload on A, its twin by Bob on C shares its objects; deletes on B and C release them at the last row.
    const bytes = await pngImage(400, 300, 1991);
    const priv = await uploadImage(a.api, alice.token, bytes, { is_private: 'true' });
    const twin = await uploadImage(c.api, bob.token, bytes);
    assert.equal(priv.status, 201, priv.text);
    assert.equal(twin.status, 201, twin.text);
    const shared = keyOf(priv.body.filename);
    assert.equal((await b.api.del(`/api/upload/${priv.body.id}`, { token: alice.token })).status, 200);
    assert.equal((await storedKeys()).get(shared), 3, 'the twin still references them');
    assert.equal((await a.api.get(`/api/image/${twin.body.id}`)).status, 200);
    assert.equal((await c.api.del(`/api/upload/${twin.body.id}`, { token: bob.token })).status, 200);
    assert.equal((await storedKeys()).has(shared), false);

    // The load: uploads through all three, deletes of some accepted ones, and C killed -9 in the middle.
    const accepted = new Map<string, string>(); // id → media key
    const deleted = new Set<string>();
    let seed = 2000;
    let acceptedOnC = 0;
    let killed = false;
    const killedC = new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (acceptedOnC >= 3 && !killed) {
          killed = true;
          c.kill('SIGKILL');
          clearInterval(check);
          resolve();
        }
      }, 5);
    });
    const worker = async (s: ServerProcess, n: number) => {
      for (let i = 0; i < n; i++) {
        const image = await photoJpeg({ width: 480, height: 360, seed: seed++ });
        let r;
        try {
          r = await uploadImage(s.api, alice.token, image);
        } catch {
          continue; // C is gone: the connection failed, nothing was accepted
        }
        if (r.status !== 201) continue;
        accepted.set(r.body.id as string, keyOf(r.body.filename));
        if (s === c) acceptedOnC++;
        // Every third accepted upload is deleted again, through another gateway.
        if (accepted.size % 3 === 0) {
          const other = s === a ? b : a;
          const d = await other.api.del(`/api/upload/${r.body.id}`, { token: alice.token });
          if (d.status === 200) deleted.add(r.body.id as string);
        }
      }
    };
    await Promise.all([worker(a, 10), worker(b, 10), worker(c, 12), worker(c, 12)]);
    await killedC;
    await c.exited;
    assert.ok(acceptedOnC >= 3);

    // A sweep, as any gateway runs it at start-up (grace 0: no upload is in flight now).
    const sweeper = await gateway({ MEDIA_SWEEP_GRACE: '0s' });

    const rows = await rowKeys();
    const stored = await storedKeys();
    // 0 lost: every accepted upload not deleted has its row and its three objects, served by the gateways.
    for (const [id, key] of accepted) {
      if (deleted.has(id)) {
        assert.equal((await a.api.get(`/api/upload/${id}`)).status, 404);
        continue;
      }
      assert.ok(rows.has(key), `accepted upload ${id} has its row`);
      assert.equal(stored.get(key), 3, `accepted upload ${id} has its three objects`);
    }
    // Every row (accepted answers lost with C included) has its objects; every object has its row: 0 orphans.
    for (const key of rows) assert.equal(stored.get(key), 3, `row of media ${key} has its objects`);
    for (const key of stored.keys()) assert.ok(rows.has(key), `object ${key} has a row (no orphan after the sweep)`);
    const one = [...accepted].find(([id]) => !deleted.has(id))!;
    assert.equal((await sweeper.api.get(`/api/image/${one[0]}?size=thumb`)).status, 200);
  },
);
