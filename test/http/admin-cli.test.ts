/**
 * `pixvote admin grant|revoke`: the operator's command on the server's database. The app under test keeps running;
 * the command runs as its own process with the server's DATA_DIR / DATABASE_URL, and the change shows on the next
 * request of a token issued before it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { startApp, type TestApp } from '../support/app.ts';
import { registerUser, type TestUser } from '../support/users.ts';
import { uploadFields } from '../support/uploads.ts';
import { pixvote, type CliOptions, type CliRun } from '../support/cli.ts';
import { ROOT } from '../support/start-command.ts';

let app: TestApp;
let alice: TestUser;
let bob: TestUser;
let home: string;
before(async () => {
  app = await startApp();
  alice = await registerUser(app.api);
  bob = await registerUser(app.api);
  home = await mkdtemp(join(tmpdir(), 'pixvote-admin-home-'));
});
after(async () => {
  await app.close();
  await rm(home, { recursive: true, force: true });
});

/** The server's own environment: its data directory and, on PostgreSQL, its database. */
const admin = (args: string[], env: Record<string, string> = {}, opts: Partial<CliOptions> = {}): Promise<CliRun> =>
  pixvote(['admin', ...args], {
    home,
    ...opts,
    env: { DATA_DIR: app.config.dataDir, DATABASE_URL: app.config.databaseUrl ?? '', ...env },
  });

/** How the command names the database it used: the SQLite file, or DATABASE_URL with its password masked. */
const database = () => {
  if (!app.config.databaseUrl) return join(app.config.dataDir, 'app.db');
  const u = new URL(app.config.databaseUrl);
  if (u.password) u.password = '***';
  return `DATABASE_URL=${u.toString()}`;
};

const roleOf = async (u: TestUser) => (await app.api.get('/api/profile', { token: u.token })).body.user.role;
const makePublic = (id: string, u: TestUser) =>
  app.api.patch(`/api/upload/${id}/privacy`, { is_private: false }, { token: u.token });

test('grant makes a user admin from the next request; revoke takes it away again', async () => {
  const link = await uploadFields(app.api, alice.token, {
    upload_type: 'link',
    external_url: 'https://example.org/post/7',
    is_private: 'true',
  });
  assert.equal(link.status, 201, link.text);
  const id = link.body.id as string;
  assert.equal((await makePublic(id, bob)).status, 403, 'not an admin yet');

  const granted = await admin(['grant', bob.username]);
  assert.equal(granted.code, 0, granted.stderr);
  assert.equal(granted.stdout, `${bob.username} is now an admin (database: ${database()})\n`);
  assert.equal(await roleOf(bob), 'admin', 'the same JWT, issued before the grant');
  assert.equal((await makePublic(id, bob)).status, 200, 'an admin may change the privacy of any upload');

  const again = await admin(['grant', bob.username.toUpperCase()]);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, `${bob.username} is already an admin (database: ${database()})\n`);

  const revoked = await admin(['revoke', bob.username]);
  assert.equal(revoked.code, 0, revoked.stderr);
  assert.equal(revoked.stdout, `${bob.username} is no longer an admin (database: ${database()})\n`);
  assert.equal(await roleOf(bob), 'user');
  assert.equal((await makePublic(id, bob)).status, 403, 'revoked from the next request on');
  assert.equal(await roleOf(alice), 'user', 'nobody else changed');
});

test('an unknown user is a one-line error naming the database looked in, and exit 1; nothing changes', async () => {
  const r = await admin(['grant', 'nobody_by_that_name']);
  assert.equal(r.code, 1);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr, `pixvote: no user "nobody_by_that_name" in ${database()}\n`);
});

test("run from another folder, a relative DATA_DIR is the checkout's, as the server takes it", async () => {
  const elsewhere = await mkdtemp(join(tmpdir(), 'pixvote-admin-cwd-'));
  try {
    // The server's DATA_DIR written relative to the checkout, the command run from an unrelated folder.
    const r = await admin(
      ['grant', alice.username],
      { DATA_DIR: relative(ROOT, app.config.dataDir) },
      { cwd: elsewhere },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `${alice.username} is now an admin (database: ${database()})\n`);
    assert.equal(await roleOf(alice), 'admin');
    assert.equal((await admin(['revoke', alice.username], {}, { cwd: elsewhere })).code, 0);
    // DATA_DIR unset: the checkout's ./data, never one in the current folder (nothing is created there).
    const unset = await admin(['grant', 'nobody_by_that_name'], { DATA_DIR: '', DATABASE_URL: '' }, { cwd: elsewhere });
    assert.equal(unset.code, 1);
    const checkoutDb = join(ROOT, 'data', 'app.db');
    assert.ok(
      unset.stderr ===
        `pixvote: no database at ${checkoutDb} (DATA_DIR unset: the checkout's ./data): ` +
          "run this with the server's DATA_DIR (or DATABASE_URL)\n" ||
        unset.stderr === `pixvote: no user "nobody_by_that_name" in ${checkoutDb}\n`,
      unset.stderr,
    );
    assert.deepEqual(await readdir(elsewhere), [], 'nothing made in the current folder');
  } finally {
    await rm(elsewhere, { recursive: true, force: true });
  }
});

test('--help explains the command and exits 0; bad usage exits 2', async () => {
  const help = await admin(['--help']);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /pixvote admin grant USERNAME/);
  assert.match(help.stdout, /DATABASE_URL/);
  assert.match((await pixvote(['--help'], { home })).stdout, /admin grant USERNAME \| admin revoke USERNAME/);
  for (const args of [[], ['promote', alice.username], ['grant'], ['grant', 'a', 'b']]) {
    const r = await admin(args);
    assert.equal(r.code, 2, args.join(' '));
    assert.match(r.stderr, /usage: pixvote admin grant USERNAME/);
  }
});

test('pointed at a directory with no database it says so, exits 1 and creates nothing', async () => {
  const empty = await mkdtemp(join(tmpdir(), 'pixvote-admin-empty-'));
  try {
    const r = await admin(['grant', alice.username], { DATA_DIR: empty, DATABASE_URL: '' });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      new RegExp(
        `^pixvote: no database at ${empty}/app\\.db \\(DATA_DIR=${empty}\\): ` +
          "run this with the server's DATA_DIR \\(or DATABASE_URL\\)\n$",
      ),
    );
    assert.deepEqual(await readdir(empty), []);
  } finally {
    await rm(empty, { recursive: true, force: true });
  }
});
