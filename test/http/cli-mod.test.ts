/**
 * `pixvote mod …` against the real server (API.md, Moderation): the queue, decisions on an upload, bans, the
 * blocklist files and the modlog, each run as the installed command with an admin's token.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { uploadImage } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { pixvote, type CliRun } from '../support/cli.ts';

let app: TestApp;
let admin: TestUser;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let home: string;
before(async () => {
  app = await startApp();
  admin = await registerAdmin(app);
  [alice, bob, carol] = [await registerUser(app.api), await registerUser(app.api), await registerUser(app.api)];
  home = await mkdtemp(join(tmpdir(), 'pixvote-mod-home-'));
});
after(async () => {
  await app.close();
  await rm(home, { recursive: true, force: true });
});

/** `pixvote mod …` with PIXVOTE_URL and PIXVOTE_TOKEN (the admin's unless told). */
const mod = (args: string[], token = admin.token): Promise<CliRun> =>
  pixvote(['mod', ...args], { home, env: { PIXVOTE_URL: app.url, PIXVOTE_TOKEN: token } });

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const hex = (bytes: number) => randomBytes(bytes).toString('hex');

async function upload(user: TestUser, seed: number): Promise<{ id: string; sha: string }> {
  const bytes = await photoJpeg({ seed, width: 320, height: 240 });
  const r = await uploadImage(app.api, user.token, bytes);
  assert.equal(r.status, 201, r.text);
  return { id: r.body.id as string, sha: sha256(bytes) };
}

/** Every blocklist entry, as the admin API lists them. */
async function blocklist(): Promise<Array<{ sha256: string | null; phash: string | null; reason: string | null }>> {
  const all = [];
  for (let page = 1; ; page++) {
    const r = await app.api.get(`/api/admin/blocklist?page=${page}&limit=50`, { token: admin.token });
    assert.equal(r.status, 200, r.text);
    all.push(...r.body.entries);
    if (!r.body.has_more) return all;
  }
}

test('queue shows a reported upload; hold, approve, remove change its state; --block exact blocks it', async () => {
  const bytes = await photoJpeg({ seed: 31, width: 320, height: 240 });
  const posted = await uploadImage(app.api, alice.token, bytes);
  assert.equal(posted.status, 201, posted.text);
  const id = posted.body.id as string;
  for (const [u, reason] of [
    [bob, 'spam'],
    [carol, 'spam'],
  ] as const) {
    const r = await app.api.post(`/api/upload/${id}/report`, { reason }, { token: u.token });
    assert.equal(r.status, 201, r.text);
  }

  const queue = await mod(['queue']);
  assert.equal(queue.code, 0, queue.stderr);
  assert.match(queue.stdout, /^UPLOAD\s+STATE\s+REPORTS\s+REASONS\s+PERSON\s+UPLOADER\s+AGE$/m);
  assert.match(
    queue.stdout,
    new RegExp(`^${id}\\s+(visible|held)\\s+2\\s+spam×2\\s+-\\s+${alice.username}\\s+\\d+[sm]$`, 'm'),
  );
  const json = await mod(['queue', '--json', '--limit', '50']);
  assert.equal(json.code, 0, json.stderr);
  const item = (JSON.parse(json.stdout) as { items: any[] }).items.find((i) => i.upload.id === id);
  assert.equal(item.reports.count, 2);
  assert.deepEqual(item.reports.reasons, { spam: 2 });

  const held = await mod(['hold', id, '--reason', 'having a look']);
  assert.equal(held.code, 0, held.stderr);
  assert.equal(held.stdout, `upload ${id} is held\n`);
  assert.equal((await app.api.get(`/api/upload/${id}`, { token: bob.token })).status, 404, 'held: hidden');

  const approved = await mod(['approve', id, '--reason', 'fine after all']);
  assert.equal(approved.code, 0, approved.stderr);
  assert.equal(approved.stdout, `upload ${id} is visible\n`);
  assert.equal((await app.api.get(`/api/upload/${id}`, { token: bob.token })).status, 200);

  const removed = await mod(['remove', id, '--block', 'exact', '--reason', 'not fine']);
  assert.equal(removed.code, 0, removed.stderr);
  assert.equal(removed.stdout, `upload ${id} is removed; its SHA-256 is blocklisted\n`);
  assert.equal((await app.api.get(`/api/upload/${id}`, { token: bob.token })).status, 410);
  assert.ok((await blocklist()).some((e) => e.sha256 === sha256(bytes)));
  const again = await uploadImage(app.api, bob.token, bytes);
  assert.equal(again.status, 400);
  assert.equal(again.body.error, 'blocked_content');

  const closed = await mod(['queue', '--status', 'closed', '--limit', '50']);
  assert.equal(closed.code, 0, closed.stderr);
  assert.match(closed.stdout, new RegExp(`^${id}\\s+removed\\s`, 'm'));

  const missing = await mod(['hold', '00000000-0000-4000-8000-000000000000', '--reason', 'x']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /404 not_found/);
});

test('a login that is not an admin, or none that works, is told so with exit 1', async () => {
  const notAdmin = await mod(['queue'], alice.token);
  assert.equal(notAdmin.code, 1);
  assert.match(notAdmin.stderr, /^pixvote: the token given is not an admin on http:\/\/127\.0\.0\.1:\d+: /);
  const bogus = await mod(['queue'], 'pv_not_a_real_token');
  assert.equal(bogus.code, 1);
  assert.match(bogus.stderr, /^pixvote: not logged in to http:\/\/127\.0\.0\.1:\d+: /);

  const ownHome = await mkdtemp(join(tmpdir(), 'pixvote-mod-login-'));
  try {
    const login = await pixvote(['login', '--url', app.url, '--username', alice.username, '--password-stdin'], {
      home: ownHome,
      stdin: `${alice.password}\n`,
    });
    assert.equal(login.code, 0, login.stderr);
    const saved = await pixvote(['mod', 'queue'], { home: ownHome });
    assert.equal(saved.code, 1);
    assert.match(saved.stderr, new RegExp(`^pixvote: the saved login \\(${alice.username}\\) is not an admin`));
    const usage = await pixvote(['mod', 'hold', 'x'], { home: ownHome });
    assert.equal(usage.code, 2, 'usage errors before any request');
  } finally {
    await rm(ownHome, { recursive: true, force: true });
  }
});

test('ban finds the user by username in any case; the ban holds from the next request; unban lifts it', async () => {
  const user = await registerUser(app.api);
  const banned = await mod(['ban', user.username.toUpperCase(), '--days', '2', '--reason', 'spam run']);
  assert.equal(banned.code, 0, banned.stderr);
  assert.match(banned.stdout, new RegExp(`^banned ${user.username} until \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\n$`));
  const refused = await app.api.get('/api/profile', { token: user.token });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error, 'banned');

  const unbanned = await mod(['unban', user.id]);
  assert.equal(unbanned.code, 0, unbanned.stderr);
  assert.equal((await app.api.get('/api/profile', { token: user.token })).status, 200);

  const forever = await mod(['ban', user.username, '--reason', 'again']);
  assert.equal(forever.code, 0, forever.stderr);
  assert.equal(forever.stdout, `banned ${user.username} permanently\n`);
  assert.equal((await mod(['unban', user.username])).stdout, `unbanned ${user.username}\n`);

  const nobody = await mod(['ban', 'nobody_by_that_name', '--reason', 'x']);
  assert.equal(nobody.code, 1);
  assert.equal(nobody.stderr, 'pixvote: no user "nobody_by_that_name"\n');
});

test('blocklist import: a bad line sends nothing; --dry-run counts, changes nothing; export round-trips', async () => {
  const existing = await upload(alice, 41);
  const [s1, s2, p1] = [hex(32), hex(32), hex(8)];
  const good = [
    'sha256,phash,reason',
    `${existing.sha},,"matches, an ""existing"" upload"`,
    `${s1.toUpperCase()},${p1},`,
    `${s2},,plain`,
    `${existing.sha},,repeated`,
  ];
  const dir = await mkdtemp(join(tmpdir(), 'pixvote-mod-files-'));
  try {
    const bad = join(dir, 'bad.csv');
    await writeFile(bad, [...good, 'abc,,too short', ',,'].join('\n') + '\n');
    const before = (await blocklist()).length;
    const refused = await mod(['blocklist', 'import', bad]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /has 2 invalid entries; nothing was sent/);
    assert.match(refused.stderr, new RegExp(`${bad}:6: sha256 "abc" is not 64 hex digits`));
    assert.match(refused.stderr, new RegExp(`${bad}:7: neither sha256, phash nor pdq`));
    assert.equal((await blocklist()).length, before);

    const file = join(dir, 'list.csv');
    await writeFile(file, good.join('\r\n') + '\r\n');
    const dry = await mod(['blocklist', 'import', file, '--dry-run', '--reason', 'list 2030-01']);
    assert.equal(dry.code, 0, dry.stderr);
    assert.equal(
      dry.stdout,
      `dry run, nothing changed: 4 entries in ${file}: 3 new, 0 already on the blocklist; ` +
        '1 line repeating an earlier one sent once\n1 existing upload would be held\n',
    );
    assert.equal((await blocklist()).length, before, 'a dry run adds nothing');
    assert.equal((await app.api.get(`/api/upload/${existing.id}`, { token: bob.token })).status, 200);

    const imported = await mod(['blocklist', 'import', file, '--reason', 'list 2030-01']);
    assert.equal(imported.code, 0, imported.stderr);
    assert.match(imported.stdout, /: 3 added, 0 skipped \(already on the blocklist\); 1 line repeating/);
    const again = await mod(['blocklist', 'import', file]);
    assert.match(again.stdout, /: 0 added, 3 skipped/);

    const listed = await blocklist();
    assert.equal(listed.length, before + 3);
    assert.deepEqual(
      listed
        .filter((e) => [existing.sha, s1, s2].includes(e.sha256 ?? ''))
        .map((e) => [e.sha256, e.phash, e.reason])
        .sort(),
      [
        [existing.sha, null, 'matches, an "existing" upload'],
        [s1, p1, 'list 2030-01'],
        [s2, null, 'plain'],
      ].sort(),
    );

    for (const name of ['out.csv', 'out.json']) {
      const out = join(dir, name);
      const exported = await mod(['blocklist', 'export', out]);
      assert.equal(exported.code, 0, exported.stderr);
      assert.equal(exported.stdout, `exported ${listed.length} entries to ${out}\n`);
      const dryAgain = await mod(['blocklist', 'import', out, '--dry-run']);
      assert.match(dryAgain.stdout, new RegExp(`: 0 new, ${listed.length} already on the blocklist\\n`), name);
    }
    const csv = await readFile(join(dir, 'out.csv'), 'utf8');
    assert.match(csv, /^sha256,phash,reason\n/);
    assert.ok(csv.includes(`${existing.sha},,"matches, an ""existing"" upload"\n`), csv);
    const json = JSON.parse(await readFile(join(dir, 'out.json'), 'utf8')) as unknown[];
    assert.equal(json.length, listed.length);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('modlog lists the moderators\u2019 actions, newest first', async () => {
  const r = await mod(['modlog', '--limit', '100']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^AT\s+ACTION\s+TARGET\s+MODERATOR\s+REASON$/m);
  assert.match(r.stdout, new RegExp(`\\sunban\\s+user [0-9a-f-]{36}\\s+${admin.username}\\s`));
  const anonymous = await pixvote(['mod', 'modlog', '--json', '--limit', '100', '--url', app.url], { home });
  assert.equal(anonymous.code, 0, anonymous.stderr);
  const entries = (JSON.parse(anonymous.stdout) as { entries: Array<Record<string, unknown>> }).entries;
  assert.ok(entries.length > 0);
  assert.ok(
    entries.every((e) => !('moderator' in e)),
    'the moderators are shown to admins only',
  );
});
