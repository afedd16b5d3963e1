/**
 * PDQ entries of the blocklist through the real HTTP API and the CLI (both databases; API.md Moderation,
 * Blocklist): an upload whose PDQ is within 31 bits of an entry is refused 400 `blocked_content` with nothing stored,
 * a PDQ of quality under 50 is never matched, a far one passes, a new entry holds the stored uploads it matches,
 * `block: "near"` adds the upload's PDQ, the field is validated, and python-threatexchange's CSV goes in and out
 * through `pixvote mod blocklist`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { stageRuns, startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { countUploads, diskState, uploadImage } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { eventually } from '../support/jobs.ts';
import { flipPdqBits, lcgRandom } from '../support/hashes.ts';
import { pixvote } from '../support/cli.ts';

let app: TestApp;
let owner: TestUser;
let other: TestUser;
let admin: TestUser;
let home: string;
let seed = 9100;
const r = lcgRandom(31);

before(async () => {
  app = await startApp();
  owner = await registerUser(app.api);
  other = await registerUser(app.api);
  admin = await registerAdmin(app, `pdq_${Math.random().toString(36).slice(2, 8)}`);
  home = await mkdtemp(join(tmpdir(), 'pixvote-pdq-home-'));
});
after(async () => {
  await app.close();
  await rm(home, { recursive: true, force: true });
});

/** An upload of these bytes; private by default, so that another user's copy is not answered as its duplicate. */
async function upload(user: TestUser, bytes: Buffer, isPrivate = true) {
  const res = await uploadImage(app.api, user.token, bytes, { is_private: String(isPrivate) });
  assert.equal(res.status, 201, res.text);
  return res.body.id as string;
}

/** The PDQ the worker stored for an upload. */
async function stored(id: string): Promise<{ pdq: string; quality: number }> {
  const row = await app.composed.db
    .db()
    .selectFrom('uploads')
    .select(['pdq', 'pdq_quality'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  assert.ok(row.pdq, `upload ${id} has a PDQ`);
  return { pdq: row.pdq, quality: row.pdq_quality! };
}

const addEntries = async (entries: Array<Record<string, string>>) => {
  const res = await app.api.post('/api/admin/blocklist', { entries }, { token: admin.token });
  assert.equal(res.status, 200, res.text);
  return res.body as { added: number; skipped: number };
};

/** The hold job has run every entry added so far. */
const holdsDone = () =>
  eventually(async () => {
    const row = await app.composed.db
      .db()
      .selectFrom('blocklist_pending')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n) === 0;
  }, 'every new entry was run by the hold job');

const moderationOf = async (id: string) =>
  (await app.api.get(`/api/upload/${id}`, { token: admin.token })).body.moderation as string;

/** A re-encoded, resized copy: other bytes, a PDQ a few bits away. */
const copyOf = (bytes: Buffer) => sharp(bytes).resize(400).webp({ quality: 60 }).toBuffer();

describe('PDQ blocklist entries', () => {
  test('a copy whose PDQ is within 31 bits of an entry is refused, nothing stored; the original is held', async () => {
    const original = await photoJpeg({ width: 480, height: 360, seed: seed++ });
    const id = await upload(owner, original);
    const { pdq, quality } = await stored(id);
    assert.ok(quality >= 50, `a photo's PDQ is worth matching (quality ${quality})`);
    const entry = flipPdqBits(pdq, 12, r);
    const added = await addEntries([{ pdq: entry.toUpperCase(), reason: 'shared list' }]);
    assert.deepEqual({ ...added, job: undefined }, { added: 1, skipped: 0, job: undefined });
    await eventually(async () => (await moderationOf(id)) === 'held', 'the stored upload it matches is held');
    const log = await app.api.get('/api/modlog?limit=50', { token: admin.token });
    assert.ok(
      log.body.entries.some((e: { action: string; target: { id: string } }) => {
        return e.action === 'auto_hold' && e.target.id === id;
      }),
      'an auto_hold line',
    );

    const copy = await copyOf(original);
    const rows = await countUploads(app);
    const before = await stageRuns(app);
    const res = await uploadImage(app.api, other.token, copy, {}, 'copy.webp');
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error, 'blocked_content');
    assert.doesNotMatch(res.body.message, /[0-9a-f]{16}/, 'nothing says which entry matched');
    const after = await stageRuns(app);
    assert.equal(after.phash, before.phash + 1, 'hashed');
    assert.equal(after.encode, before.encode, 'never encoded');
    assert.equal(await countUploads(app), rows, 'nothing stored');
    assert.deepEqual((await diskState(app)).staging, []);

    const list = await app.api.get('/api/admin/blocklist?limit=50', { token: admin.token });
    const listed = list.body.entries.find((e: { pdq: string | null }) => e.pdq === entry);
    assert.ok(listed, 'listed with its PDQ, lowercased');
    assert.deepEqual([listed.sha256, listed.phash, listed.source], [null, null, 'import']);
  });

  test('a PDQ of quality under 50 is not matched; a PDQ far from every entry passes', async () => {
    // A flat image: no gradients, PDQ quality 0.
    const flat = (width: number) =>
      sharp({ create: { width, height: 200, channels: 3, background: { r: 120, g: 130, b: 140 } } })
        .png()
        .toBuffer();
    const flatId = await upload(owner, await flat(300));
    const low = await stored(flatId);
    assert.ok(low.quality < 50, `a flat image's PDQ quality is low (${low.quality})`);

    const photo = await photoJpeg({ width: 480, height: 360, seed: seed++ });
    const photoId = await upload(owner, photo);
    const far = flipPdqBits((await stored(photoId)).pdq, 64, r);
    await addEntries([
      { pdq: low.pdq, reason: 'featureless' },
      { pdq: far, reason: 'far away' },
    ]);
    await holdsDone();
    assert.equal(await moderationOf(flatId), 'visible', 'the low-quality upload is not held');
    assert.equal(await moderationOf(photoId), 'visible', 'nor the one 64 bits away');

    const res = await uploadImage(app.api, other.token, await flat(310), {}, 'flat.png');
    assert.equal(res.status, 201, `quality under 50 is not matched: ${res.text}`);
    const pass = await uploadImage(app.api, other.token, await copyOf(photo), {}, 'far.webp');
    assert.equal(pass.status, 201, `a far PDQ passes: ${pass.text}`);
  });

  test('block near adds the upload\u2019s PDQ to the blocklist', async () => {
    const bytes = await photoJpeg({ width: 480, height: 360, seed: seed++ });
    const id = await upload(owner, bytes, false);
    const { pdq } = await stored(id);
    const acted = await app.api.post(
      `/api/admin/uploads/${id}/moderation`,
      { action: 'remove', reason: 'scam', block: 'near' },
      { token: admin.token },
    );
    assert.equal(acted.status, 200, acted.text);
    const list = await app.api.get('/api/admin/blocklist?limit=50', { token: admin.token });
    const entry = list.body.entries.find((e: { pdq: string | null }) => e.pdq === pdq);
    assert.ok(entry, 'the PDQ is on the blocklist');
    assert.equal(entry.source, 'moderation');
    assert.match(entry.sha256, /^[0-9a-f]{64}$/);
    assert.match(entry.phash, /^[0-9a-f]{16}$/);
    const res = await uploadImage(app.api, other.token, await copyOf(bytes), {}, 'copy.webp');
    assert.equal(res.body.error, 'blocked_content', res.text);
  });

  test('pdq must be exactly 64 hex characters: 400 naming the field', async () => {
    for (const pdq of ['abc', 'g'.repeat(64), 'a'.repeat(65), 42]) {
      const res = await app.api.post('/api/admin/blocklist', { entries: [{ pdq }] }, { token: admin.token });
      assert.equal(res.status, 400, `${pdq}: ${res.text}`);
      assert.equal(res.body.error, 'invalid_request');
      assert.match(res.body.message, /pdq/);
    }
  });

  test('pixvote mod blocklist: python-threatexchange CSV in, hma-csv out, the same entries back', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pixvote-pdq-csv-'));
    const mod = (args: string[]) =>
      pixvote(['mod', ...args], { home, env: { PIXVOTE_URL: app.url, PIXVOTE_TOKEN: admin.token } });
    try {
      const [a, b] = [flipPdqBits('0'.repeat(64), 128, r), flipPdqBits('f'.repeat(64), 100, r)];
      const file = join(dir, 'collab.csv');
      await writeFile(
        file,
        'collab,signal_type,signal_str,category,tags\r\n' +
          `Sample Data,pdq,${a.toUpperCase()},POSITIVE_CLASS,scam ring\r\n` +
          'Sample Data,video_md5,d41d8cd98f00b204e9800998ecf8427e,POSITIVE_CLASS,\r\n' +
          `Sample Data,pdq,${b},POSITIVE_CLASS,\r\n`,
      );
      const imported = await mod(['blocklist', 'import', file]);
      assert.equal(imported.code, 0, imported.stderr);
      assert.match(imported.stdout, /: 2 added, 0 skipped/);
      assert.match(imported.stdout, /1 row of other signal types left out, video_md5: 1/);

      const out = join(dir, 'out.csv');
      const exported = await mod(['blocklist', 'export', out, '--format', 'hma-csv']);
      assert.equal(exported.code, 0, exported.stderr);
      assert.match(exported.stdout, /^exported \d+ PDQ entries to .*out\.csv/);
      const text = await readFile(out, 'utf8');
      assert.match(text, /^collab,signal_type,signal_str,category,tags\n/);
      assert.ok(text.includes(`pixvote,pdq,${a},POSITIVE_CLASS,scam ring\n`), text);
      assert.ok(text.includes(`pixvote,pdq,${b},POSITIVE_CLASS,Sample Data\n`), text);

      // Its two lines read back are the same entries (an entry with a SHA-256 too, from `block: near`, comes back
      // as a PDQ-only entry: hma-csv carries the PDQ alone).
      const back = join(dir, 'back.csv');
      const lines = text.split('\n');
      await writeFile(back, [lines[0], ...lines.filter((l) => l.includes(a) || l.includes(b))].join('\n') + '\n');
      const again = await mod(['blocklist', 'import', back, '--dry-run']);
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /: 0 new, 2 already on the blocklist/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
