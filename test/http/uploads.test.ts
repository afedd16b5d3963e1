import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import sharp from 'sharp';
import { Pool } from 'undici';
import { stageRuns, startApp, type TestApp } from '../support/app.ts';
import { apiToken, registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { countUploads, diskState, uploadFields, uploadImage } from '../support/uploads.ts';
import type { Reply } from '../support/http.ts';
import {
  animatedGif,
  hugeHeaderPng,
  nonImageBytes,
  photoJpeg,
  pngImage,
  svgImage,
  truncatedJpeg,
  manyFramesGif,
} from '../support/fixtures.ts';

let app: TestApp;
let alice: TestUser;
let aliceToken: string;
let bob: TestUser;

before(async () => {
  app = await startApp();
  alice = await registerUser(app.api);
  aliceToken = await apiToken(app.api, alice);
  bob = await registerUser(app.api);
});
after(() => app.close());

/** Asserts a rejected upload left no row and no file behind. */
async function assertNothingLeft(rowsBefore: number, mediaBefore: number) {
  assert.equal(await countUploads(app), rowsBefore, 'no upload row was added');
  const disk = await diskState(app);
  assert.equal(disk.media.length, mediaBefore, 'no media file was added');
  assert.deepEqual(disk.staging, [], 'no staged file is left');
  assert.deepEqual(disk.tmp, [], 'no temp file is left');
}

describe('POST /api/v1/upload with upload_type=image', () => {
  test(
    'stores a JPEG: 201 with the upload record, ' + 'variants served as WebP without EXIF/GPS, orientation applied',
    async () => {
      const jpeg = await photoJpeg({ width: 1200, height: 900, orientation: 6, seed: 101 });
      const r = await uploadImage(
        app.api,
        aliceToken,
        jpeg,
        { description: 'a caption', tags: ' Cute  Cats ,dogs,DOGS' },
        'holiday.jpg',
      );
      assert.equal(r.status, 201, r.text);
      const u = r.body;
      assert.equal(r.headers.get('location'), `/api/upload/${u.id}`);
      assert.equal(u.user_id, alice.id);
      assert.equal(u.username, alice.username);
      assert.equal(u.upload_type, 'image');
      assert.match(u.filename, /^[0-9a-f-]{36}\.webp$/);
      assert.equal(u.original_name, 'holiday.jpg');
      assert.equal(u.description, 'a caption');
      assert.equal(u.is_private, false);
      assert.equal(u.upvotes, 0);
      assert.equal(u.downvote_count, 0);
      assert.equal(u.external_url, null);
      assert.equal(u.source_url, null);
      assert.equal(u.embed, null);
      assert.deepEqual(
        u.tags.map((t: { name: string; slug: string }) => [t.name, t.slug]),
        [
          ['cute cats', 'cute-cats'],
          ['dogs', 'dogs'],
        ],
      );
      // Orientation 6 rotates 1200×900 stored pixels to a 900×1200 displayed image.
      assert.equal(u.image.width, 900);
      assert.equal(u.image.height, 1200);
      assert.equal(u.image.mime, 'image/webp');
      assert.equal(u.image.animated, false);
      assert.equal(u.image.url, `/api/image/${u.id}`);
      assert.equal(u.image.thumbnail_url, `/api/image/${u.id}?size=thumb`);
      assert.match(u.image.thumbhash, /^[A-Za-z0-9+/]+=*$/);
      // PDQ is stored for the blocklist's shared hashes, not shown.
      const stored = await app.composed.db
        .db()
        .selectFrom('uploads')
        .select(['pdq', 'pdq_quality'])
        .where('id', '=', u.id)
        .executeTakeFirstOrThrow();
      assert.match(stored.pdq ?? '', /^[0-9a-f]{64}$/);
      assert.ok(Number.isInteger(stored.pdq_quality) && stored.pdq_quality! >= 0 && stored.pdq_quality! <= 100);
      assert.ok(!JSON.stringify(u).includes('pdq'), 'not in the upload record');

      for (const [size, max] of [
        ['thumb', 320],
        ['medium', 1024],
        ['full', 2048],
        [undefined, 2048],
      ] as const) {
        const res = await app.api.get(`/api/image/${u.id}${size ? `?size=${size}` : ''}`);
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('content-type'), 'image/webp');
        assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
        assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
        assert.equal(res.headers.get('content-security-policy'), "default-src 'none'");
        const bytes = res.bytes;
        const meta = await sharp(bytes).metadata();
        assert.equal(meta.format, 'webp');
        assert.ok(Math.max(meta.width, meta.height) <= max, `${size} fits ${max}`);
        assert.ok(meta.height > meta.width, 'portrait after orientation');
        assert.equal(meta.exif, undefined, 'no EXIF (GPS) in a served variant');
        assert.equal(meta.xmp, undefined, 'no XMP in a served variant');
        assert.equal(meta.orientation ?? 1, 1);
        for (const marker of ['GPSLatitude', 'PixvoteCam', 'exif:GPS'])
          assert.ok(!bytes.includes(Buffer.from(marker)), `no ${marker} anywhere`);
      }
    },
  );

  test('GET /api/image answers 304 to If-None-Match, 404 for unknown ids, 400 for a bad size', async () => {
    const r = await uploadImage(app.api, aliceToken, await pngImage(300, 200, 102), {}, 'x.png');
    assert.equal(r.status, 201);
    const first = await app.api.get(`/api/image/${r.body.id}?size=thumb`);
    const etag = first.headers.get('etag')!;
    assert.ok(etag);
    // HEAD answers like GET, without the body.
    const head = await fetch(`${app.url}/api/image/${r.body.id}?size=thumb`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-type'), 'image/webp');
    assert.equal(head.headers.get('content-length'), first.headers.get('content-length'));
    assert.equal(head.headers.get('etag'), etag);
    const again = await app.api.get(`/api/image/${r.body.id}?size=thumb`, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
    assert.equal(again.bytes.byteLength, 0);
    assert.equal((await app.api.get('/api/image/00000000-0000-4000-8000-000000000000')).status, 404);
    assert.equal((await app.api.get('/api/image/not-a-uuid')).status, 404);
    const bad = await app.api.get(`/api/image/${r.body.id}?size=huge`);
    assert.equal(bad.status, 400);
    assert.match(bad.body.message, /size/);
  });

  test('an animated GIF stays animated', async () => {
    const r = await uploadImage(app.api, aliceToken, await animatedGif({ frames: 4, seed: 103 }), {}, 'a.gif');
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.image.animated, true);
    const res = await app.api.get(`/api/image/${r.body.id}?size=thumb`);
    const meta = await sharp(res.bytes).metadata();
    assert.equal(meta.pages, 4);
  });

  test('is_private=true is stored; the record is reachable by id', async () => {
    const r = await uploadImage(app.api, aliceToken, await photoJpeg({ seed: 104 }), { is_private: 'true' });
    assert.equal(r.status, 201);
    assert.equal(r.body.is_private, true);
    const anon = await app.api.get(`/api/upload/${r.body.id}`);
    assert.equal(anon.status, 200);
    assert.equal(anon.body.is_private, true);
    assert.equal('my_vote' in anon.body, false, 'my_vote only for an authenticated caller');
    const mine = await app.api.get(`/api/upload/${r.body.id}`, { token: alice.token });
    assert.equal(mine.body.my_vote, null);
  });

  test('the JWT works as well as the API token, and POST /api/upload is the same handler', async () => {
    const form = new FormData();
    form.append('upload_type', 'image');
    form.append('file', new Blob([await photoJpeg({ seed: 105 })]), 'b.jpg');
    const r = await app.api.post('/api/upload', undefined, { token: alice.token, raw: form });
    assert.equal(r.status, 201);
  });
});

test('tiny and thin images are stored: a 16×16 PNG, a 3000×40 banner, a 1×1 GIF', async () => {
  const pixel = await sharp({ create: { width: 1, height: 1, channels: 4, background: '#ff000080' } })
    .gif()
    .toBuffer();
  for (const [bytes, w, h] of [
    [await pngImage(16, 16, 31), 16, 16],
    [await pngImage(3000, 40, 32), 3000, 40],
    [pixel, 1, 1],
  ] as const) {
    const r = await uploadImage(app.api, aliceToken, bytes);
    // (One flat pixel hashes like any other flat image: a near duplicate is a fine answer, a 500 is not.)
    if (w === 1 && r.status === 200) {
      assert.equal(r.body.match, 'near');
      continue;
    }
    assert.equal(r.status, 201, r.text);
    assert.deepEqual([r.body.image.width, r.body.image.height], [w, h]);
    assert.equal((await app.api.get(`/api/image/${r.body.id}?size=thumb`)).status, 200);
  }
});

describe('duplicates', () => {
  test('the same bytes again: 200 duplicate notice, exact, distance 0, nothing stored', async () => {
    const jpeg = await photoJpeg({ seed: 201 });
    const first = await uploadImage(app.api, aliceToken, jpeg);
    assert.equal(first.status, 201);
    const rows = await countUploads(app);
    const media = (await diskState(app)).media.length;
    const again = await uploadImage(app.api, bob.token, jpeg);
    assert.equal(again.status, 200);
    assert.deepEqual(Object.keys(again.body).sort(), ['distance', 'duplicate', 'existingUploadId', 'match', 'message']);
    assert.equal(again.body.duplicate, true);
    assert.equal(again.body.existingUploadId, first.body.id);
    assert.equal(again.body.match, 'exact');
    assert.equal(again.body.distance, 0);
    await assertNothingLeft(rows, media);
  });

  test('a resized, re-encoded copy is a near duplicate; a different image is not', async () => {
    const original = await photoJpeg({ width: 1000, height: 750, seed: 202 });
    const first = await uploadImage(app.api, aliceToken, original);
    assert.equal(first.status, 201);
    const copy = await sharp(original).resize(700).webp({ quality: 60 }).toBuffer();
    const before = await stageRuns(app);
    const near = await uploadImage(app.api, bob.token, copy, {}, 'copy.webp');
    assert.equal(near.status, 200, near.text);
    assert.equal(near.body.match, 'near');
    assert.equal(near.body.existingUploadId, first.body.id);
    assert.ok(Number.isInteger(near.body.distance) && near.body.distance >= 0 && near.body.distance <= 4);
    // Refused as soon as its hash was known: hashed, never encoded.
    assert.deepEqual(await stageRuns(app), { ...before, phash: before.phash + 1, decode: before.decode + 1 });
    const other = await uploadImage(app.api, bob.token, await photoJpeg({ width: 1000, height: 750, seed: 299 }));
    assert.equal(other.status, 201);
  });

  test(
    "another user's private upload is never revealed: " + 'the same bytes are stored as a new upload sharing its files',
    async () => {
      const jpeg = await photoJpeg({ seed: 203 });
      const hidden = await uploadImage(app.api, aliceToken, jpeg, { is_private: 'true' });
      assert.equal(hidden.status, 201);
      const mediaBefore = (await diskState(app)).media.length;
      const bobs = await uploadImage(app.api, bob.token, jpeg);
      assert.equal(bobs.status, 201, 'stored, not a duplicate notice');
      assert.notEqual(bobs.body.id, hidden.body.id);
      assert.ok(!bobs.text.includes(hidden.body.id), 'the private id does not leak');
      assert.equal((await diskState(app)).media.length, mediaBefore, 'the stored files are shared');
      // The owner sees their own private upload as a duplicate.
      const own = await uploadImage(app.api, aliceToken, jpeg);
      assert.equal(own.body.existingUploadId, hidden.body.id);
      // Deleting one keeps the files the other still uses.
      assert.equal((await app.api.del(`/api/upload/${hidden.body.id}`, { token: alice.token })).status, 200);
      const img = await app.api.get(`/api/image/${bobs.body.id}?size=thumb`);
      assert.equal(img.status, 200);
      assert.equal((await diskState(app)).media.length, mediaBefore);
      assert.equal((await app.api.del(`/api/upload/${bobs.body.id}`, { token: bob.token })).status, 200);
      assert.equal((await diskState(app)).media.length, mediaBefore - 3, 'the last user of the files removes them');
    },
  );

  test('the last two uploads sharing files, deleted at the same moment: the files go, exactly once', async () => {
    for (const seed of [205, 206, 207, 208]) {
      const jpeg = await photoJpeg({ width: 640, height: 480, seed });
      const media = (await diskState(app)).media.length;
      const mine = await uploadImage(app.api, aliceToken, jpeg, { is_private: 'true' });
      const bobs = await uploadImage(app.api, bob.token, jpeg);
      assert.deepEqual([mine.status, bobs.status], [201, 201]);
      assert.equal((await diskState(app)).media.length, media + 3, 'one set of files, shared');
      const gone = await Promise.all([
        app.api.del(`/api/upload/${mine.body.id}`, { token: alice.token }),
        app.api.del(`/api/upload/${bobs.body.id}`, { token: bob.token }),
      ]);
      assert.deepEqual(
        gone.map((r) => r.status),
        [200, 200],
      );
      assert.equal((await diskState(app)).media.length, media, 'the last of the two removed the files');
    }
  });

  test("bytes shared with another user's private upload still answer a visible near duplicate", async () => {
    const original = await photoJpeg({ width: 1000, height: 750, seed: 204 });
    const hidden = await uploadImage(app.api, aliceToken, original, { is_private: 'true' });
    assert.equal(hidden.status, 201);
    // Bob cannot see Alice's private upload, so his re-encoded copy is stored.
    const copy = await uploadImage(
      app.api,
      bob.token,
      await sharp(original).resize(700).webp({ quality: 60 }).toBuffer(),
      {},
      'copy.webp',
    );
    assert.equal(copy.status, 201, copy.text);
    // Carol's upload of Alice's exact bytes reuses Alice's files, but Bob's public copy is a near duplicate.
    const carol = await registerUser(app.api);
    const rows = await countUploads(app);
    const media = (await diskState(app)).media.length;
    const r = await uploadImage(app.api, carol.token, original);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.match, 'near');
    assert.equal(r.body.existingUploadId, copy.body.id);
    assert.ok(!r.text.includes(hidden.body.id), 'the private id does not leak');
    await assertNothingLeft(rows, media);
  });
});

describe('rejections leave nothing behind', () => {
  const cases: Array<
    [string, () => Promise<{ bytes: Buffer; fields?: Record<string, string> }>, number, string, RegExp]
  > = [
    [
      'non-image bytes named .jpg',
      async () => ({ bytes: nonImageBytes() }),
      400,
      'unsupported_format',
      /JPEG, PNG, GIF and WebP/,
    ],
    ['an SVG', async () => ({ bytes: svgImage() }), 400, 'unsupported_format', /SVG/],
    ['a truncated JPEG', async () => ({ bytes: await truncatedJpeg() }), 400, 'invalid_image', /./],
    ['a PNG claiming 100000×100000', async () => ({ bytes: hugeHeaderPng() }), 400, 'invalid_image', /50 MP|pixels/],
    ['a GIF with 201 frames', async () => ({ bytes: await manyFramesGif(201) }), 400, 'invalid_image', /200/],
    [
      'an animated GIF cut after its first frame (libvips took it as one frame)',
      async () => {
        const gif = await animatedGif({ width: 32, height: 24, frames: 3, seed: 303 });
        return { bytes: gif.subarray(0, Math.floor(gif.length / 2)) };
      },
      400,
      'invalid_image',
      /truncated: the GIF ends inside .* of frame 2/,
    ],
    [
      'a 501-character description',
      async () => ({ bytes: await photoJpeg({ seed: 301 }), fields: { description: 'é'.repeat(501) } }),
      400,
      'invalid_request',
      /description is 501 characters; the limit is 500/,
    ],
    [
      '11 tags',
      async () => ({
        bytes: await photoJpeg({ seed: 302 }),
        fields: { tags: Array.from({ length: 11 }, (_, i) => `t${i}`).join(',') },
      }),
      400,
      'too_many_tags',
      /11 tags; the limit is 10/,
    ],
    [
      'an invalid tag',
      async () => ({ bytes: await photoJpeg({ seed: 303 }), fields: { tags: 'ok,<script>' } }),
      400,
      'invalid_tag',
      /<script>/,
    ],
    [
      'a bad upload_type',
      async () => ({ bytes: await photoJpeg({ seed: 304 }), fields: { upload_type: 'video' } }),
      400,
      'invalid_request',
      /upload_type/,
    ],
    [
      'a bad is_private',
      async () => ({ bytes: await photoJpeg({ seed: 305 }), fields: { is_private: 'maybe' } }),
      400,
      'invalid_request',
      /is_private/,
    ],
  ];
  for (const [what, make, status, code, message] of cases) {
    test(`${what} → ${status} ${code}`, async () => {
      const rows = await countUploads(app);
      const media = (await diskState(app)).media.length;
      const { bytes, fields } = await make();
      const r = await uploadImage(app.api, aliceToken, bytes, fields ?? {});
      assert.equal(r.status, status, r.text);
      assert.equal(r.body.error, code);
      assert.match(r.body.message, message);
      await assertNothingLeft(rows, media);
    });
  }

  test('a file over 10 MiB → 413 payload_too_large, before the rest is read', async () => {
    const rows = await countUploads(app);
    const media = (await diskState(app)).media.length;
    const big = Buffer.alloc(10 * 1024 * 1024 + 1, 0xff);
    const r = await uploadImage(app.api, aliceToken, big).catch(
      (e) => ({ status: -1, body: { error: String(e) } }) as never,
    );
    assert.equal(r.status, 413);
    assert.equal(r.body.error, 'payload_too_large');
    assert.match(r.body.message, /10 MiB/);
    await assertNothingLeft(rows, media);
  });

  test('a file of exactly 10 MiB passes the size check', async () => {
    const exact = Buffer.alloc(10 * 1024 * 1024, 0x20);
    const r = await uploadImage(app.api, aliceToken, exact);
    assert.equal(r.status, 400, 'rejected for its content, not its size');
    assert.equal(r.body.error, 'unsupported_format');
  });

  test('no file, no auth, and an empty file', async () => {
    const noFile = await uploadFields(app.api, aliceToken, { upload_type: 'image' });
    assert.equal(noFile.status, 400);
    assert.match(noFile.body.message, /file is required/);
    const anon = await uploadImage(app.api, '', await photoJpeg({ seed: 306 }));
    assert.equal(anon.status, 401);
    const empty = await uploadImage(app.api, aliceToken, Buffer.alloc(0));
    assert.equal(empty.status, 400);
    assert.deepEqual((await diskState(app)).tmp, []);
  });
});

describe('malformed multipart bodies name what is wrong and leave nothing behind', () => {
  const post = (form: FormData) => app.api.post('/api/v1/upload', undefined, { token: aliceToken, raw: form });
  test('too many fields → 400 naming the limit (not a file-size 413)', async () => {
    const rows = await countUploads(app);
    const media = (await diskState(app)).media.length;
    const form = new FormData();
    form.append('upload_type', 'image');
    for (let i = 0; i < 25; i++) form.append(`extra${i}`, 'x');
    form.append('file', new Blob([await photoJpeg({ seed: 307 })]), 'a.jpg');
    const r = await post(form);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error, 'invalid_request');
    assert.match(r.body.message, /too many form fields \(limit 20\)/);
    await assertNothingLeft(rows, media);
  });
  test('fields over 64 KiB in total → 400 naming the limit', async () => {
    const form = new FormData();
    form.append('upload_type', 'link');
    form.append('description', 'd'.repeat(70_000));
    const r = await post(form);
    assert.equal(r.status, 400, r.text);
    assert.match(r.body.message, /form fields are too large \(limit 64 KiB/);
  });
  test(
    'a file sent in another field → 400 naming the field "file"; ' + 'it counted against the caps and left nothing',
    async () => {
      const rows = await countUploads(app);
      const media = (await diskState(app)).media.length;
      const form = new FormData();
      form.append('upload_type', 'image');
      form.append('image', new Blob([await photoJpeg({ seed: 308 })]), 'a.jpg');
      const r = await post(form);
      assert.equal(r.status, 400, r.text);
      assert.match(r.body.message, /field "file", not "image"/);
      await assertNothingLeft(rows, media);
      const big = new FormData();
      big.append('upload_type', 'image');
      big.append('other', new Blob([Buffer.alloc(10 * 1024 * 1024 + 1, 0xff)]), 'big.bin');
      const tooBig = await post(big).catch((e) => ({ status: -1, text: String(e) }) as never);
      assert.equal(tooBig.status, 413, tooBig.text);
      await assertNothingLeft(rows, media);
    },
  );
});

describe('privacy and delete', () => {
  test('PATCH privacy: owner and admin may, others get 403, unknown ids 404, bad bodies 400', async () => {
    const r = await uploadImage(app.api, aliceToken, await photoJpeg({ seed: 401 }));
    const id = r.body.id;
    const own = await app.api.patch(`/api/upload/${id}/privacy`, { is_private: true }, { token: alice.token });
    assert.equal(own.status, 200);
    assert.equal(own.body.is_private, true);
    assert.equal(own.body.id, id);
    assert.equal(own.body.my_vote, null, 'a single-upload response to a user carries my_vote');
    const other = await app.api.patch(`/api/upload/${id}/privacy`, { is_private: false }, { token: bob.token });
    assert.equal(other.status, 403);
    assert.equal(other.body.error, 'forbidden');
    const admin = await registerAdmin(app, 'admin_user');
    const byAdmin = await app.api.patch(`/api/upload/${id}/privacy`, { is_private: false }, { token: admin.token });
    assert.equal(byAdmin.status, 200);
    assert.equal(byAdmin.body.is_private, false);
    assert.equal(
      (
        await app.api.patch(
          `/api/upload/00000000-0000-4000-8000-000000000000/privacy`,
          { is_private: true },
          { token: alice.token },
        )
      ).status,
      404,
    );
    const bad = await app.api.patch(`/api/upload/${id}/privacy`, { is_private: 'yes' }, { token: alice.token });
    assert.equal(bad.status, 400);
    assert.match(bad.body.message, /is_private/);
    assert.equal((await app.api.patch(`/api/upload/${id}/privacy`, { is_private: true })).status, 401);
  });

  test('DELETE: only the owner (or an admin); removes the row and files; a second delete is 404', async () => {
    const r = await uploadImage(app.api, aliceToken, await photoJpeg({ seed: 402 }));
    const id = r.body.id;
    const mediaBefore = (await diskState(app)).media.length;
    assert.equal((await app.api.del(`/api/upload/${id}`, { token: bob.token })).status, 403);
    const del = await app.api.del(`/api/upload/${id}`, { token: alice.token });
    assert.equal(del.status, 200);
    assert.deepEqual(del.body, { success: true, id });
    assert.equal((await diskState(app)).media.length, mediaBefore - 3);
    assert.equal((await app.api.get(`/api/upload/${id}`)).status, 404);
    assert.equal((await app.api.get(`/api/image/${id}`)).status, 404);
    assert.equal((await app.api.del(`/api/upload/${id}`, { token: alice.token })).status, 404);
  });

  test('deleting frees the content hash: the same image can be uploaded again', async () => {
    const jpeg = await photoJpeg({ seed: 403 });
    const first = await uploadImage(app.api, aliceToken, jpeg);
    await app.api.del(`/api/upload/${first.body.id}`, { token: alice.token });
    const again = await uploadImage(app.api, aliceToken, jpeg);
    assert.equal(again.status, 201);
  });
});

test('RATE_LIMIT_UPLOAD is per user, with RateLimit headers and Retry-After', async () => {
  const limited = await startApp({ RATE_LIMIT_UPLOAD: '2/1h' });
  try {
    const u = await registerUser(limited.api);
    const other = await registerUser(limited.api);
    for (let i = 0; i < 2; i++) {
      const r = await uploadFields(limited.api, u.token, {
        upload_type: 'link',
        external_url: `https://example.com/${i}`,
      });
      assert.equal(r.status, 201);
      assert.equal(r.headers.get('ratelimit-limit'), '2');
    }
    const third = await uploadFields(limited.api, u.token, {
      upload_type: 'link',
      external_url: 'https://example.com/3',
    });
    assert.equal(third.status, 429);
    assert.equal(third.body.error, 'rate_limited');
    assert.ok(Number(third.headers.get('retry-after')) >= 1);
    assert.equal(third.headers.get('ratelimit-remaining'), '0');
    const others = await uploadFields(limited.api, other.token, {
      upload_type: 'link',
      external_url: 'https://example.com/4',
    });
    assert.equal(others.status, 201, 'another user has their own budget');
  } finally {
    await limited.close();
  }
});

test('many uploads over one keep-alive connection leave no listeners behind on its socket', async () => {
  const sockets: Socket[] = [];
  const onConnection = (s: Socket) => sockets.push(s);
  app.server.on('connection', onConnection);
  const one = new Pool(app.url, { connections: 1 });
  try {
    for (let i = 0; i < 25; i++) {
      const res = await one.request({
        method: 'POST',
        path: '/api/upload',
        headers: { authorization: `Bearer ${aliceToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ upload_type: 'link', external_url: `https://example.com/keep-alive/${i}` }),
      });
      assert.equal(res.statusCode, 201, await res.body.text());
      await res.body.dump();
    }
    assert.equal(sockets.length, 1, 'all uploads went over one connection');
    assert.ok(
      sockets[0]!.listenerCount('close') < 5,
      `${sockets[0]!.listenerCount('close')} close listeners on the socket after 25 uploads`,
    );
  } finally {
    app.server.off('connection', onConnection);
    await one.close();
  }
});

test('a full worker queue answers 503 busy with Retry-After, and nothing is left behind', async () => {
  const small = await startApp({ WORKERS: '1', WORKER_QUEUE: '1' });
  try {
    const u = await registerUser(small.api);
    // Six at once fill one thread and a queue of one; whether the rest arrive while it is full is up to the
    // machine's timing (a loaded CI host can stretch the bodies' arrival past a task), so a round that saw no
    // refusal is followed by another, larger one.
    const replies: Reply[] = [];
    for (let round = 0, seed = 500; round < 3 && !replies.some((r) => r.status === 503); round++) {
      const n = 6 + 4 * round;
      const images = await Promise.all(
        Array.from({ length: n }, () => photoJpeg({ width: 3000, height: 2250, seed: seed++, metadata: false })),
      );
      replies.push(...(await Promise.all(images.map((img) => uploadImage(small.api, u.token, img)))));
    }
    const statuses = replies.map((r) => r.status);
    const odd = replies.filter((r) => r.status !== 201 && r.status !== 503).map((r) => `${r.status} ${r.text}`);
    assert.deepEqual(odd, [], `every answer is 201 or 503: ${statuses}`);
    assert.ok(statuses.includes(503), `some were refused: ${statuses}`);
    assert.ok(statuses.includes(201), `some were accepted: ${statuses}`);
    for (const r of replies.filter((x) => x.status === 503)) {
      assert.equal(r.body.error, 'busy');
      assert.ok(Number(r.headers.get('retry-after')) >= 1);
    }
    assert.equal(await countUploads(small), statuses.filter((s) => s === 201).length);
    const disk = await diskState(small);
    assert.equal(disk.media.length, 3 * statuses.filter((s) => s === 201).length);
    assert.deepEqual(disk.staging, []);
    assert.deepEqual(disk.tmp, []);
  } finally {
    await small.close();
  }
});
