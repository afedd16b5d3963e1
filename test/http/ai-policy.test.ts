/**
 * AI_POLICY on real marked files through HTTP (issue 50): images whose XMP names an IPTC DigitalSourceType, and
 * C2PA-signed ones (test/support/provenance-fixtures.ts, built at test time), uploaded under `label`, `hold`,
 * `reject` and `off`: what is stored, the answer, the hold's modlog line, and the label the pages show.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { countUploads, diskState, uploadImage } from '../support/uploads.ts';
import {
  c2paLibrary,
  c2paSignedJpeg,
  jpegWithXmpSourceType,
  pngWithXmpSourceType,
  tamperedC2paJpeg,
  TEST_SIGNER,
  TEST_TRUST_ANCHORS,
} from '../support/provenance-fixtures.ts';

const GENERATED = ['trainedAlgorithmicMedia', 'compositeWithTrainedAlgorithmicMedia', 'algorithmicMedia'];
const apps: Partial<Record<'label' | 'hold' | 'reject' | 'off', TestApp>> = {};
const app = (policy: keyof typeof apps) => apps[policy]!;

before(async () => {
  for (const policy of ['label', 'hold', 'reject', 'off'] as const) {
    // Every fixture is the same picture: near-duplicate matching would answer the second one a duplicate notice.
    apps[policy] = await startApp({
      AI_POLICY: policy,
      NEAR_DUPLICATE_DISTANCE: '-1',
      C2PA_TRUST_ANCHORS: TEST_TRUST_ANCHORS,
    });
  }
});
after(async () => {
  for (const a of Object.values(apps)) await a.close();
});

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** A tus upload of `bytes` in one PATCH; resolves its `/result` once the use case ran. */
async function resumableUpload(a: TestApp, user: TestUser, bytes: Buffer) {
  const V = { 'tus-resumable': '1.0.0' };
  const created = await a.api.post('/api/uploads/resumable', undefined, {
    token: user.token,
    headers: {
      ...V,
      'upload-length': String(bytes.length),
      'upload-metadata': `upload_type ${b64('image')},filename ${b64('gen.jpg')}`,
    },
  });
  assert.equal(created.status, 201, created.text);
  const url = new URL(created.headers.get('location')!, a.url).pathname;
  const sent = await a.api.patch(url, undefined, {
    token: user.token,
    raw: bytes,
    headers: { ...V, 'content-type': 'application/offset+octet-stream', 'upload-offset': '0' },
    unchecked: 'tus answers 204 to a PATCH',
  });
  assert.equal(sent.status, 204, sent.text);
  return a.api.get(`${url}/result`, { token: user.token });
}

describe('AI_POLICY=reject', () => {
  test('each generated IPTC term: 400 ai_generated naming it; no row, no file, no temp file', async () => {
    const a = app('reject');
    const u = await registerUser(a.api);
    const rows = await countUploads(a);
    const media = (await diskState(a)).media.length;
    for (const term of GENERATED) {
      const r = await uploadImage(a.api, u.token, await jpegWithXmpSourceType(term), {}, `${term}.jpg`);
      assert.equal(r.status, 400, `${term}: ${r.text}`);
      assert.equal(r.body.error, 'ai_generated');
      assert.match(r.body.message, new RegExp(`IPTC DigitalSourceType ${term}\\b`));
    }
    assert.equal(await countUploads(a), rows);
    const disk = await diskState(a);
    assert.equal(disk.media.length, media);
    assert.deepEqual([disk.staging, disk.tmp], [[], []]);
  });

  test('a resumable upload gets the same 400 ai_generated from its result', async () => {
    const a = app('reject');
    const u = await registerUser(a.api);
    const r = await resumableUpload(a, u, await pngWithXmpSourceType('trainedAlgorithmicMedia'));
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error, 'ai_generated');
    assert.match(r.body.message, /trainedAlgorithmicMedia/);
  });

  test('a camera marker, or none: accepted; ai_generated false / null, no label', async () => {
    const a = app('reject');
    const u = await registerUser(a.api);
    const cam = await uploadImage(a.api, u.token, await jpegWithXmpSourceType('digitalCapture'));
    assert.equal(cam.status, 201, cam.text);
    assert.deepEqual(
      [cam.body.provenance.ai_generated, cam.body.provenance.source_type, cam.body.ai_label],
      [false, 'digitalCapture', null],
    );
  });

  test('a C2PA manifest whose action says generated: refused naming the manifest and its signer', async (t) => {
    if (!(await c2paLibrary())) return t.skip('@contentauth/c2pa-node is not installed');
    const a = app('reject');
    const u = await registerUser(a.api);
    const r = await uploadImage(a.api, u.token, await c2paSignedJpeg({ sourceType: 'trainedAlgorithmicMedia' }));
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error, 'ai_generated');
    assert.match(r.body.message, new RegExp(`C2PA manifest signed by ${TEST_SIGNER}`));
  });
});

describe('AI_POLICY=hold', () => {
  test('accepted held, out of listings; a modlog auto_hold line naming the marker; in the queue', async () => {
    const a = app('hold');
    const u = await registerUser(a.api);
    const admin = await registerAdmin(a);
    const r = await uploadImage(a.api, u.token, await jpegWithXmpSourceType('algorithmicMedia'));
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.moderation, 'held');
    assert.equal(r.body.ai_label, 'marker');
    assert.equal((await a.api.get(`/api/upload/${r.body.id}`)).status, 404);
    const listed = (await a.api.get('/api/uploads?ai=only')).body.uploads.map((x: { id: string }) => x.id);
    assert.ok(!listed.includes(r.body.id));
    const log = await a.api.get('/api/modlog', { token: admin.token });
    const line = log.body.entries.find((e: { target: { id: string } }) => e.target.id === r.body.id);
    assert.equal(line.action, 'auto_hold');
    assert.equal(line.reason, "AI-generated: IPTC DigitalSourceType algorithmicMedia in the file's XMP");
    const queue = await a.api.get('/api/admin/moderation', { token: admin.token });
    assert.ok(queue.body.items.some((i: { upload?: { id: string } }) => i.upload?.id === r.body.id));
    // A plain image is not held.
    const cam = await uploadImage(a.api, u.token, await jpegWithXmpSourceType('digitalCapture'));
    assert.equal(cam.body.moderation, 'visible');
  });
});

describe('AI_POLICY=label (the default)', () => {
  test('each generated term: visible, labelled by the marker, provenance on the record and the endpoint', async () => {
    const a = app('label');
    const u = await registerUser(a.api);
    for (const term of GENERATED) {
      const r = await uploadImage(a.api, u.token, await pngWithXmpSourceType(term), {}, `${term}.png`);
      assert.equal(r.status, 201, r.text);
      assert.deepEqual(
        [r.body.moderation, r.body.ai_label, r.body.provenance.ai_generated, r.body.provenance.source_type],
        ['visible', 'marker', true, term],
      );
      const p = await a.api.get(`/api/upload/${r.body.id}/provenance`);
      assert.deepEqual([p.body.ai_generated, p.body.source_type, p.body.ai_label], [true, term, 'marker']);
      // The owner cannot take a marker's label off.
      const off = await a.api.patch(`/api/upload/${r.body.id}`, { ai_generated: false }, { token: u.token });
      assert.equal(off.status, 400, off.text);
      assert.equal(off.body.error, 'invalid_request');
      assert.match(off.body.message, /ai_generated cannot be false: the label rests on a marker in the file/);
    }
    const only = await a.api.get(`/api/uploads?user=${u.username}&ai=only`);
    assert.equal(only.body.uploads.length, GENERATED.length);
  });

  test('a signed C2PA manifest: present, valid against the test trust anchor, its signer on the page', async (t) => {
    if (!(await c2paLibrary())) return t.skip('@contentauth/c2pa-node is not installed');
    const a = app('label');
    const u = await registerUser(a.api);
    const r = await uploadImage(a.api, u.token, await c2paSignedJpeg({ sourceType: 'trainedAlgorithmicMedia' }));
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.ai_label, 'marker');
    assert.equal(r.body.provenance.c2pa.present, true);
    assert.equal(r.body.provenance.c2pa.signer, TEST_SIGNER);
    assert.equal(r.body.provenance.c2pa.valid, true);
    const page = await a.api.get(`/uploads/${r.body.id}`, { unchecked: 'an HTML page' });
    assert.ok(page.text.includes(`Made with AI (C2PA manifest, signed by ${TEST_SIGNER})`), page.text);
    assert.ok(page.text.includes(`Content Credentials: ${TEST_SIGNER}<`));
  });

  test('a tampered camera manifest: valid false, no AI label, "Content Credentials: … (invalid)"', async (t) => {
    if (!(await c2paLibrary())) return t.skip('@contentauth/c2pa-node is not installed');
    const a = app('label');
    const u = await registerUser(a.api);
    const r = await uploadImage(a.api, u.token, await tamperedC2paJpeg());
    assert.equal(r.status, 201, r.text);
    assert.deepEqual([r.body.provenance.c2pa.valid, r.body.ai_label], [false, null]);
    // A manifest that failed validation says nothing either way: no marker, ai_generated null.
    assert.equal(r.body.provenance.ai_generated, null);
    const page = await a.api.get(`/uploads/${r.body.id}`, { unchecked: 'an HTML page' });
    assert.ok(page.text.includes(`Content Credentials: ${TEST_SIGNER} (invalid)`), page.text);
    assert.ok(!page.text.includes('Made with AI'));
  });
});

describe('AI_POLICY=off', () => {
  test('markers neither stored nor acted on: visible, provenance null, no label; the endpoint 404', async () => {
    const a = app('off');
    const u = await registerUser(a.api);
    const r = await uploadImage(a.api, u.token, await jpegWithXmpSourceType('trainedAlgorithmicMedia'));
    assert.equal(r.status, 201, r.text);
    assert.deepEqual([r.body.moderation, r.body.provenance, r.body.ai_label], ['visible', null, null]);
    assert.equal((await a.api.get(`/api/upload/${r.body.id}/provenance`)).status, 404);
  });
});
