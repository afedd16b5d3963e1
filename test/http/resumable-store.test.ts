/**
 * Resumable uploads across gateways that share no disk (issue 49 item 3–4): with MEDIA_STORE=s3://… the bytes
 * received so far are an S3 multipart upload in the bucket (@tus/s3-store: whole parts of 5 MiB, the rest in an
 * incomplete-part object, its state in an `.info` object), so a gateway with another DATA_DIR (same database,
 * same bucket, same Redis on PostgreSQL) finishes with tus-js-client what the first began, and the file is byte
 * for byte the source, also after a gateway process was killed (-9) mid-PATCH, and when the bucket holds more than
 * the row's offset (a gateway that died between the two writes); concurrent PATCHes through two gateways: exactly
 * one applies (the lock: Redis's on the PostgreSQL + Redis pass, the database lease on SQLite); expiry answers 404
 * and leaves no object and no open multipart upload; partial data with no row is swept; /metrics counts open
 * uploads, bytes held, expired and swept ones.
 *
 * On SQLite the other gateways' DATA_DIRs hold a link to the first one's database file (SQLite is one machine's;
 * the point is that nothing else of DATA_DIR is shared).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { watch } from 'node:fs';
import { mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, sep } from 'node:path';
import {
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListPartsCommand,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import * as tus from 'tus-js-client';
import { currentMetrics, startApp, type TestApp } from '../support/app.ts';
import { registerUser, type TestUser } from '../support/users.ts';
import { uploadImage } from '../support/uploads.ts';
import { photoJpeg, pngImage } from '../support/fixtures.ts';
import { createTestBucket, s3Skip, type TestBucket } from '../support/s3.ts';
import { pollUntil } from '../support/budget.ts';
import { killMidPatch, openPatch, resumableLockKey, resumableLocked, spawnGateway } from '../support/resumable.ts';
import { client } from '../support/http.ts';
import { LEASE_MS } from '../../src/domain/uploads/resumable.ts';
import type { Clock } from '../../src/domain/clock.ts';

const skip = await s3Skip();
const TUS = '/api/uploads/resumable';
const CHUNK = 64 * 1024;
const V = { 'tus-resumable': '1.0.0' };

let skewMs = 0;
const clock: Clock = { now: () => new Date(Date.now() + skewMs) };

describe('resumable uploads on object storage, across gateways', { skip }, () => {
  let bucket: TestBucket;
  let a: TestApp;
  let b: TestApp;
  let shared: Record<string, string>;
  const dirs: string[] = [];
  let alice: TestUser;

  /** A DATA_DIR of its own; on SQLite holding a link to A's database file. */
  async function ownDataDir(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'pixvote-test-'));
    dirs.push(dir);
    if (!a.config.databaseUrl) await symlink(join(a.config.dataDir, 'app.db'), join(dir, 'app.db'));
    return dir;
  }

  before(async () => {
    bucket = await createTestBucket();
    shared = {
      ...bucket.env(undefined, 'media'),
      RESUMABLE_TTL: '1h',
      // Orphan parts are swept at once (no upload is created without its row first).
      MEDIA_SWEEP_GRACE: '0s',
      JWT_SECRET: randomBytes(32).toString('hex'),
    };
    a = await startApp(shared, { clock });
    // Another DATA_DIR: no partial file, staging or secret in common; the same database, bucket and Redis.
    b = await startApp(
      { ...shared, ...(a.config.redisUrl ? { REDIS_PREFIX: a.config.redisPrefix } : {}) },
      {
        clock,
        sharedDataDir: await ownDataDir(),
        ...(a.config.databaseUrl ? { databaseUrl: a.config.databaseUrl } : {}),
      },
    );
    alice = await registerUser(a.api);
  });
  after(async () => {
    await b?.close();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    await a?.close();
    await bucket?.drop();
  });

  /** The multipart upload's key; `.info` and `.part` beside it. */
  const keyOf = (id: string) => `media/resumable/${id}`;
  const objectsOf = async (id: string) => (await bucket.keys()).filter((k) => k.startsWith(keyOf(id))).sort();
  const openUploadsOf = async (id: string) =>
    (await bucket.client.send(new ListMultipartUploadsCommand({ Bucket: bucket.name, Prefix: keyOf(id) }))).Uploads ??
    [];
  /** The sizes of the whole parts of the upload's (only) multipart upload. */
  const partSizesOf = async (id: string) => {
    const [open] = await openUploadsOf(id);
    const listed = await bucket.client.send(
      new ListPartsCommand({ Bucket: bucket.name, Key: keyOf(id), UploadId: open!.UploadId }),
    );
    return (listed.Parts ?? []).map((p) => p.Size);
  };
  const sizeOf = async (key: string) =>
    (await bucket.client.send(new HeadObjectCommand({ Bucket: bucket.name, Key: key }))).ContentLength;
  /** No object of the upload and no multipart upload open for it. */
  const gone = async (id: string) => (await objectsOf(id)).length === 0 && (await openUploadsOf(id)).length === 0;
  const localParts = async (app: TestApp) => readdir(join(app.config.dataDir, 'resumable')).catch(() => [] as string[]);
  const head = (app: TestApp, url: string) =>
    fetch(app.url + url, { method: 'HEAD', headers: { ...V, authorization: `Bearer ${alice.token}` } });
  const offsetOf = async (app: TestApp, url: string) => Number((await head(app, url)).headers.get('upload-offset'));
  const create = (app: TestApp, length: number) =>
    app.api.post(TUS, undefined, { token: alice.token, headers: { ...V, 'upload-length': String(length) } });
  const patch = (app: TestApp, url: string, offset: number, bytes: Uint8Array) =>
    app.api.patch(url, undefined, {
      token: alice.token,
      raw: bytes,
      headers: { ...V, 'content-type': 'application/offset+octet-stream', 'upload-offset': String(offset) },
      unchecked: 'tus statuses (409) are the protocol’s',
    });
  const locked = resumableLocked;

  test('another DATA_DIR finishes with tus-js-client what one began; the stored bytes are the source', async () => {
    const bytes = await photoJpeg({ width: 1024, height: 768, seed: 4910 });
    const options = (endpoint: TestApp, resolve: () => void, reject: (e: Error) => void) => ({
      endpoint: endpoint.url + TUS,
      headers: { authorization: `Bearer ${alice.token}` },
      chunkSize: CHUNK,
      retryDelays: [0, 50, 100],
      metadata: { upload_type: 'image', filename: 'two-machines.jpg', description: 'began on A, finished on B' },
      onSuccess: () => resolve(),
      onError: (e: Error) => reject(e),
    });
    let first!: tus.Upload;
    await new Promise<void>((resolve, reject) => {
      first = new tus.Upload(bytes, {
        ...options(a, () => reject(new Error('finished without being cut')), reject),
        onChunkComplete: (_size: number, accepted: number) => {
          if (accepted >= bytes.length / 2) void first.abort(false).then(resolve, reject);
        },
      });
      first.start();
    });
    const path = new URL(first.url!).pathname;
    const id = path.split('/').pop()!;
    const half = await offsetOf(a, path);
    assert.ok(half >= bytes.length / 2 && half < bytes.length, `offset ${half}`);
    // The bytes so far are in the bucket, a multipart upload (the file is less than one 5 MiB part, so they are
    // all in its incomplete part), and nowhere on A's disk.
    assert.equal((await openUploadsOf(id)).length, 1);
    assert.deepEqual(await objectsOf(id), [`${keyOf(id)}.info`, `${keyOf(id)}.part`]);
    assert.equal(await sizeOf(`${keyOf(id)}.part`), half);
    assert.deepEqual(await localParts(a), []);
    assert.equal(await offsetOf(b, path), half, 'B sees the offset A acknowledged');

    await new Promise<void>((resolve, reject) => {
      new tus.Upload(bytes, { ...options(b, resolve, reject), uploadUrl: b.url + path }).start();
    });
    const r = await b.api.get(`${path}/result`, { token: alice.token });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.description, 'began on A, finished on B');
    assert.deepEqual(await localParts(b), []);
    // The objects are deleted once the upload use case ran (after its answer).
    await pollUntil(() => gone(id), 'the objects deleted', 10_000);
    // The stored upload's SHA-256 is the source's: the same bytes sent directly are its exact duplicate.
    const direct = await uploadImage(a.api, alice.token, bytes, {}, 'again.jpg');
    assert.equal(direct.status, 200, direct.text);
    assert.equal(direct.body.match, 'exact');
    assert.equal(direct.body.existingUploadId, r.body.id);
  });

  test('one gateway, small PATCHes (7001 bytes): the completed multipart upload is the source', async () => {
    const bytes = await pngImage(420, 300, 4915);
    const c = await create(a, bytes.length);
    const url = c.headers.get('location')!;
    const step = 7001;
    for (let at = 0; at < bytes.length; at += step)
      assert.equal((await patch(a, url, at, bytes.subarray(at, at + step))).status, 204);
    const r = await a.api.get(`${url}/result`, { token: alice.token });
    assert.equal(r.status, 201, r.text);
    const direct = await uploadImage(b.api, alice.token, bytes, {}, 'again.png');
    assert.equal(direct.status, 200, direct.text);
    assert.equal(direct.body.match, 'exact');
    assert.equal(direct.body.existingUploadId, r.body.id);
  });

  test('the whole file with the creation: one object, no multipart upload; the result, then nothing left', async () => {
    const bytes = await pngImage(360, 240, 4917);
    const res = await fetch(a.url + TUS, {
      method: 'POST',
      body: bytes,
      headers: {
        ...V,
        authorization: `Bearer ${alice.token}`,
        'upload-length': String(bytes.length),
        'content-type': 'application/offset+octet-stream',
      },
    });
    assert.equal(res.status, 201, await res.text());
    assert.equal(res.headers.get('upload-offset'), String(bytes.length));
    const url = res.headers.get('location')!;
    assert.deepEqual(await openUploadsOf(url.split('/').pop()!), [], 'nothing partial: no multipart upload');
    const r = await b.api.get(`${url}/result`, { token: alice.token });
    assert.equal(r.status, 201, r.text);
    const direct = await uploadImage(a.api, alice.token, bytes, {}, 'again.png');
    assert.equal(direct.body.match, 'exact', direct.text);
    assert.equal(direct.body.existingUploadId, r.body.id);
    await pollUntil(() => gone(url.split('/').pop()!), 'the object deleted', 10_000);
  });

  test('over 5 MiB: a whole part, an incomplete one; bytes the bucket has already are passed over', async () => {
    const MiB = 1024 * 1024;
    const bytes = await pngImage(2400, 1800, 4916);
    assert.ok(bytes.length > 6 * MiB && bytes.length < 10 * MiB, `${bytes.length} bytes`);
    const c = await create(a, bytes.length);
    const url = c.headers.get('location')!;
    const id = url.split('/').pop()!;
    const tail = `${keyOf(id)}.part`;
    assert.equal((await patch(a, url, 0, bytes.subarray(0, 3 * MiB))).status, 204);
    assert.deepEqual(await partSizesOf(id), [], 'less than a part: all of it in the incomplete part');
    assert.equal(await sizeOf(tail), 3 * MiB);
    const before = await (
      await bucket.client.send(new GetObjectCommand({ Bucket: bucket.name, Key: tail }))
    ).Body!.transformToByteArray();
    assert.equal((await patch(a, url, 3 * MiB, bytes.subarray(3 * MiB, 5 * MiB))).status, 204);
    assert.deepEqual(await partSizesOf(id), [5 * MiB], 'a whole part of 5 MiB');
    assert.deepEqual(await objectsOf(id), [`${keyOf(id)}.info`], 'its incomplete part went into it');

    // A gateway that died after the part was written, before it deleted the incomplete part and recorded the
    // offset: the part, the old incomplete part beside it, the row at 3 MiB. The client sends from 3 MiB again.
    await bucket.client.send(new PutObjectCommand({ Bucket: bucket.name, Key: tail, Body: before }));
    await a.composed.db
      .db()
      .updateTable('resumable_uploads')
      .set({ received: 3 * MiB })
      .where('id', '=', id)
      .execute();
    assert.equal(await offsetOf(b, url), 3 * MiB);
    assert.equal((await patch(b, url, 3 * MiB, bytes.subarray(3 * MiB, 4 * MiB))).status, 204);
    assert.deepEqual(await objectsOf(id), [`${keyOf(id)}.info`], 'the leftover incomplete part is deleted');
    assert.deepEqual(await partSizesOf(id), [5 * MiB], 'the bytes the part holds are not written twice');
    assert.equal(await offsetOf(a, url), 4 * MiB);

    // The rest with tus-js-client from the server's offset, in chunks under a part: the last part is shorter.
    await new Promise<void>((resolve, reject) => {
      new tus.Upload(bytes, {
        uploadUrl: a.url + url,
        headers: { authorization: `Bearer ${alice.token}` },
        chunkSize: 700 * 1024,
        retryDelays: [0, 50, 100],
        onSuccess: () => resolve(),
        onError: (e: Error) => reject(e),
      }).start();
    });
    const r = await b.api.get(`${url}/result`, { token: alice.token });
    assert.equal(r.status, 201, r.text);
    const direct = await uploadImage(a.api, alice.token, bytes, {}, 'again.png');
    assert.equal(direct.status, 200, direct.text);
    assert.equal(direct.body.match, 'exact', 'the stored bytes are the source, byte for byte');
    assert.equal(direct.body.existingUploadId, r.body.id);
    await pollUntil(() => gone(id), 'the objects deleted', 10_000);
  });

  test('npm start stages each part it sends in its own DATA_DIR/tmp directory, removed when it stops', async () => {
    const MiB = 1024 * 1024;
    const bytes = await pngImage(2400, 1800, 4917);
    const c = await create(a, bytes.length);
    const url = c.headers.get('location')!;
    const id = url.split('/').pop()!;
    const dataDir = await ownDataDir();
    // `npm start` (main.ts), not an app composed in this process: it points the process's TMPDIR there.
    const child = await spawnGateway(a, { ...shared, DATA_DIR: dataDir });
    const viaChild = { ...a, url: child.url, api: client(child.url) };
    // S3Store stages a part in os.tmpdir() while it sends it (@tus/utils' StreamSplitter: `<10 characters>-<n>`).
    const staged = /^[\w-]{10}-\d+$/;
    const seen: string[] = [];
    const watcher = watch(join(dataDir, 'tmp'), { recursive: true }, (_, name) => {
      if (name && staged.test(basename(name))) seen.push(name);
    });
    try {
      assert.equal((await patch(viaChild, url, 0, bytes.subarray(0, 6 * MiB))).status, 204);
      assert.deepEqual(await partSizesOf(id), [5 * MiB], 'a whole part was sent');
    } finally {
      watcher.close();
      await child.stop();
    }
    assert.ok(seen.length > 0, 'the part was staged under the gateway’s DATA_DIR/tmp');
    assert.ok(
      seen.every((name) => name.split(sep).length === 2),
      `in its own instance directory: ${seen.join(', ')}`,
    );
    assert.deepEqual(await readdir(join(dataDir, 'tmp')), [], 'the stopped gateway removed its directory');
    assert.equal((await a.api.del(url, { token: alice.token, headers: V })).status, 204);
    await pollUntil(() => gone(id), 'the objects deleted', 10_000);
  });

  test('acknowledged bytes gone from the bucket (deleted by hand): 503, never a file with a hole', async () => {
    const bytes = await pngImage(300, 200, 4918);
    const c = await create(a, bytes.length);
    const url = c.headers.get('location')!;
    const id = url.split('/').pop()!;
    assert.equal((await patch(a, url, 0, bytes.subarray(0, 1000))).status, 204);
    await bucket.client.send(new DeleteObjectCommand({ Bucket: bucket.name, Key: `${keyOf(id)}.part` }));
    const r = await patch(b, url, 1000, bytes.subarray(1000));
    assert.equal(r.status, 503, r.text);
    assert.equal(r.body.error, 'storage_unavailable');
    assert.equal(await offsetOf(a, url), 1000, 'nothing acknowledged');
    assert.equal((await a.api.del(url, { token: alice.token, headers: V })).status, 204);
    assert.ok(await gone(id));
  });

  test('concurrent PATCHes through two gateways: one holds the lock, the other gets 409; one applies', async () => {
    const bytes = await pngImage(640, 480, 4911);
    const c = await create(a, bytes.length);
    assert.equal(c.status, 201, c.text);
    const url = c.headers.get('location')!;
    const id = url.split('/').pop()!;
    const chunk = bytes.subarray(0, Math.min(CHUNK, bytes.length - 1));
    // A's PATCH sends half its chunk, then waits: it holds the lock meanwhile.
    const answered = new Promise<{ status: number; offset: number }>((resolve, reject) => {
      const req = openPatch(a.url, url, alice.token, 0, chunk.length);
      req.on('response', (res) => {
        res.resume();
        resolve({ status: res.statusCode!, offset: Number(res.headers['upload-offset']) });
      });
      req.on('error', reject);
      req.write(chunk.subarray(0, chunk.length >> 1));
      void pollUntil(() => locked(a, id), 'A’s PATCH holds the lock', 10_000).then(async () => {
        const other = await patch(b, url, 0, chunk);
        assert.equal(other.status, 409, other.text);
        assert.match(other.body.message, /another request/);
        req.end(chunk.subarray(chunk.length >> 1));
      }, reject);
    });
    const first = await answered;
    assert.equal(first.status, 204);
    assert.equal(first.offset, chunk.length);
    assert.equal(await locked(a, id), false, 'the lock is let go when the PATCH ends');

    // A race: six PATCHes at one offset through both gateways at once. One applies, the others get 409.
    const next = bytes.subarray(chunk.length, chunk.length + 1000);
    const all = await Promise.all([a, b, a, b, a, b].map((g) => patch(g, url, chunk.length, next)));
    assert.deepEqual(
      all.map((r) => r.status).sort(),
      [204, 409, 409, 409, 409, 409],
      all.map((r) => r.text).join(' | '),
    );
    assert.equal(await offsetOf(b, url), chunk.length + next.length);
    assert.equal((await a.api.del(url, { token: alice.token, headers: V })).status, 204);
    assert.ok(await gone(id), 'termination aborts the multipart upload and deletes its objects');
  });

  test('kill -9 of a gateway mid-PATCH loses only the unacknowledged chunk; another DATA_DIR finishes', async () => {
    const bytes = await photoJpeg({ width: 1024, height: 768, seed: 4914 });
    const c = await create(a, bytes.length);
    const url = c.headers.get('location')!;
    const id = url.split('/').pop()!;
    // A gateway process of its own (DATA_DIR, no disk in common), on the same database, bucket and Redis.
    const child = await spawnGateway(a, { ...shared, DATA_DIR: await ownDataDir() });
    const viaChild = { ...a, url: child.url, api: client(child.url) };
    const half = Math.floor(bytes.length / 2 / CHUNK) * CHUNK;
    let sent = 0;
    try {
      for (let at = 0; at < half; at += CHUNK) {
        assert.equal((await patch(viaChild, url, at, bytes.subarray(at, at + CHUNK))).status, 204);
        sent += CHUNK;
      }
      // Mid-chunk, while its PATCH holds the lock, the gateway dies.
      await killMidPatch(child, a, {
        url,
        token: alice.token,
        offset: half,
        chunk: bytes.subarray(half, half + CHUNK),
      });
      sent += CHUNK / 2;
    } finally {
      await child.stop();
    }
    assert.equal(await offsetOf(b, url), half, 'what was acknowledged is kept');
    // The dead gateway's lock runs out (LEASE_MS): in Redis the key is deleted as its expiry would, in the
    // database the clock moves on.
    if (a.composed.redis) await a.composed.redis.del(resumableLockKey(a, id));
    skewMs = LEASE_MS + 1000;
    try {
      await new Promise<void>((resolve, reject) => {
        new tus.Upload(bytes, {
          uploadUrl: b.url + url,
          headers: { authorization: `Bearer ${alice.token}` },
          chunkSize: CHUNK,
          retryDelays: [0, 50, 100],
          onChunkComplete: (size: number) => (sent += size),
          onSuccess: () => resolve(),
          onError: (e: Error) => reject(e),
        }).start();
      });
      const r = await b.api.get(`${url}/result`, { token: alice.token });
      assert.equal(r.status, 201, r.text);
      const direct = await uploadImage(a.api, alice.token, bytes, {}, 'again.jpg');
      assert.equal(direct.status, 200, direct.text);
      assert.equal(direct.body.match, 'exact', 'the stored bytes are the source, byte for byte');
      assert.equal(direct.body.existingUploadId, r.body.id);
    } finally {
      skewMs = 0;
    }
    assert.ok(sent - bytes.length <= CHUNK, `${sent - bytes.length} bytes sent twice`);
    await pollUntil(() => gone(id), 'the objects deleted', 10_000);
  });

  test('expiry: 404, no object and no open multipart upload left; uploads with no row swept; /metrics', async () => {
    const bytes = await pngImage(300, 200, 4912);
    const c = await create(b, bytes.length);
    const url = c.headers.get('location')!;
    const id = url.split('/').pop()!;
    assert.equal((await patch(b, url, 0, bytes.subarray(0, 500))).status, 204);
    assert.deepEqual(await objectsOf(id), [`${keyOf(id)}.info`, `${keyOf(id)}.part`]);
    assert.equal((await openUploadsOf(id)).length, 1);
    let text = await currentMetrics(a);
    assert.match(text, /^pixvote_resumable_open [1-9]/m);
    assert.match(text, /^pixvote_resumable_bytes [1-9]\d*/m);
    // Uploads whose row is gone (its user deleted, a crash): nothing points at them. One as S3Store leaves it
    // (a multipart upload, its `.info` and `.part`), one a multipart upload alone (a creation cut before `.info`).
    const orphan = randomUUID();
    const bare = randomUUID();
    const { UploadId } = await bucket.client.send(
      new CreateMultipartUploadCommand({ Bucket: bucket.name, Key: keyOf(orphan) }),
    );
    await bucket.client.send(new CreateMultipartUploadCommand({ Bucket: bucket.name, Key: keyOf(bare) }));
    for (const [suffix, body] of [
      ['.info', JSON.stringify({ id: keyOf(orphan), size: 10, offset: 0 })],
      ['.part', 'abcd'],
    ] as const)
      await bucket.client.send(
        new PutObjectCommand({
          Bucket: bucket.name,
          Key: keyOf(orphan) + suffix,
          Body: body,
          Metadata: suffix === '.info' ? { 'upload-id': UploadId!, 'tus-version': '1.0.0' } : undefined,
        }),
      );
    skewMs = 61 * 60 * 1000;
    try {
      assert.equal((await head(a, url)).status, 404);
      assert.ok((await a.composed.sweepResumable()) >= 1);
      assert.ok(await gone(id), 'the expired upload’s objects and multipart upload are gone');
      assert.ok(await gone(orphan), 'the orphan upload is swept (older than the grace)');
      assert.ok(await gone(bare), 'the multipart upload with no object is swept too');
      text = await currentMetrics(a);
      assert.match(text, /pixvote_resumable_uploads_total\{event="expired"\} [1-9]/);
      assert.match(text, /pixvote_resumable_uploads_total\{event="orphan_swept"\} [1-9]/);
    } finally {
      skewMs = 0;
    }
    // Only the uploads' own objects went: the variants of stored uploads are untouched by this sweep.
    assert.ok((await bucket.keys()).some((k) => k.endsWith('.full.webp')));
  });

  test('the parts of a live upload are not orphans, whatever the grace', async () => {
    const bytes = await pngImage(200, 100, 4913);
    const c = await create(a, bytes.length);
    const url = c.headers.get('location')!;
    const id = url.split('/').pop()!;
    assert.equal((await patch(a, url, 0, bytes.subarray(0, 100))).status, 204);
    await a.composed.sweepResumable();
    // Nor does the media sweep take them for variants no row references (grace 0 here).
    await a.composed.sweepMedia();
    assert.deepEqual(await objectsOf(id), [`${keyOf(id)}.info`, `${keyOf(id)}.part`]);
    assert.equal((await openUploadsOf(id)).length, 1);
    assert.equal((await patch(b, url, 100, bytes.subarray(100))).status, 204);
    const r = await a.api.get(`${url}/result`, { token: alice.token });
    assert.equal(r.status, 201, r.text);
  });
});
