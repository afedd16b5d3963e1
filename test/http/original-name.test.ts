import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../support/app.ts';
import { registerUser, type TestUser } from '../support/users.ts';
import { pngImage } from '../support/fixtures.ts';
import { uploadImage } from '../support/uploads.ts';

let app: TestApp;
let user: TestUser;

before(async () => {
  // Every upload here is a different random picture; near matching would only slow the point down.
  app = await startApp({ NEAR_DUPLICATE_DISTANCE: '-1' });
  user = await registerUser(app.api);
});
after(() => app.close());

let seed = 700;
async function uploadNamed(name: string) {
  const r = await uploadImage(app.api, user.token, await pngImage(64, 48, seed++), {}, name);
  assert.equal(r.status, 201, r.text);
  assert.equal(
    (await app.api.get(`/api/upload/${r.body.id}`)).body.original_name,
    r.body.original_name,
    'stored as answered',
  );
  return r.body.original_name as string | null;
}

test('original_name loses bidi overrides, zero-width and control characters (multipart file name)', async () => {
  // "cat‮gpj.exe" displays as "catexe.jpg": the override is what makes it a lie.
  assert.equal(await uploadNamed('cat\u202Egpj.exe'), 'catgpj.exe');
  assert.equal(await uploadNamed('\u2066sun\u2069set\u200B\u200D\uFEFF\u00AD.png'), 'sunset.png');
  assert.equal(await uploadNamed('tab\tand\u0001bell\u0007.png'), 'tabandbell.png');
});

test('original_name is NFC-normalized, has no path and holds at most 255 characters', async () => {
  assert.equal(await uploadNamed('cafe\u0301.png'), 'caf\u00E9.png');
  assert.equal(await uploadNamed('../../etc/passwd.png'), 'passwd.png');
  assert.equal(await uploadNamed('C:\\Users\\ada\\me.png'), 'me.png');
  const long = await uploadNamed(`${'é'.repeat(300)}.png`);
  assert.equal([...long!].length, 255);
  // Nothing left: no name.
  assert.equal(await uploadNamed('\u202E\u200B'), null);
});
