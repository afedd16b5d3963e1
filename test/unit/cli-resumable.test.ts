/**
 * The CLI's tus sender (src/cli/resumable.sender.ts) against an in-memory tus server behind a scripted fetch: it
 * continues from the server's offset after a dropped chunk, a 409 and a 460; an earlier run's upload is continued
 * from HEAD, one the server no longer has is created afresh; the resume file keeps the upload's URL with the file's
 * size, time and SHA-256. `--chunk-size` is parsed by a property test.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { ApiClient } from '../../src/cli/api.client.ts';
import { ResumeFile } from '../../src/cli/resume.store.ts';
import { MAX_CHUNK, MIN_CHUNK, parseChunkSize, sendResumable, uploadMetadata } from '../../src/cli/resumable.sender.ts';

test('--chunk-size: bytes, k and m (KiB, MiB) within 64 KiB–10 MiB; anything else is refused', () => {
  assert.equal(parseChunkSize('1m'), 1024 * 1024);
  assert.equal(parseChunkSize('512k'), 512 * 1024);
  assert.equal(parseChunkSize('2MiB'), 2 * 1024 * 1024);
  assert.equal(parseChunkSize('65536'), 65536);
  for (const bad of ['', '1', '63k', '11m', '1.5m', '-1m', '1g', 'm', '1 m b', '0x10000'])
    assert.equal(parseChunkSize(bad), null, bad);
  fc.assert(
    fc.property(fc.string({ maxLength: 12 }), (s) => {
      const n = parseChunkSize(s);
      return n === null || (Number.isInteger(n) && n >= MIN_CHUNK && n <= MAX_CHUNK);
    }),
  );
  fc.assert(
    fc.property(fc.integer({ min: 64, max: 10 * 1024 }), fc.constantFrom('k', 'K', 'kb', 'KiB'), (n, unit) => {
      return parseChunkSize(`${n}${unit}`) === n * 1024;
    }),
  );
});

test('Upload-Metadata: key base64(value) pairs, an empty value as the key alone', () => {
  assert.equal(
    uploadMetadata({ filename: 'chat été.jpg', is_private: 'false', tags: '' }),
    `filename ${Buffer.from('chat été.jpg').toString('base64')},is_private ZmFsc2U=,tags`,
  );
});

type FakeUpload = { length: number; bytes: Buffer[]; received: number; key: string | null };

/**
 * A tus server in memory: creation (with upload), HEAD, PATCH (with checksum), result; `faults` script what goes
 * wrong with the requests that carry bytes, counted from 1 (the creation's first chunk is the first).
 */
function tusServer(faults: { dropPatch?: number[]; conflictPatch?: number[]; badChecksum?: number[] } = {}) {
  const uploads = new Map<string, FakeUpload>();
  const log: string[] = [];
  let patches = 0;
  let patchBytes = 0;
  const resultOf = (id: string, u: FakeUpload) => ({
    id,
    sha256: createHash('sha256').update(Buffer.concat(u.bytes)).digest('hex'),
  });
  /** The bytes of a request at the upload's offset: null when stored, else the refusal. */
  const receive = (u: FakeUpload, h: Headers, init: RequestInit): Response | null => {
    const n = ++patches;
    const body = Buffer.from(init.body as Uint8Array);
    patchBytes += body.length;
    if (faults.dropPatch?.includes(n)) {
      // Half the chunk lands, then the connection drops: the server keeps what arrived (no checksum passed).
      const half = body.subarray(0, Math.floor(body.length / 2));
      u.bytes.push(half);
      u.received += half.length;
      throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } });
    }
    if (faults.conflictPatch?.includes(n)) return new Response(null, { status: 409 });
    if (Number(h.get('upload-offset') ?? 0) !== u.received) return new Response(null, { status: 409 });
    const digest = createHash('sha256').update(body).digest('base64');
    if (faults.badChecksum?.includes(n) || h.get('upload-checksum') !== `sha256 ${digest}`)
      return new Response(null, { status: 460 });
    u.bytes.push(body);
    u.received += body.length;
    return null;
  };
  const fetchImpl = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : input);
    const method = init?.method ?? 'GET';
    const h = new Headers(init?.headers);
    log.push(`${method} ${url.pathname}`);
    const id = url.pathname.split('/')[4];
    if (method === 'POST') {
      const key = h.get('idempotency-key');
      for (const [uid, u] of uploads)
        if (key && u.key === key)
          return new Response(null, {
            status: 201,
            headers: {
              location: `/api/uploads/resumable/${uid}`,
              'upload-offset': String(u.received),
              'idempotent-replayed': 'true',
            },
          });
      const uid = crypto.randomUUID();
      const u: FakeUpload = { length: Number(h.get('upload-length')), bytes: [], received: 0, key };
      uploads.set(uid, u);
      // creation-with-upload: bytes refused (409, 460) leave the upload created at 0.
      if (init?.body) receive(u, h, init);
      const done = u.received === u.length;
      return Response.json(
        {
          id: uid,
          offset: u.received,
          length: u.length,
          ...(done ? { result: { status: 201, body: resultOf(uid, u) } } : {}),
        },
        { status: 201, headers: { location: `/api/uploads/resumable/${uid}`, 'upload-offset': String(u.received) } },
      );
    }
    const u = id ? uploads.get(id) : undefined;
    if (!u) return new Response(JSON.stringify({ error: 'not_found', message: 'gone' }), { status: 404 });
    if (method === 'HEAD')
      return new Response(null, {
        status: 200,
        headers: { 'upload-offset': String(u.received), 'upload-length': String(u.length) },
      });
    if (method === 'PATCH') {
      return (
        receive(u, h, init!) ?? new Response(null, { status: 204, headers: { 'upload-offset': String(u.received) } })
      );
    }
    if (url.pathname.endsWith('/result')) return Response.json(resultOf(id!, u), { status: 201 });
    return new Response(null, { status: 405 });
  };
  return { fetch: fetchImpl, uploads, log, patchBytes: () => patchBytes };
}

async function fixture(t: { after: (fn: () => Promise<void>) => void }, size: number) {
  const dir = await mkdtemp(join(tmpdir(), 'pixvote-tus-unit-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'big.jpg');
  const bytes = randomBytes(size);
  await writeFile(path, bytes);
  const s = await stat(path);
  const file = { path, size: s.size, mtimeMs: s.mtimeMs };
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const resume = await ResumeFile.open(join(dir, 'resume.json'), {
    server: 'x',
    paths: [dir],
    tags: [],
    isPrivate: false,
  });
  return { dir, file, bytes, sha256, resume };
}

const CHUNK = 64 * 1024;
const clientOf = (server: ReturnType<typeof tusServer>) =>
  new ApiClient({
    baseUrl: 'http://pixvote.test',
    token: 'pv_x',
    retry: { retries: 3, maxWaitMs: 10_000, baseDelayMs: 1 },
    fetch: server.fetch,
    sleep: async () => {},
  });

const send = (client: ApiClient, f: Awaited<ReturnType<typeof fixture>>, notes: string[] = []) =>
  sendResumable(client, {
    file: f.file,
    sha256: f.sha256,
    chunkSize: CHUNK,
    idempotencyKey: `k-${f.sha256}`,
    tags: [],
    isPrivate: false,
    resume: f.resume,
    onRetry: (n) => notes.push(`retry ${n.reason}`),
    note: (l) => notes.push(l),
  });

test('a dropped chunk, a 409 and a 460 are continued from HEAD: the file arrives whole', async (t) => {
  const f = await fixture(t, 5 * CHUNK + 123);
  const server = tusServer({ dropPatch: [2], conflictPatch: [4], badChecksum: [6] });
  const notes: string[] = [];
  const { response } = await send(clientOf(server), f, notes);
  assert.equal(response.status, 201);
  assert.equal(response.body.sha256, f.sha256, 'the server holds the file, byte for byte');
  assert.ok(server.patchBytes() - f.file.size <= 3 * CHUNK, `${server.patchBytes() - f.file.size} resent`);
  assert.deepEqual(
    notes.filter((n) => n.startsWith('retry')),
    ['retry the connection dropped mid-chunk', 'retry 409 on a chunk', 'retry 460 on a chunk'],
  );
  assert.equal(server.log.filter((l) => l.startsWith('HEAD')).length, 3);
});

test('a file of one chunk is one request: the creation carries it, and its body the answer', async (t) => {
  const f = await fixture(t, CHUNK - 5);
  const server = tusServer();
  const { response } = await send(clientOf(server), f);
  assert.equal(response.status, 201);
  assert.equal(response.body.sha256, f.sha256);
  assert.deepEqual(server.log, ['POST /api/uploads/resumable']);
  assert.equal(f.resume.partialOf(f.file, f.sha256), null, 'nothing left to resume');
});

test('the resume file keeps the URL with size, time and SHA-256; the next run continues from HEAD', async (t) => {
  const f = await fixture(t, 4 * CHUNK);
  const server = tusServer();
  // An earlier run: created, two chunks sent, then it stopped (the file's entry written at creation).
  const client = clientOf(server);
  const created = await client.request('POST', '/api/uploads/resumable', {
    headers: { 'upload-length': String(f.file.size), 'idempotency-key': 'earlier' },
  });
  const url = created.headers.get('location')!;
  await f.resume.begin(f.file, f.sha256, url);
  const saved = JSON.parse(await readFile(f.resume.path, 'utf8'));
  assert.deepEqual(Object.keys(saved.partial[f.file.path]).sort(), ['created_at', 'mtimeMs', 'sha256', 'size', 'url']);
  const u = server.uploads.get(url.split('/').pop()!)!;
  u.bytes.push(f.bytes.subarray(0, 2 * CHUNK));
  u.received = 2 * CHUNK;
  // Another file's bytes at the same path are not this upload's.
  assert.equal(f.resume.partialOf(f.file, 'f'.repeat(64)), null);
  assert.equal(f.resume.partialOf({ ...f.file, mtimeMs: f.file.mtimeMs + 1 }, f.sha256), null);

  const notes: string[] = [];
  const { response } = await send(client, f, notes);
  assert.equal(response.status, 201);
  assert.equal(response.body.sha256, f.sha256);
  assert.equal(server.patchBytes(), 2 * CHUNK, 'only the rest was sent');
  assert.match(notes[0]!, new RegExp(`^resuming .*big\\.jpg at ${2 * CHUNK} of ${4 * CHUNK} bytes`));
  assert.equal(server.log.filter((l) => l === 'POST /api/uploads/resumable').length, 1, 'no second creation');
});

test('an upload the server no longer has (404) is created afresh and sent from byte 0', async (t) => {
  const f = await fixture(t, 3 * CHUNK);
  const server = tusServer();
  await f.resume.begin(f.file, f.sha256, `/api/uploads/resumable/${crypto.randomUUID()}`);
  const notes: string[] = [];
  const { response } = await send(clientOf(server), f, notes);
  assert.equal(response.status, 201);
  assert.equal(response.body.sha256, f.sha256);
  assert.equal(server.patchBytes(), f.file.size);
  assert.match(notes[0]!, /no longer has the upload .* \(expired or deleted\): sending it afresh/);
});
