/**
 * Image reads from the local disk store answer one `Range` as the object store does: 206 with Content-Range, the
 * last N bytes, a range outside the image ignored (200 whole), HEAD and 304 without bytes.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../support/app.ts';
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
