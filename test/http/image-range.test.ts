/**
 * Image reads from the local disk store answer one `Range` as the object store does: 206 with Content-Range, the
 * last N bytes, a range outside the image ignored (200 whole), HEAD and 304 without bytes. Then, property-based
 * (fast-check), on both stores: Range headers as clients and attackers write them, judged against RFC 9110 read
 * with BigInt (no number is too large to judge).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { startApp, type TestApp } from '../support/app.ts';
import { createTestBucket, s3Skip } from '../support/s3.ts';
import { apiToken, registerUser } from '../support/users.ts';
import { uploadImage } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';

let app: TestApp;
before(async () => {
  app = await startApp();
});
after(() => app.close());

test('disk store: Range → 206, suffix ranges, outside → 200 whole, HEAD sized, 304 empty', async () => {
  const token = await apiToken(app.api, await registerUser(app.api));
  const r = await uploadImage(app.api, token, await photoJpeg({ width: 700, height: 500, seed: 1980 }));
  assert.equal(r.status, 201, r.text);
  const id = r.body.id as string;
  const full = await app.api.get(`/api/image/${id}`);
  assert.equal(full.status, 200);
  assert.equal(full.headers.get('accept-ranges'), 'bytes');
  const size = full.bytes.length;
  const part = await app.api.get(`/api/image/${id}`, { headers: { Range: 'bytes=0-99' } });
  assert.equal(part.status, 206);
  assert.equal(part.headers.get('content-range'), `bytes 0-99/${size}`);
  assert.deepEqual(part.bytes, full.bytes.subarray(0, 100));
  const open = await app.api.get(`/api/image/${id}`, { headers: { Range: `bytes=${size - 10}-` } });
  assert.equal(open.status, 206);
  assert.deepEqual(open.bytes, full.bytes.subarray(size - 10));
  const tail = await app.api.get(`/api/image/${id}`, { headers: { Range: 'bytes=-7' } });
  assert.deepEqual(tail.bytes, full.bytes.subarray(size - 7));
  const outside = await app.api.get(`/api/image/${id}`, { headers: { Range: `bytes=${size}-` } });
  assert.equal(outside.status, 200);
  assert.equal(outside.bytes.length, size);
  const several = await app.api.get(`/api/image/${id}`, { headers: { Range: 'bytes=0-1,5-9' } });
  assert.equal(several.status, 200, 'several ranges: the whole image');
  const head = await app.api.request('HEAD', `/api/image/${id}`);
  assert.equal(head.headers.get('content-length'), String(size));
  const cached = await app.api.get(`/api/image/${id}`, { headers: { 'If-None-Match': full.headers.get('etag')! } });
  assert.equal(cached.status, 304);
});

/**
 * What RFC 9110 (14.1.2, 14.2) makes of `header` for an image of `size` bytes: the one satisfiable range it names
 * exactly (`bytes=first-last`, `bytes=first-`, `bytes=-suffix`, digits only), or null for anything a server should
 * or may answer whole (no range, several, another unit, nonsense, nothing of it inside the image).
 */
function rfcRange(header: string, size: number): { start: number; end: number } | null {
  const m = /^bytes=(\d*)-(\d*)$/i.exec(header);
  if (!m || (m[1] === '' && m[2] === '')) return null;
  const n = BigInt(size);
  if (m[1] === '') {
    const suffix = BigInt(m[2]!);
    return suffix === 0n ? null : { start: Number(suffix >= n ? 0n : n - suffix), end: size - 1 };
  }
  const first = BigInt(m[1]!);
  const last = m[2] === '' ? n - 1n : BigInt(m[2]!);
  if (last < first || first >= n) return null;
  return { start: Number(first), end: Number(last < n ? last : n - 1n) };
}

/** Positions around the image's edges and far past them, written with leading zeros or as huge numbers. */
const position = (size: number) =>
  fc.oneof(
    fc.constantFrom(0, 1, size - 2, size - 1, size, size + 1).map(String),
    fc.nat(size * 2).map(String),
    fc.constantFrom('', '00', '0007', '9007199254740993', '99999999999999999999999', '1e3', '-1', '+5', '0x10', ' 3'),
  );
const rangeHeader = (size: number) =>
  fc.oneof(
    { arbitrary: fc.tuple(position(size), position(size)).map(([a, b]) => `bytes=${a}-${b}`), weight: 6 },
    fc
      .tuple(position(size), position(size), position(size), position(size))
      .map(([a, b, c, d]) => `bytes=${a}-${b},${c}-${d}`),
    fc
      .tuple(
        fc.constantFrom('bytes', 'Bytes', 'BYTES', 'items', 'bytes ', ''),
        fc.constantFrom('=', ' =', ':', '=='),
        position(size),
        position(size),
      )
      .map(([unit, eq, a, b]) => `${unit}${eq}${a}-${b}`),
    fc.string({ maxLength: 20 }).map((s) => s.replace(/[^\x20-\x7e]/g, '')),
  );

for (const store of ['disk', 's3'] as const) {
  const skip = store === 's3' ? await s3Skip() : false;
  test(
    `${store} store: Range headers fast-check writes get the bytes RFC 9110 names, or the whole image`,
    { skip },
    async () => {
      const bucket = store === 's3' ? await createTestBucket() : null;
      const served = store === 's3' ? await startApp(bucket!.env(undefined, 'media')) : app;
      try {
        const token = await apiToken(served.api, await registerUser(served.api));
        const r = await uploadImage(served.api, token, await photoJpeg({ width: 320, height: 240, seed: 1981 }));
        assert.equal(r.status, 201, r.text);
        const id = r.body.id as string;
        const full = (await served.api.get(`/api/image/${id}?size=thumb`)).bytes;
        const size = full.length;
        await fc.assert(
          fc.asyncProperty(rangeHeader(size), async (header) => {
            const res = await served.api.get(`/api/image/${id}?size=thumb`, { headers: { Range: header } });
            const want = rfcRange(header, size);
            const answered = `${res.status} ${res.headers.get('content-range')}`;
            const where = `Range: ${JSON.stringify(header)} (size ${size}) → ${answered}`;
            if (res.status === 200) {
              // Whole: what the RFC lets a server do for anything but an exact, satisfiable single range.
              assert.equal(want, null, where);
              assert.deepEqual(res.bytes, full, where);
              return;
            }
            assert.equal(res.status, 206, where);
            const span = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(res.headers.get('content-range') ?? '');
            assert.ok(span, where);
            const [start, end] = [Number(span[1]), Number(span[2])];
            assert.equal(Number(span[3]), size, where);
            // A range the RFC names is answered as it names it; a laxer spelling (spaces) only as its numbers say.
            if (want) assert.deepEqual({ start, end }, want, where);
            assert.deepEqual(res.bytes, full.subarray(start, end + 1), where);
          }),
          { numRuns: store === 's3' ? 150 : 400 },
        );
      } finally {
        if (store === 's3') {
          await served.close();
          await bucket!.drop();
        }
      }
    },
  );
}
