/**
 * `pixvote media backfill-pdq` (issue 31 part 4): images stored before pixvote computed PDQ get one, from their
 * stored full variant, and those whose PDQ is blocklisted are held, as the hold job holds the uploads it matches.
 * Both databases: the uploads' PDQs are cleared as a database from before m012 has them.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { uploadImage } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { runMedia } from '../../src/cli/media.command.ts';
import { pdqDistance } from '../../src/store/similarity/pdq-hamming.ts';

let app: TestApp;
let owner: TestUser;
let admin: TestUser;

before(async () => {
  app = await startApp();
  owner = await registerUser(app.api);
  admin = await registerAdmin(app, `pdqfill_${Math.random().toString(36).slice(2, 8)}`);
});
after(() => app.close());

const pdqOf = async (id: string) =>
  (
    await app.composed.db
      .db()
      .selectFrom('uploads')
      .select(['pdq', 'pdq_quality'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
  ).pdq;

async function backfill(): Promise<{ code: number; text: string }> {
  const out = new PassThrough();
  let text = '';
  out.on('data', (c: Buffer) => (text += c.toString()));
  const env = {
    DATA_DIR: app.config.dataDir,
    ...(app.config.databaseUrl ? { DATABASE_URL: app.config.databaseUrl } : {}),
  };
  const code = await runMedia(['backfill-pdq', '--batch', '1'], out, env);
  return { code, text };
}

test('backfill-pdq hashes the images stored without a PDQ and holds the blocklisted ones, once', async () => {
  const ids: string[] = [];
  for (const seed of [7301, 7302, 7303]) {
    const r = await uploadImage(app.api, owner.token, await photoJpeg({ width: 640, height: 480, seed }));
    assert.equal(r.status, 201, r.text);
    ids.push(r.body.id as string);
  }
  const original = (await pdqOf(ids[0]!))!;
  assert.ok(original, 'the pipeline computed one');
  // As a database from before m012: no PDQ on any of them.
  await app.composed.db
    .db()
    .updateTable('uploads')
    .set({ pdq: null, pdq_quality: null })
    .where('id', 'in', ids)
    .execute();
  // The first one's PDQ is blocklisted: the hold job finds no stored PDQ to match, so nothing is held yet.
  const added = await app.api.post(
    '/api/admin/blocklist',
    { entries: [{ pdq: original, reason: 'shared list' }] },
    {
      token: admin.token,
    },
  );
  assert.equal(added.status, 200, added.text);
  assert.equal((await app.api.get(`/api/upload/${ids[0]}`)).status, 200, 'not held before the backfill');

  const run = await backfill();
  assert.equal(run.code, 0, run.text);
  assert.match(run.text, /backfill-pdq: 3 uploads hashed, 1 held/);
  for (const id of ids) assert.ok(await pdqOf(id), `${id} has a PDQ now`);
  // From the full variant, not the original: a few bits off the pipeline's hash, far inside the distance of 31.
  const distance = pdqDistance((await pdqOf(ids[0]!))!, original);
  assert.ok(distance <= 16, `backfilled PDQ is ${distance} bits from the original's`);
  assert.equal((await app.api.get(`/api/upload/${ids[0]}`)).status, 404, 'held: gone from public view');
  assert.equal((await app.api.get(`/api/upload/${ids[1]}`)).status, 200);
  const log = await app.api.get('/api/modlog?limit=10', { token: admin.token });
  const holds = log.body.entries.filter(
    (e: { action: string; target: { id: string } }) => e.action === 'auto_hold' && e.target.id === ids[0],
  );
  assert.equal(holds.length, 1);

  const again = await backfill();
  assert.match(again.text, /backfill-pdq: 0 uploads hashed, 0 held/, 'a second run touches nothing');
});
