import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { currentMetrics, startApp, type TestApp } from '../support/app.ts';
import { registerUser, type TestUser } from '../support/users.ts';
import { countUploads, diskState, uploadFields, uploadImage } from '../support/uploads.ts';
import { photoJpeg, pngImage } from '../support/fixtures.ts';

let app: TestApp;
let strict: TestApp;
let user: TestUser;
let strictUser: TestUser;
let server: Server;
let base: string;
let hits = 0;
const images = new Map<string, Buffer>();

before(async () => {
  images.set('/cat.png', await pngImage(320, 240, 601));
  images.set('/photo.jpg', await photoJpeg({ seed: 602 }));
  server = createServer((req, res) => {
    hits++;
    const img = images.get(req.url ?? '');
    if (img) {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end(img);
    } else if (req.url === '/page.html') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><title>not an image</title>');
    } else if (req.url === '/redirect') {
      res.writeHead(302, { location: '/cat.png' });
      res.end();
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  app = await startApp({ FETCH_ALLOW_PRIVATE: 'true' });
  strict = await startApp();
  user = await registerUser(app.api);
  strictUser = await registerUser(strict.api);
});
after(async () => {
  await app.close();
  await strict.close();
  server.close();
});

describe('upload_type=image_url', () => {
  test('fetches the image, runs the pipeline, records source_url', async () => {
    const r = await uploadFields(app.api, user.token, {
      upload_type: 'image_url',
      image_url: `${base}/redirect`,
      tags: 'fetched',
    });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.upload_type, 'image');
    assert.equal(r.body.source_url, `${base}/redirect`);
    assert.equal(r.body.original_name, 'cat.png');
    assert.equal(r.body.image.width, 320);
    const img = await app.api.get(`/api/image/${r.body.id}?size=thumb`);
    assert.equal(img.headers.get('content-type'), 'image/webp');
  });

  test('works with a JSON body too', async () => {
    const r = await app.api.post(
      '/api/v1/upload',
      { upload_type: 'image_url', image_url: `${base}/photo.jpg`, is_private: true },
      { token: user.token },
    );
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.is_private, true);
  });

  test('a URL whose bytes were already uploaded gets the duplicate notice', async () => {
    const file = await uploadImage(app.api, user.token, images.get('/photo.jpg')!);
    assert.equal(file.status, 200, 'the JSON upload above stored these bytes (private, but the owner sees it)');
    assert.equal(file.body.duplicate, true);
  });

  const failures: Array<[string, () => string, RegExp]> = [
    ['an HTML page', () => `${base}/page.html`, /not an image/],
    ['a 404', () => `${base}/missing.png`, /404/],
    ['an ftp URL', () => 'ftp://example.com/a.png', /http or https/],
    ['a URL with user info', () => `http://user:pw@127.0.0.1:1/a.png`, /user/],
    ['not a URL', () => 'not a url', /image_url/],
  ];
  for (const [what, url, message] of failures) {
    test(`${what} → 400 fetch_failed naming the rule, nothing stored`, async () => {
      const rows = await countUploads(app);
      const r = await uploadFields(app.api, user.token, { upload_type: 'image_url', image_url: url() });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error, 'fetch_failed');
      assert.match(r.body.message, message);
      assert.equal(await countUploads(app), rows);
      const disk = await diskState(app);
      assert.deepEqual([disk.staging, disk.tmp], [[], []]);
    });
  }

  test(
    'with FETCH_ALLOW_PRIVATE=false, ' + 'loopback in every notation is refused and the server gets no connection',
    async () => {
      const port = (server.address() as { port: number }).port;
      const before = hits;
      for (const host of [
        '127.0.0.1',
        '127.1',
        '2130706433',
        '0x7f000001',
        '017700000001',
        'localhost',
        '[::1]',
        '[::ffff:127.0.0.1]',
      ]) {
        const r = await uploadFields(strict.api, strictUser.token, {
          upload_type: 'image_url',
          image_url: `http://${host}:${port}/cat.png`,
        });
        assert.equal(r.status, 400, host);
        assert.equal(r.body.error, 'fetch_failed', host);
      }
      assert.equal(hits, before, 'the local server was never reached');
      assert.equal(await countUploads(strict), 0);
    },
  );

  test('image_url is required for upload_type=image_url', async () => {
    const r = await uploadFields(app.api, user.token, { upload_type: 'image_url' });
    assert.equal(r.status, 400);
    assert.match(r.body.message, /image_url is required/);
  });
});

describe('upload_type=link', () => {
  test('stores the link with an embed built from the URL alone', async () => {
    const r = await uploadFields(app.api, user.token, {
      upload_type: 'link',
      external_url: 'https://youtu.be/dQw4w9WgXcQ?t=42',
      description: 'classic',
    });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.upload_type, 'link');
    assert.equal(r.body.external_url, 'https://youtu.be/dQw4w9WgXcQ?t=42');
    assert.equal(r.body.filename, null);
    assert.equal(r.body.original_name, null);
    assert.equal(r.body.image, null);
    assert.equal(r.body.embed.provider, 'youtube');
    assert.match(r.body.embed.embed_url, /^https:\/\/www\.youtube-nocookie\.com\/embed\/dQw4w9WgXcQ/);
    assert.match(r.body.embed.html, /<iframe/);
  });

  test('an unknown site is a link without a provider; GET /api/image of a link is 404', async () => {
    const r = await app.api.post(
      '/api/v1/upload',
      { upload_type: 'link', external_url: 'https://example.org/post/1' },
      { token: user.token },
    );
    assert.equal(r.status, 201);
    assert.deepEqual(r.body.embed, { provider: null, embed_url: null, html: null });
    assert.equal((await app.api.get(`/api/image/${r.body.id}`)).status, 404);
  });

  test('a bad external_url is 400 naming the field', async () => {
    for (const url of ['javascript:alert(1)', 'ftp://x.example/a', `https://example.com/${'a'.repeat(2100)}`, 'nope']) {
      const r = await uploadFields(app.api, user.token, { upload_type: 'link', external_url: url });
      assert.equal(r.status, 400, url);
      assert.equal(r.body.error, 'invalid_request');
      assert.match(r.body.message, /external_url/);
    }
    const missing = await uploadFields(app.api, user.token, { upload_type: 'link' });
    assert.match(missing.body.message, /external_url is required/);
  });
});

describe('Idempotency-Key', () => {
  test('a retry with the same key returns the first response and creates nothing', async () => {
    const jpeg = await photoJpeg({ seed: 701 });
    const send = () => {
      const form = new FormData();
      form.append('upload_type', 'image');
      form.append('file', new Blob([jpeg]), 'x.jpg');
      return app.api.post('/api/v1/upload', undefined, {
        token: user.token,
        raw: form,
        headers: { 'idempotency-key': 'key-701' },
      });
    };
    const accepted = async () =>
      Number(/^pixvote_uploads_accepted_total\{type="image"\} (\d+)$/m.exec(await currentMetrics(app))?.[1] ?? 0);
    const first = await send();
    assert.equal(first.status, 201);
    const rows = await countUploads(app);
    const acceptedOnce = await accepted();
    const second = await send();
    assert.equal(second.status, 201, 'the same status, not a duplicate notice');
    assert.deepEqual(second.body, first.body);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.equal(await countUploads(app), rows);
    assert.equal(await accepted(), acceptedOnce, 'a replay is not counted as another accepted upload');
  });

  test('the same key with a different request is refused', async () => {
    const a = await uploadFields(app.api, user.token, { upload_type: 'link', external_url: 'https://example.com/a' });
    assert.equal(a.status, 201);
    const headers = { 'idempotency-key': 'key-702' };
    const first = await app.api.post(
      '/api/v1/upload',
      { upload_type: 'link', external_url: 'https://example.com/one' },
      { token: user.token, headers },
    );
    assert.equal(first.status, 201);
    const other = await app.api.post(
      '/api/v1/upload',
      { upload_type: 'link', external_url: 'https://example.com/two' },
      { token: user.token, headers },
    );
    assert.equal(other.status, 409);
    assert.equal(other.body.error, 'conflict');
    assert.match(other.body.message, /Idempotency-Key/);
  });

  test('keys are per user', async () => {
    const other = await registerUser(app.api);
    const headers = { 'idempotency-key': 'key-703' };
    const body = { upload_type: 'link', external_url: 'https://example.com/per-user' };
    const a = await app.api.post('/api/v1/upload', body, { token: user.token, headers });
    const b = await app.api.post('/api/v1/upload', body, { token: other.token, headers });
    assert.equal(a.status, 201);
    assert.equal(b.status, 201);
    assert.notEqual(a.body.id, b.body.id);
  });

  test('a retry storm with one key creates one upload, and replays do not spend the upload limit', async () => {
    const limited = await startApp({ RATE_LIMIT_UPLOAD: '2/1h' });
    try {
      const u = await registerUser(limited.api);
      const jpeg = await photoJpeg({ width: 1600, height: 1200, seed: 704 });
      const send = () => {
        const form = new FormData();
        form.append('upload_type', 'image');
        form.append('description', 'storm');
        form.append('file', new Blob([jpeg]), 'storm.jpg');
        return limited.api.post('/api/v1/upload', undefined, {
          token: u.token,
          raw: form,
          headers: { 'idempotency-key': 'storm-1' },
        });
      };
      const first = await send();
      assert.equal(first.status, 201);
      const storm = await Promise.all(Array.from({ length: 20 }, send));
      assert.deepEqual([...new Set(storm.map((r) => r.status))], [201]);
      assert.ok(storm.every((r) => r.body.id === first.body.id));
      assert.equal(await countUploads(limited), 1);
      const fresh = await uploadFields(limited.api, u.token, {
        upload_type: 'link',
        external_url: 'https://example.com/after-storm',
      });
      assert.equal(fresh.status, 201, 'the replays spent none of the 2 uploads per hour');
    } finally {
      await limited.close();
    }
  });

  test('concurrent first requests with one key: one runs, the others get its result', async () => {
    const jpeg = await photoJpeg({ width: 2000, height: 1500, seed: 705 });
    const send = () => {
      const form = new FormData();
      form.append('upload_type', 'image');
      form.append('file', new Blob([jpeg]), 'c.jpg');
      return app.api.post('/api/v1/upload', undefined, {
        token: user.token,
        raw: form,
        headers: { 'idempotency-key': 'concurrent-705' },
      });
    };
    const rows = await countUploads(app);
    const replies = await Promise.all(Array.from({ length: 8 }, send));
    assert.deepEqual([...new Set(replies.map((r) => r.status))], [201]);
    assert.equal(new Set(replies.map((r) => r.body.id)).size, 1);
    assert.equal(await countUploads(app), rows + 1);
  });

  test('a malformed key is 400', async () => {
    const r = await app.api.post(
      '/api/v1/upload',
      { upload_type: 'link', external_url: 'https://example.com/k' },
      { token: user.token, headers: { 'idempotency-key': 'has space' } },
    );
    assert.equal(r.status, 400);
    assert.match(r.body.message, /Idempotency-Key/);
  });
});
