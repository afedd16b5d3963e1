/**
 * `pixvote admin grant|revoke`: the operator's command on the server's database. The app under test keeps running;
 * the command runs as its own process with the server's DATA_DIR / DATABASE_URL, and the change shows on the next
 * request of a token issued before it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, type TestApp } from '../support/app.ts';
import { registerUser, type TestUser } from '../support/users.ts';
import { uploadFields } from '../support/uploads.ts';
import { pixvote, type CliRun } from '../support/cli.ts';

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
const admin = (args: string[], env: Record<string, string> = {}): Promise<CliRun> =>
  pixvote(['admin', ...args], {
    home,
    env: { DATA_DIR: app.config.dataDir, DATABASE_URL: app.config.databaseUrl ?? '', ...env },
  });

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
  assert.equal(granted.stdout, `${bob.username} is now an admin\n`);
  assert.equal(await roleOf(bob), 'admin', 'the same JWT, issued before the grant');
  assert.equal((await makePublic(id, bob)).status, 200, 'an admin may change the privacy of any upload');

  const again = await admin(['grant', bob.username.toUpperCase()]);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, `${bob.username} is already an admin\n`);

  const revoked = await admin(['revoke', bob.username]);
  assert.equal(revoked.code, 0, revoked.stderr);
  assert.equal(revoked.stdout, `${bob.username} is no longer an admin\n`);
  assert.equal(await roleOf(bob), 'user');
  assert.equal((await makePublic(id, bob)).status, 403, 'revoked from the next request on');
  assert.equal(await roleOf(alice), 'user', 'nobody else changed');
});

test('an unknown user is a one-line error and exit 1; nothing changes', async () => {
  const r = await admin(['grant', 'nobody_by_that_name']);
  assert.equal(r.code, 1);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr, 'pixvote: no user "nobody_by_that_name"\n');
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
      /^pixvote: no database at .*app\.db: run this with the server's DATA_DIR \(or DATABASE_URL\)\n$/,
    );
    assert.deepEqual(await readdir(empty), []);
  } finally {
    await rm(empty, { recursive: true, force: true });
  }
});
