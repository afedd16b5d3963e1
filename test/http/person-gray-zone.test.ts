/**
 * Issue 32's gray zone, end to end through the HTTP API (and the moderation page in a real browser): under
 * HUMAN_POLICY=reject, a person score from HUMAN_REVIEW_THRESHOLD up to HUMAN_THRESHOLD is accepted held for a
 * moderator, in the queue with its score and the detector's boxes; at or above HUMAN_THRESHOLD it is refused.
 *
 * The detector is real, so the thresholds are set per test server around scores measured first: a probe server
 * (HUMAN_POLICY=flag) scores real photographs (test/support/photos.ts); the gray-zone server then gets a review
 * bound just under one photo's score and a sure bound between it and the next higher score (the same picture always
 * gets the same score).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startApp, type TestApp } from '../support/app.ts';
import { launchBrowser, noBrowser, openPage, watchedPage } from '../support/browser.ts';
import { registerAdmin, registerUser } from '../support/users.ts';
import { countUploads, diskState, queueKeyMismatches, uploadFields, uploadImage } from '../support/uploads.ts';
import { getPhotos } from '../support/photos.ts';
import { ConfigError } from '../../src/config.ts';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const PHOTOS = [
  'group-four-standing',
  'three-men-portrait',
  'man-head-and-shoulders',
  'alpine-landscape',
  'kitten-in-leaves',
  'acanthus-flower',
];

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
  score: number;
}

let app: TestApp;
let server: Server;
let base = '';
/** A photo whose score lies in the gray zone, and one at or above the sure bound. */
let gray: { name: string; bytes: Buffer; score: number };
let sure: { name: string; bytes: Buffer; score: number };
let thresholds: { review: number; sure: number };

before(async () => {
  const photos = await getPhotos();
  const bytes = new Map<string, Buffer>();
  for (const name of PHOTOS) {
    const p = photos.find((x) => x.name === name);
    assert.ok(p, `photo ${name} is in the set`);
    bytes.set(name, await readFile(p.path));
  }
  // Score every photo once (flag accepts them all and answers with the score).
  const probe = await startApp({ HUMAN_POLICY: 'flag' });
  const scored: Array<{ name: string; bytes: Buffer; score: number }> = [];
  try {
    const u = await registerUser(probe.api);
    for (const [name, b] of bytes) {
      const r = await uploadImage(probe.api, u.token, b, {}, `${name}.jpg`);
      assert.equal(r.status, 201, `${name}: ${r.text}`);
      scored.push({ name, bytes: b, score: r.body.image.human_score as number });
    }
  } finally {
    await probe.close();
  }
  scored.sort((a, b) => a.score - b.score);
  // The widest gap between neighbours whose lower one found a box at all (its boxes are drawn).
  let pair: [number, number] | null = null;
  for (let i = 0; i + 1 < scored.length; i++) {
    const [a, b] = [scored[i]!, scored[i + 1]!];
    if (a.score < 0.06 || b.score - a.score < 0.02) continue;
    if (!pair || b.score - a.score > scored[pair[1]]!.score - scored[pair[0]]!.score) pair = [i, i + 1];
  }
  assert.ok(pair, `two photos with distinct scores: ${scored.map((s) => `${s.name} ${s.score}`).join(', ')}`);
  gray = scored[pair[0]]!;
  sure = scored[pair[1]]!;
  thresholds = {
    review: Math.floor((gray.score - 0.005) * 1000) / 1000,
    sure: Math.round(((gray.score + sure.score) / 2) * 1000) / 1000,
  };
  app = await startApp({
    HUMAN_POLICY: 'reject',
    HUMAN_THRESHOLD: String(thresholds.sure),
    HUMAN_REVIEW_THRESHOLD: String(thresholds.review),
    FETCH_ALLOW_PRIVATE: 'true',
  });
  // image_url uploads fetch the gray photo from here.
  server = createServer((req, res) => {
    if (req.url === '/gray.jpg') {
      res.writeHead(200, { 'content-type': 'image/jpeg' });
      res.end(gray.bytes);
    } else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  await app?.close();
  await new Promise((r) => server?.close(r));
});

const ids = async (token?: string) =>
  (await app.api.get('/api/uploads?limit=100', token ? { token } : {})).body.uploads.map((x: { id: string }) => x.id);

async function queueItem(adminToken: string, id: string) {
  const q = await app.api.get('/api/admin/moderation?status=open&limit=100', { token: adminToken });
  assert.equal(q.status, 200, q.text);
  return q.body.items.find((i: { upload?: { id: string } }) => i.upload?.id === id);
}

function assertBoxes(boxes: Box[]) {
  assert.ok(Array.isArray(boxes) && boxes.length >= 1 && boxes.length <= 5, JSON.stringify(boxes));
  for (const b of boxes) {
    for (const v of [b.x, b.y, b.width, b.height, b.score]) assert.ok(v >= 0 && v <= 1, JSON.stringify(b));
    assert.ok(b.x + b.width <= 1.0001 && b.y + b.height <= 1.0001, JSON.stringify(b));
  }
  // Best first; the best is the image's score.
  for (let i = 1; i < boxes.length; i++) assert.ok(boxes[i - 1]!.score >= boxes[i]!.score);
  assert.ok(Math.abs(boxes[0]!.score - gray.score) < 0.001, `${boxes[0]!.score} vs ${gray.score}`);
}

/** The first gray-zone upload, approved by the last test (until then its bytes are no one else's duplicate). */
let first = { id: '', adminToken: '', otherToken: '' };

test('reject: a gray-zone score → 201 held, person flag, out of the feeds, queued with score and boxes', async () => {
  const owner = await registerUser(app.api);
  const other = await registerUser(app.api);
  const admin = await registerAdmin(app);
  const r = await uploadImage(app.api, owner.token, gray.bytes, {}, `${gray.name}.jpg`);
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.moderation, 'held');
  assert.equal(r.body.image.human_score, gray.score);
  first = { id: r.body.id, adminToken: admin.token, otherToken: other.token };

  // Out of every listing and hidden from others; its owner still reaches it.
  assert.ok(!(await ids()).includes(r.body.id));
  assert.ok(!(await ids(other.token)).includes(r.body.id));
  assert.equal((await app.api.get(`/api/upload/${r.body.id}`, { token: other.token })).status, 404);
  assert.equal((await app.api.get(`/api/upload/${r.body.id}`, { token: owner.token })).status, 200);

  // An automatic hold, as HUMAN_POLICY=hold's.
  const log = await app.api.get('/api/modlog', { token: admin.token });
  const line = log.body.entries.find((e: { target: { id: string } }) => e.target.id === r.body.id);
  assert.equal(line?.action, 'auto_hold');
  assert.match(line.reason, /person detected \(score 0\.\d+\)/);

  const item = await queueItem(admin.token, r.body.id);
  assert.ok(item, 'the held upload is in the open queue');
  assert.equal(item.person_flag, true);
  assert.equal(item.human_score, gray.score);
  assertBoxes(item.human_boxes);
});

test('reject: at or above HUMAN_THRESHOLD → 400 human_detected naming it, nothing left behind', async () => {
  const u = await registerUser(app.api);
  const rows = await countUploads(app);
  const media = (await diskState(app)).media.length;
  const r = await uploadImage(app.api, u.token, sure.bytes, {}, `${sure.name}.jpg`);
  assert.equal(r.status, 400, r.text);
  assert.equal(r.body.error, 'human_detected');
  assert.match(r.body.message, new RegExp(`threshold ${thresholds.sure}\\)`));
  assert.equal(await countUploads(app), rows);
  const disk = await diskState(app);
  assert.equal(disk.media.length, media);
  assert.deepEqual([disk.staging, disk.tmp], [[], []]);
});

test('reject: an image_url upload in the gray zone (bytes stored under another upload) is held alike', async () => {
  const u = await registerUser(app.api);
  const admin = await registerAdmin(app);
  const r = await uploadFields(app.api, u.token, { upload_type: 'image_url', image_url: `${base}/gray.jpg` });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.moderation, 'held');
  assert.equal(r.body.image.human_score, gray.score);
  const item = await queueItem(admin.token, r.body.id);
  assert.equal(item?.person_flag, true);
  assertBoxes(item.human_boxes);
});

test(
  'the moderation page outlines the boxes over the held upload’s preview, the best one labelled with its score',
  { skip: noBrowser },
  async () => {
    const u = await registerUser(app.api);
    const admin = await registerAdmin(app);
    const r = await uploadImage(app.api, u.token, gray.bytes, { description: 'gray zone in the browser' });
    assert.equal(r.status, 201, r.text);
    const boxes: Box[] = (await queueItem(admin.token, r.body.id)).human_boxes;
    const browser = await launchBrowser();
    try {
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      await ctx.addCookies([{ name: 'auth-token', value: admin.token, url: app.url }]);
      const w = await watchedPage(ctx, app.url);
      await openPage(w.page, `${app.url}/moderation`);
      const row = w.page.locator('.qitem', { hasText: u.username });
      await row.locator('.personframe img').waitFor();
      // A string: test files are type-checked without the DOM library.
      await row.locator('.personframe img').evaluate('(img) => img.decode()');
      assert.equal(await row.locator('.personbox').count(), boxes.length);
      // One label, the best box's score (labels of boxes close together covered each other on the small preview).
      const best = Math.max(...boxes.map((b) => b.score)).toFixed(2);
      assert.deepEqual(await row.locator('.personbox .score').allInnerTexts(), [best]);
      for (const [i, b] of boxes.entries())
        assert.equal(await row.locator('.personbox').nth(i).getAttribute('title'), `person ${b.score.toFixed(2)}`);
      assert.match(await row.innerText(), new RegExp(`person detected \\(score ${gray.score.toFixed(2)}\\)`));
      // Each outline sits where its box is on the whole image (not a square crop of it).
      const img = (await row.locator('.personframe img').boundingBox())!;
      for (const [i, b] of boxes.entries()) {
        const at = (await row.locator('.personbox').nth(i).boundingBox())!;
        assert.ok(Math.abs(at.x - (img.x + b.x * img.width)) <= 1.5, `box ${i} left`);
        assert.ok(Math.abs(at.y - (img.y + b.y * img.height)) <= 1.5, `box ${i} top`);
        assert.ok(Math.abs(at.width - b.width * img.width) <= 1.5, `box ${i} width`);
        assert.ok(Math.abs(at.height - b.height * img.height) <= 1.5, `box ${i} height`);
      }
      // The outlines and their scores keep the page accessible (axe-core, as test/http/web-a11y.test.ts runs it).
      await w.page.evaluate(axeSource);
      const axe = await w.page.evaluate<{ violations: Array<{ id: string; impact: string }> }>(
        "axe.run(document, { resultTypes: ['violations'] })",
      );
      assert.deepEqual(
        axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id),
        [],
      );
      assert.deepEqual(w.take(), [], 'no failed request, no console error (no CSP violation)');
      await ctx.close();
    } finally {
      await browser.close();
    }
  },
);

test('a moderator approves the gray-zone upload: listed for everyone, its person flag closed', async () => {
  assert.ok(first.id, 'the first test held an upload');
  const ok = await app.api.post(
    `/api/admin/uploads/${first.id}/moderation`,
    { action: 'approve', reason: 'no person after all' },
    { token: first.adminToken },
  );
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.body.moderation, 'visible');
  assert.ok((await ids(first.otherToken)).includes(first.id), 'listed once approved');
  assert.equal(await queueItem(first.adminToken, first.id), undefined, 'the person flag is closed');
  assert.deepEqual(await queueKeyMismatches(app.composed.db), [], "the queue's index matches every upload's state");
});

test('HUMAN_REVIEW_THRESHOLD above HUMAN_THRESHOLD stops the start with a config error naming it', async () => {
  await assert.rejects(
    startApp({ HUMAN_POLICY: 'reject', HUMAN_THRESHOLD: '0.4', HUMAN_REVIEW_THRESHOLD: '0.6' }),
    (e: Error) =>
      e instanceof ConfigError &&
      /HUMAN_REVIEW_THRESHOLD=0\.6: must not be above HUMAN_THRESHOLD \(0\.4\)/.test(e.message),
  );
});
