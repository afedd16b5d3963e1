/**
 * Resumable uploads, tus 1.0 (issue 49; API.md "Resumable uploads"), through HTTP as a tus client speaks it: a
 * transfer cut at 50 % resumes from the server's offset (one chunk at most sent twice), a second app instance on
 * the same database and DATA_DIR finishes what the first began, the complete file gets exactly the direct upload's
 * answer (record, duplicate notice, blocked_content), limits (413, RESUMABLE_MAX_OPEN 429), expiry (404, bytes
 * gone) and the tus statuses for bad requests (409, 412, 415, 460), never a 500.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { watch } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { currentMetrics, startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { uploadImage } from '../support/uploads.ts';
import { photoJpeg, pngImage } from '../support/fixtures.ts';
import type { Clock } from '../../src/domain/clock.ts';
import { LEASE_MS } from '../../src/domain/uploads/resumable.ts';
import { client } from '../support/http.ts';
import { pollUntil } from '../support/budget.ts';
import { killMidPatch, resumableLockKey, spawnGateway } from '../support/resumable.ts';
import * as tus from 'tus-js-client';

const TUS = '/api/uploads/resumable';
const CHUNK = 32 * 1024;
const V = { 'tus-resumable': '1.0.0' };

let skewMs = 0;
const clock: Clock = { now: () => new Date(Date.now() + skewMs) };
let app: TestApp;
let second: TestApp;
let alice: TestUser;
let admin: TestUser;

const b64 = (s: string) => Buffer.from(s).toString('base64');
const metadata = (m: Record<string, string>) =>
  Object.entries(m)
    .map(([k, v]) => `${k} ${b64(v)}`)
    .join(',');
const sha256b64 = (b: Uint8Array) => createHash('sha256').update(b).digest('base64');
const partFiles = async (a: TestApp) => readdir(join(a.config.dataDir, 'resumable')).catch(() => [] as string[]);

async function create(a: TestApp, user: TestUser, length: number, meta: Record<string, string> = {}, extra = {}) {
  return a.api.post(TUS, undefined, {
    token: user.token,
    headers: { ...V, 'upload-length': String(length), 'upload-metadata': metadata(meta), ...extra },
  });
}

const head = (a: TestApp, user: TestUser, url: string) =>
  fetch(a.url + url, { method: 'HEAD', headers: { ...V, authorization: `Bearer ${user.token}` } });

function patch(a: TestApp, user: TestUser, url: string, offset: number, bytes: Uint8Array, extra = {}) {
  return a.api.patch(url, undefined, {
    token: user.token,
    raw: bytes,
    headers: {
      ...V,
      'content-type': 'application/offset+octet-stream',
      'upload-offset': String(offset),
      'upload-checksum': `sha256 ${sha256b64(bytes)}`,
      ...extra,
    },
    unchecked: 'tus statuses (409, 412, 415, 460) are the protocol’s, not in the error table',
  });
}

/**
 * A PATCH whose connection is cut after `sent` of the chunk's bytes (the network drops mid-chunk). Resolves once
 * the server has closed its side of it.
 */
function cutPatch(a: TestApp, user: TestUser, url: string, offset: number, chunk: Uint8Array, sent: number) {
  return new Promise<void>((resolve) => {
    const req = httpRequest(a.url + url, {
      method: 'PATCH',
      headers: {
        ...V,
        authorization: `Bearer ${user.token}`,
        'content-type': 'application/offset+octet-stream',
        'content-length': String(chunk.length),
        'upload-offset': String(offset),
        'upload-checksum': `sha256 ${sha256b64(chunk)}`,
      },
    });
    req.on('error', () => resolve());
    req.on('close', () => resolve());
    req.write(chunk.subarray(0, sent), () => setImmediate(() => req.destroy()));
  });
}

/**
 * Sends `bytes` from the server's offset in CHUNK-sized PATCHes, as a tus client resumes: HEAD, then chunks; a
 * 409 (the server still settles a cut request) asks HEAD again. Resolves the bytes sent.
 */
async function sendFrom(a: TestApp, user: TestUser, url: string, bytes: Buffer, stopAt = bytes.length) {
  let sent = 0;
  let offset = Number((await head(a, user, url)).headers.get('upload-offset'));
  while (offset < stopAt) {
    const chunk = bytes.subarray(offset, Math.min(offset + CHUNK, stopAt));
    const r = await patch(a, user, url, offset, chunk);
    sent += chunk.length;
    if (r.status === 409) {
      offset = Number((await head(a, user, url)).headers.get('upload-offset'));
      continue;
    }
    assert.equal(r.status, 204, r.text);
    assert.equal(r.headers.get('tus-resumable'), '1.0.0');
    offset = Number(r.headers.get('upload-offset'));
    assert.equal(offset, Math.min(offset, bytes.length));
  }
  return sent;
}

/**
 * Waits until the server has settled a cut request (its lease on the upload released): an empty PATCH at the
 * offset is refused 409 until then, and changes nothing after.
 */
async function settled(a: TestApp, user: TestUser, url: string): Promise<void> {
  for (;;) {
    const offset = Number((await head(a, user, url)).headers.get('upload-offset'));
    const r = await patch(a, user, url, offset, Buffer.alloc(0));
    if (r.status === 204) return;
    assert.equal(r.status, 409, r.text);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const result = (a: TestApp, user: TestUser, url: string) => a.api.get(`${url}/result`, { token: user.token });

before(async () => {
  app = await startApp({ RESUMABLE_MAX_OPEN: '3', RESUMABLE_TTL: '1h' }, { clock });
  // A second instance on the same database and DATA_DIR: any process continues any upload.
  second = await startApp(
    {
      RESUMABLE_MAX_OPEN: '3',
      RESUMABLE_TTL: '1h',
      ...(app.config.redisUrl ? { REDIS_PREFIX: app.config.redisPrefix } : {}),
    },
    {
      clock,
      sharedDataDir: app.config.dataDir,
      ...(app.config.databaseUrl ? { databaseUrl: app.config.databaseUrl } : {}),
    },
  );
  alice = await registerUser(app.api);
  admin = await registerAdmin(app);
});
after(async () => {
  await second?.close();
  await app?.close();
});

describe('tus 1.0 resumable uploads', () => {
  test('OPTIONS announces the version, the extensions, the size limit and sha256', async () => {
    const r = await fetch(app.url + TUS, { method: 'OPTIONS' });
    assert.equal(r.status, 204);
    assert.equal(r.headers.get('tus-version'), '1.0.0');
    const ext = r.headers.get('tus-extension')!.split(',');
    for (const e of ['creation', 'creation-with-upload', 'termination', 'expiration', 'checksum'])
      assert.ok(ext.includes(e), e);
    assert.equal(r.headers.get('tus-max-size'), String(10 * 1024 * 1024));
    assert.equal(r.headers.get('tus-checksum-algorithm'), 'sha256');
  });

  test('a transfer cut at 50 % resumes from the offset, sends one chunk twice at most, gives the record', async () => {
    const bytes = await photoJpeg({ width: 1024, height: 768, seed: 49 });
    assert.ok(bytes.length > 4 * CHUNK, `fixture of ${bytes.length} bytes`);
    const c = await create(app, alice, bytes.length, {
      upload_type: 'image',
      filename: 'train.jpg',
      description: 'sent from a train',
      tags: 'cats, trains',
      is_private: 'false',
    });
    assert.equal(c.status, 201, c.text);
    const url = c.headers.get('location')!;
    assert.match(url, /^\/api\/uploads\/resumable\/[0-9a-f-]{36}$/);
    assert.ok(c.headers.get('upload-expires'));
    const pending = await result(app, alice, url);
    assert.equal(pending.status, 202);
    assert.deepEqual(pending.body, { status: 'receiving' });

    // Up to half, chunk by chunk; then the network drops halfway through the next chunk.
    const half = Math.floor(bytes.length / 2 / CHUNK) * CHUNK;
    let sent = await sendFrom(app, alice, url, bytes, half);
    const cutChunk = bytes.subarray(half, half + CHUNK);
    await cutPatch(app, alice, url, half, cutChunk, CHUNK / 2);
    sent += CHUNK / 2;
    await settled(app, alice, url);
    // The rest, from wherever the server says it is.
    sent += await sendFrom(app, alice, url, bytes);
    assert.ok(sent - bytes.length <= CHUNK, `${sent - bytes.length} bytes sent twice`);

    const done = await result(app, alice, url);
    assert.equal(done.status, 201, done.text);
    assert.equal(done.body.upload_type, 'image');
    assert.equal(done.body.description, 'sent from a train');
    assert.deepEqual(done.body.tags.map((t: { name: string }) => t.name).sort(), ['cats', 'trains']);
    const stored = await app.api.get(`/api/upload/${done.body.id}`);
    assert.equal(stored.status, 200);
    // The partial file is gone once processed (removed after the answer).
    await pollUntil(async () => (await partFiles(app)).length === 0, 'the partial file removed', 10_000);
    // The same bytes sent directly now: the duplicate notice the resumable upload's result matches in kind.
    const direct = await uploadImage(app.api, alice.token, bytes, {}, 'again.jpg');
    assert.equal(direct.status, 200);
    assert.equal(direct.body.existingUploadId, done.body.id);
  });

  test('tus-js-client: cut at 50 %, resumed from its URL by a new Upload, gets the record', async () => {
    const alice = await registerUser(app.api);
    const bytes = await photoJpeg({ width: 1024, height: 768, seed: 4907 });
    let sent = 0;
    const options = (resolve: () => void, reject: (e: Error) => void, onChunk?: (accepted: number) => void) => ({
      endpoint: app.url + TUS,
      headers: { authorization: `Bearer ${alice.token}` },
      chunkSize: CHUNK,
      retryDelays: [0, 50, 100],
      metadata: { upload_type: 'image', filename: 'client.jpg', description: 'tus-js-client', tags: 'cats' },
      onChunkComplete: (size: number, accepted: number) => {
        sent += size;
        onChunk?.(accepted);
      },
      onSuccess: () => resolve(),
      onError: (e: Error) => reject(e),
    });
    // The first run stops once half the file is acknowledged (the connection "drops").
    let first!: tus.Upload;
    await new Promise<void>((resolve, reject) => {
      first = new tus.Upload(
        bytes,
        options(
          () => reject(new Error('finished without being cut')),
          reject,
          (accepted) => {
            if (accepted >= bytes.length / 2) void first.abort(false).then(resolve, reject);
          },
        ),
      );
      first.start();
    });
    assert.ok(first.url, 'the creation answered a Location');
    const url = new URL(first.url).pathname;
    assert.deepEqual((await result(app, alice, url)).body, { status: 'receiving' });
    // A new client resumes from the upload's URL (what a resume file records): HEAD, then the rest.
    await new Promise<void>((resolve, reject) => {
      const again = new tus.Upload(bytes, { ...options(resolve, reject), uploadUrl: first.url! });
      again.start();
    });
    assert.ok(sent - bytes.length <= CHUNK, `${sent - bytes.length} bytes sent twice`);
    const r = await result(app, alice, url);
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.description, 'tus-js-client');
    assert.equal(r.body.original_name, 'client.jpg', 'the filename of Upload-Metadata');
  });

  test('a duplicate sent resumably gets exactly the duplicate notice the direct upload gets', async () => {
    const alice = await registerUser(app.api);
    const bytes = await pngImage(300, 200, 4901);
    const direct = await uploadImage(app.api, alice.token, bytes, {}, 'p.png');
    assert.equal(direct.status, 201);
    const again = await uploadImage(app.api, alice.token, bytes, {}, 'p.png');
    assert.equal(again.status, 200);
    const c = await create(app, alice, bytes.length, { filename: 'p.png' });
    const url = c.headers.get('location')!;
    await sendFrom(app, alice, url, bytes);
    const r = await result(app, alice, url);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, again.body);
  });

  test('a second app instance finishes what the first began (state in the database and DATA_DIR)', async () => {
    const alice = await registerUser(app.api);
    const bytes = await photoJpeg({ width: 800, height: 600, seed: 4902 });
    const c = await create(app, alice, bytes.length, { description: 'two gateways' });
    const url = c.headers.get('location')!;
    const half = Math.floor(bytes.length / 2);
    await sendFrom(app, alice, url, bytes, half);
    const h = await head(second, alice, url);
    assert.equal(h.status, 200);
    assert.equal(Number(h.headers.get('upload-offset')), half);
    await sendFrom(second, alice, url, bytes);
    const r = await result(second, alice, url);
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.description, 'two gateways');
    assert.equal((await result(app, alice, url)).status, 201);
  });

  test('kill -9 of the gateway mid-transfer loses only the unacknowledged chunk; another one continues', async () => {
    const alice = await registerUser(app.api);
    const bytes = await photoJpeg({ width: 1024, height: 768, seed: 4906 });
    const c = await create(app, alice, bytes.length, { description: 'survived a crash' });
    const url = c.headers.get('location')!;
    const id = url.split('/').pop()!;
    // Another process on the same database and DATA_DIR (the JWT secret is DATA_DIR's too).
    const child = await spawnGateway(app, { DATA_DIR: app.config.dataDir });
    const viaChild = { ...app, url: child.url, api: client(child.url) };
    let sent: number;
    const half = Math.floor(bytes.length / 2 / CHUNK) * CHUNK;
    try {
      sent = await sendFrom(viaChild, alice, url, bytes, half);
      // Mid-chunk, while its PATCH holds the upload's lock and streams the bytes in, the gateway dies.
      await killMidPatch(child, app, {
        url,
        token: alice.token,
        offset: half,
        chunk: bytes.subarray(half, half + CHUNK),
      });
      sent += CHUNK / 2;
    } finally {
      await child.stop();
    }
    const h = await head(app, alice, url);
    assert.equal(Number(h.headers.get('upload-offset')), half, 'what was acknowledged is kept');
    // The dead gateway's lock lapses after LEASE_MS; then this one takes the upload on. In the database the
    // clock is moved on; in Redis (its own clock) the key is deleted as its expiry would.
    const { redis } = app.composed;
    if (redis) {
      const lock = resumableLockKey(app, id);
      assert.ok((await redis.pttl(lock)) > 0, 'the dead gateway’s lock is in Redis, with an expiry');
      await redis.del(lock);
    }
    skewMs = LEASE_MS + 1000;
    try {
      sent += await sendFrom(app, alice, url, bytes);
      const r = await result(app, alice, url);
      assert.equal(r.status, 201, r.text);
      assert.equal(r.body.description, 'survived a crash');
      // The stored upload's SHA-256 is the source's: the same bytes sent directly are its exact duplicate.
      const direct = await uploadImage(app.api, alice.token, bytes, {}, 'again.jpg');
      assert.equal(direct.status, 200, direct.text);
      assert.equal(direct.body.match, 'exact');
      assert.equal(direct.body.existingUploadId, r.body.id);
    } finally {
      skewMs = 0;
    }
    assert.ok(sent - bytes.length <= CHUNK, `${sent - bytes.length} bytes sent twice`);
  });

  test('a blocklisted image sent resumably gets the same error as sent directly', async () => {
    const alice = await registerUser(app.api);
    const bytes = await pngImage(320, 240, 4903);
    const block = await app.api.post(
      '/api/admin/blocklist',
      { entries: [{ sha256: createHash('sha256').update(bytes).digest('hex'), reason: 'test' }] },
      { token: admin.token },
    );
    assert.equal(block.status, 200, block.text);
    const direct = await uploadImage(app.api, alice.token, bytes, {}, 'b.png');
    assert.equal(direct.status, 400);
    assert.equal(direct.body.error, 'blocked_content');
    // creation-with-upload: the whole file in the creation request.
    const c = await app.api.post(TUS, undefined, {
      token: alice.token,
      raw: bytes,
      headers: {
        ...V,
        'upload-length': String(bytes.length),
        'content-type': 'application/offset+octet-stream',
      },
    });
    assert.equal(c.status, 201, c.text);
    assert.equal(Number(c.headers.get('upload-offset')), bytes.length);
    const r = await result(app, alice, c.headers.get('location')!);
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, direct.body);
    // The creation that brought the whole file carries the same answer.
    assert.deepEqual(c.body.result, { status: 400, body: direct.body });
  });

  test('creation-with-upload of the whole file answers the record in its body, and so does its replay', async () => {
    const erin = await registerUser(app.api);
    const bytes = await photoJpeg({ width: 400, height: 300, seed: 4911 });
    const headers = {
      ...V,
      'upload-length': String(bytes.length),
      'upload-metadata': `filename ${Buffer.from('w.jpg').toString('base64')}`,
      'content-type': 'application/offset+octet-stream',
      'idempotency-key': 'whole-in-creation-1',
    };
    // Every file the partial-bytes directory sees created meanwhile.
    const partsDir = join(app.config.dataDir, 'resumable');
    await mkdir(partsDir, { recursive: true });
    const created: string[] = [];
    const watcher = watch(partsDir, (_event, name) => name && created.push(name));
    let c;
    try {
      c = await app.api.post(TUS, undefined, { token: erin.token, raw: bytes, headers });
    } finally {
      watcher.close();
    }
    assert.equal(c.status, 201, c.text);
    assert.equal(c.body.offset, bytes.length);
    // Checked in memory before anything was stored: no partial file was written.
    assert.ok(!created.includes(c.body.id), `no partial file: ${created.join(', ')}`);
    assert.equal(c.body.result.status, 201);
    assert.equal(c.body.result.body.original_name, 'w.jpg');
    const r = await result(app, erin, c.headers.get('location')!);
    assert.equal(r.status, 201);
    assert.deepEqual(c.body.result.body, r.body);
    // The same key again: the same upload and the same answer, no second record.
    const again = await app.api.post(TUS, undefined, { token: erin.token, raw: bytes, headers });
    assert.equal(again.status, 201, again.text);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.body.result, c.body.result);
    // A creation with only part of the file has no answer yet.
    const part = await app.api.post(TUS, undefined, {
      token: erin.token,
      raw: bytes.subarray(0, 1000),
      headers: { ...V, 'upload-length': String(bytes.length), 'content-type': 'application/offset+octet-stream' },
    });
    assert.equal(part.status, 201, part.text);
    assert.equal(part.body.offset, 1000);
    assert.equal(part.body.result, undefined);
  });

  test('bad headers and offsets get the tus statuses, never a 500, and store nothing', async () => {
    const alice = await registerUser(app.api);
    const bytes = await pngImage(200, 150, 4904);
    const c = await create(app, alice, bytes.length);
    const url = c.headers.get('location')!;
    const first = bytes.subarray(0, 100);
    assert.equal((await patch(app, alice, url, 5, first)).status, 409, 'offset mismatch');
    assert.equal((await patch(app, alice, url, 0, first, { 'content-type': 'image/png' })).status, 415);
    assert.equal((await patch(app, alice, url, 0, first, { 'tus-resumable': '0.2.2' })).status, 412);
    assert.equal((await patch(app, alice, url, 0, first, { 'upload-offset': 'x' })).status, 400);
    assert.equal((await patch(app, alice, url, 0, first, { 'upload-checksum': 'md5 AAAA' })).status, 400);
    const bad = await patch(app, alice, url, 0, first, { 'upload-checksum': `sha256 ${sha256b64(bytes)}` });
    assert.equal(bad.status, 460);
    assert.equal(Number((await head(app, alice, url)).headers.get('upload-offset')), 0, 'the chunk was discarded');
    const past = Buffer.concat([bytes, Buffer.alloc(10)]);
    assert.equal((await patch(app, alice, url, 0, past)).status, 413);
    assert.equal(Number((await head(app, alice, url)).headers.get('upload-offset')), 0);
    // Creation: no version, no length, a bad type, too large.
    const noVersion = await app.api.post(TUS, undefined, {
      token: alice.token,
      headers: { 'upload-length': '10' },
      unchecked: 'tus 412',
    });
    assert.equal(noVersion.status, 412);
    assert.equal(noVersion.headers.get('tus-version'), '1.0.0');
    assert.equal((await create(app, alice, Number.NaN)).status, 400);
    const wrongType = await create(app, alice, 10, { upload_type: 'link' });
    assert.equal(wrongType.status, 400);
    assert.match(wrongType.body.message, /upload_type/);
    const empty = await create(app, alice, 0);
    assert.equal(empty.status, 400);
    assert.match(empty.body.message, /Upload-Length/);
    const badKey = await create(app, alice, 10, {}, { 'idempotency-key': 'x'.repeat(300) });
    assert.equal(badKey.status, 400);
    assert.match(badKey.body.message, /Idempotency-Key/);
    const tooBig = await create(app, alice, 10 * 1024 * 1024 + 1);
    assert.equal(tooBig.status, 413);
    assert.equal(tooBig.body.error, 'payload_too_large');
    const anonymous = await app.api.post(TUS, undefined, { headers: { ...V, 'upload-length': '10' } });
    assert.equal(anonymous.status, 401);
    // Another user's upload is not there.
    const bob = await registerUser(app.api);
    assert.equal((await head(app, bob, url)).status, 404);
    // Extensions not served, asked for by a header: 400 naming it (the library's own 501 is not the contract's).
    const deferred = await patch(app, alice, url, 0, first, { 'upload-length': String(bytes.length) });
    assert.equal(deferred.status, 400, deferred.text);
    assert.match(deferred.body.message, /^Upload-Length /);
    const concat = await create(app, alice, 10, {}, { 'upload-concat': 'partial' });
    assert.equal(concat.status, 400, concat.text);
    assert.match(concat.body.message, /^Upload-Concat /);
    assert.equal(Number((await head(app, alice, url)).headers.get('upload-offset')), 0);
    // A termination with a malformed tus header: 400 naming it (documented: the client checks), nothing deleted.
    const badDelete = await app.api.del(url, { token: alice.token, headers: { ...V, 'upload-concat': 'x' } });
    assert.equal(badDelete.status, 400, badDelete.text);
    assert.equal(badDelete.body.error, 'invalid_request');
    assert.match(badDelete.body.message, /upload-concat/i);
    assert.equal((await head(app, alice, url)).status, 200);
    assert.equal((await app.api.del(url, { token: alice.token, headers: V })).status, 204);
    assert.equal((await head(app, alice, url)).status, 404);
  });

  test('a first chunk of another type at creation: 415 as documented, before the upload limit is spent', async () => {
    // Found by test/http/api-fuzz.test.ts: the 415 was thrown by the handler, after the limit, and undocumented.
    const erin = await registerUser(app.api);
    const left = (r: { status: number; text: string; headers: Headers }) => {
      assert.equal(r.status, 201, r.text);
      return Number(r.headers.get('ratelimit-remaining'));
    };
    const remaining = left(await create(app, erin, 10));
    // The client checks the answer against the OpenAPI document (no `unchecked`): 415 is documented here.
    const refused = await app.api.post(TUS, undefined, {
      token: erin.token,
      raw: Buffer.from('0123456789'),
      headers: { ...V, 'upload-length': '10', 'content-type': 'image/png' },
    });
    assert.equal(refused.status, 415, refused.text);
    assert.equal(refused.body.error, 'invalid_request');
    assert.match(refused.body.message, /Content-Type/);
    assert.equal(left(await create(app, erin, 10)), remaining - 1, 'the refused creation spent no upload');
  });

  test('RESUMABLE_MAX_OPEN per user (429), Idempotency-Key answers the same upload', async () => {
    const carol = await registerUser(app.api);
    const keyed = await create(app, carol, 100, {}, { 'idempotency-key': 'resume-key-1' });
    const again = await create(app, carol, 100, {}, { 'idempotency-key': 'resume-key-1' });
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('location'), keyed.headers.get('location'));
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal((await create(app, carol, 100)).status, 201);
    assert.equal((await create(app, carol, 100)).status, 201);
    const refused = await create(app, carol, 100);
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error, 'rate_limited');
    assert.match(refused.body.message, /RESUMABLE_MAX_OPEN/);
    assert.equal((await app.api.del(keyed.headers.get('location')!, { token: carol.token, headers: V })).status, 204);
    assert.equal((await create(app, carol, 100)).status, 201);
  });

  test('an incomplete upload expires after RESUMABLE_TTL: 404, its bytes swept, counted', async () => {
    const dave = await registerUser(app.api);
    const bytes = await pngImage(200, 150, 4905);
    const c = await create(app, dave, bytes.length);
    const url = c.headers.get('location')!;
    await sendFrom(app, dave, url, bytes, 100);
    const id = url.split('/').pop()!;
    assert.ok((await partFiles(app)).includes(id));
    // A partial file whose row is gone (its user deleted, or a crash): swept once older than MEDIA_SWEEP_GRACE.
    const orphan = randomUUID();
    await writeFile(join(app.config.dataDir, 'resumable', orphan), 'abcd');
    await app.composed.sweepResumable();
    assert.ok((await partFiles(app)).includes(orphan), 'younger than the grace (1 h): kept');
    skewMs = 61 * 60 * 1000;
    try {
      assert.equal((await head(app, dave, url)).status, 404);
      assert.equal((await result(app, dave, url)).status, 404);
      assert.ok((await app.composed.sweepResumable()) >= 1);
      assert.ok(!(await partFiles(app)).includes(id), 'the partial bytes are gone');
      assert.ok(!(await partFiles(app)).includes(orphan), 'the orphan is swept');
      const text = await currentMetrics(app);
      assert.match(text, /pixvote_resumable_uploads_total\{event="orphan_swept"\} [1-9]/);
      assert.match(text, /pixvote_resumable_uploads_total\{event="expired"\} [1-9]/);
      assert.match(text, /pixvote_resumable_uploads_total\{event="completed"\} [1-9]/);
      assert.match(text, /pixvote_resumable_uploads_total\{event="opened"\} [1-9]/);
    } finally {
      skewMs = 0;
    }
  });
});
