/**
 * POST /api/uploads/check (API.md, Clients at volume): what an upload of each digest would answer — blocked,
 * exists (an upload the caller may see, or its own) or new — in request order; nothing about others' private,
 * held or removed uploads; validation naming the field and the limit.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { uploadImage } from '../support/uploads.ts';
import { pngImage } from '../support/fixtures.ts';

let app: TestApp;
let alice: TestUser;
let bob: TestUser;
let admin: TestUser;

const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const check = (sha256: unknown, token?: string) =>
  app.api.post('/api/uploads/check', { sha256 }, token ? { token } : {});

/** Uploads a fresh image as this user; returns its id and digest. */
async function upload(user: TestUser, seed: number, isPrivate: boolean) {
  const bytes = await pngImage(320, 240, seed);
  const r = await uploadImage(app.api, user.token, bytes, { is_private: String(isPrivate) }, 'p.png');
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return { id: r.body.id as string, sha256: sha(bytes) };
}

before(async () => {
  app = await startApp();
  [alice, bob] = [await registerUser(app.api), await registerUser(app.api)];
  admin = await registerAdmin(app);
});
after(() => app.close());

describe('POST /api/uploads/check', () => {
  test('blocked, exists and new, in request order, each as an upload of those bytes would answer', async () => {
    const alicePublic = await upload(alice, 101, false);
    const alicePrivate = await upload(alice, 102, true);
    const bobPrivate = await upload(bob, 103, true);
    const bobRemoved = await upload(bob, 104, false);
    const removal = await app.api.post(
      `/api/admin/uploads/${bobRemoved.id}/moderation`,
      { action: 'remove', reason: 'spam' },
      { token: admin.token },
    );
    assert.equal(removal.status, 200);
    const blockedBytes = randomBytes(64);
    const block = await app.api.post(
      '/api/admin/blocklist',
      { entries: [{ sha256: sha(blockedBytes), reason: 'test' }] },
      { token: admin.token },
    );
    assert.equal(block.status, 200, JSON.stringify(block.body));
    const unseen = sha(randomBytes(64));

    const asked = [
      unseen,
      alicePublic.sha256,
      alicePrivate.sha256,
      bobPrivate.sha256,
      bobRemoved.sha256,
      sha(blockedBytes),
      alicePublic.sha256.toUpperCase(),
    ];
    const r = await check(asked, alice.token);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body, {
      results: [
        { sha256: unseen, status: 'new', upload_id: null },
        { sha256: alicePublic.sha256, status: 'exists', upload_id: alicePublic.id },
        { sha256: alicePrivate.sha256, status: 'exists', upload_id: alicePrivate.id },
        // Bob's private upload and his removed one are invisible to Alice: an upload of them would be processed.
        { sha256: bobPrivate.sha256, status: 'new', upload_id: null },
        { sha256: bobRemoved.sha256, status: 'new', upload_id: null },
        { sha256: sha(blockedBytes), status: 'blocked', upload_id: null },
        { sha256: alicePublic.sha256, status: 'exists', upload_id: alicePublic.id },
      ],
    });

    // The answer is the upload's own: Alice's re-upload of her public image is the duplicate it named.
    const again = await uploadImage(app.api, alice.token, await pngImage(320, 240, 101), {}, 'again.png');
    assert.equal(again.status, 200);
    assert.equal(again.body.existingUploadId, alicePublic.id, JSON.stringify(again.body));

    const asBob = await check([alicePrivate.sha256, bobPrivate.sha256], bob.token);
    assert.deepEqual(
      asBob.body.results.map((x: { status: string; upload_id: string | null }) => [x.status, x.upload_id]),
      [
        ['new', null],
        ['exists', bobPrivate.id],
      ],
    );
    // An admin sees every upload, as the duplicate check does.
    const asAdmin = await check([bobPrivate.sha256], admin.token);
    assert.equal(asAdmin.body.results[0].status, 'exists');
  });

  test('authentication required; bad bodies are 400 invalid_request naming the field or the limit', async () => {
    assert.equal((await check(['a'.repeat(64)])).status, 401);
    const cases: Array<[unknown, RegExp]> = [
      [[], /sha256 must list at least one digest/],
      [Array.from({ length: 1001 }, () => 'a'.repeat(64)), /more than 1000 digests/],
      [['a'.repeat(64), 'xyz'], /^sha256\.1: must be 64 hexadecimal characters/],
      [['a'.repeat(64), 7], /^sha256\.1: must be a string/],
      ['a'.repeat(64), /sha256 must be an array/],
    ];
    for (const [body, message] of cases) {
      const r = await check(body, alice.token);
      assert.equal(r.status, 400, JSON.stringify(body).slice(0, 80));
      assert.equal(r.body.error, 'invalid_request');
      assert.match(r.body.message, message);
    }
    const none = await app.api.post('/api/uploads/check', {}, { token: alice.token });
    assert.equal(none.status, 400);
    assert.match(none.body.message, /sha256 is required/);
  });

  test('a full batch of 1000 digests is answered in one request', async () => {
    const many = Array.from({ length: 1000 }, () => sha(randomBytes(16)));
    const r = await check(many, alice.token);
    assert.equal(r.status, 200);
    assert.equal(r.body.results.length, 1000);
    assert.ok(r.body.results.every((x: { status: string }) => x.status === 'new'));
    assert.deepEqual(
      r.body.results.map((x: { sha256: string }) => x.sha256),
      many,
    );
  });
});
