import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { pixvote } from '../support/cli.ts';

let app: TestApp;
let user: TestUser;
let home: string;
before(async () => {
  app = await startApp();
  user = await registerUser(app.api);
  home = await mkdtemp(join(tmpdir(), 'pixvote-cli-home-'));
});
after(async () => {
  await app.close();
  await rm(home, { recursive: true, force: true });
});

const configFile = () => join(home, 'pixvote', 'config.json');
const readConfig = async () => JSON.parse(await readFile(configFile(), 'utf8'));

test("pixvote login with a wrong password fails with the server's message and saves nothing", async () => {
  const r = await pixvote(['login', '--url', app.url, '--username', user.username, '--password-stdin'], {
    home,
    stdin: 'wrong password\n',
  });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /401 unauthorized: invalid credentials/);
  await assert.rejects(stat(configFile()), { code: 'ENOENT' });
});

test('pixvote login saves an API token (0600) so later commands need neither --url nor --token', async () => {
  const r = await pixvote(['login', '--url', `${app.url}/`, '--username', user.username, '--password-stdin'], {
    home,
    stdin: `${user.password}\n`,
  });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`logged in to ${app.url} as ${user.username}`));
  assert.equal((await stat(configFile())).mode & 0o777, 0o600);
  assert.equal((await stat(join(home, 'pixvote'))).mode & 0o777, 0o700);
  const config = await readConfig();
  assert.equal(config.current, app.url);
  const saved = config.servers[app.url];
  assert.equal(saved.kind, 'api_token');
  assert.match(saved.token, /^pv_/);
  assert.equal(saved.username, user.username);
  assert.equal((await app.api.get('/api/me', { token: saved.token })).body.user.username, user.username);

  const list = await pixvote(['tokens', 'list'], { home });
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^ID\s+NAME\s+CREATED\s+LAST USED\s+EXPIRES\s+SCOPES$/m);
  assert.match(list.stdout, new RegExp(`${saved.token_id}\\s+pixvote cli on .*\\snever\\s+upload,read,manage$`, 'm'));
  assert.match(r.stdout, /scopes upload,read,manage; never expires/);
});

test('pixvote tokens create, list and revoke', async () => {
  const created = await pixvote(['tokens', 'create', 'ci uploader'], { home });
  assert.equal(created.code, 0, created.stderr);
  const secret = /^(pv_\S+)$/m.exec(created.stdout)?.[1];
  const id = /\(([0-9a-f-]{36})\)/.exec(created.stdout)?.[1];
  assert.ok(secret && id, created.stdout);
  assert.equal((await app.api.get('/api/me', { token: secret })).status, 200);
  assert.match((await pixvote(['tokens', 'list'], { home })).stdout, /ci uploader/);

  const revoked = await pixvote(['tokens', 'revoke', id], { home });
  assert.equal(revoked.code, 0, revoked.stderr);
  assert.equal((await app.api.get('/api/me', { token: secret })).status, 401, 'a revoked token stops working at once');
  const again = await pixvote(['tokens', 'revoke', id], { home });
  assert.equal(again.code, 1);
  assert.match(again.stderr, /404 not_found/);
  assert.equal((await pixvote(['tokens', 'frobnicate'], { home })).code, 2);
});

test('pixvote tokens create --scopes --expires-in: a token made by the CLI token has at most its scopes', async () => {
  const created = await pixvote(['tokens', 'create', 'voter', '--scopes', 'upload', '--expires-in', '30d'], { home });
  assert.equal(created.code, 0, created.stderr);
  assert.match(created.stdout, /\): scopes upload; expires 20\d\d-/);
  const secret = /^(pv_\S+)$/m.exec(created.stdout)![1]!;
  const me = await app.api.get('/api/me', { token: secret });
  assert.equal(me.status, 403);
  assert.equal(me.body.error, 'insufficient_scope');
  const wider = await pixvote(['tokens', 'create', 'voter', '--scopes', 'vote'], { home });
  assert.equal(wider.code, 1);
  assert.match(wider.stderr, /403 forbidden: .*"vote"/);
  const unknown = await pixvote(['tokens', 'create', 'x', '--scopes', 'upload,everything'], { home });
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /--scopes: unknown scope "everything"/);
});

test('--token overrides the saved login; pixvote logout revokes the saved token', async () => {
  const other = await registerUser(app.api);
  const asOther = await pixvote(['tokens', 'list', '--token', other.token], { home });
  assert.equal(asOther.code, 0, asOther.stderr);
  assert.equal(asOther.stdout, 'no API tokens\n');

  const saved = (await readConfig()).servers[app.url];
  const out = await pixvote(['logout'], { home });
  assert.equal(out.code, 0, out.stderr);
  assert.match(out.stdout, /API token is revoked/);
  assert.equal((await app.api.get('/api/me', { token: saved.token })).status, 401);
  assert.deepEqual((await readConfig()).servers, {});
  const none = await pixvote(['tokens', 'list'], { home });
  assert.equal(none.code, 2);
  assert.match(none.stderr, /no server: pass --url/);
});

test('pixvote login --scopes, --expires-in; admins get moderate; logout revokes a token without manage', async () => {
  const admin = await registerAdmin(app);
  const asAdmin = await pixvote(['login', '--url', app.url, '--username', admin.username, '--password-stdin'], {
    home,
    stdin: `${admin.password}\n`,
  });
  assert.equal(asAdmin.code, 0, asAdmin.stderr);
  assert.match(asAdmin.stdout, /scopes upload,read,manage,moderate; never expires/);
  const adminToken = (await readConfig()).servers[app.url].token;
  assert.equal((await app.api.get('/api/admin/moderation', { token: adminToken })).status, 200);
  const queue = await pixvote(['mod', 'queue'], { home });
  assert.equal(queue.code, 0, queue.stderr);
  const narrow = await app.api.post(
    '/api/auth/tokens/generate',
    { name: 'no moderation', scopes: ['upload'] },
    { token: admin.token },
  );
  const refused = await pixvote(['mod', 'queue', '--token', narrow.body.token], { home });
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /^pixvote: the token given may not moderate on .*"moderate"/);

  const r = await pixvote(
    [
      'login',
      '--url',
      app.url,
      '--username',
      user.username,
      '--password-stdin',
      '--scopes',
      'upload',
      '--expires-in',
      '1d',
    ],
    { home, stdin: `${user.password}\n` },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /scopes upload; expires 20\d\d-/);
  const saved = (await readConfig()).servers[app.url];
  assert.equal((await app.api.get('/api/me', { token: saved.token })).status, 403);
  const out = await pixvote(['logout'], { home });
  assert.equal(out.code, 0, out.stderr);
  assert.equal(
    (await app.api.post('/api/uploads/check', { sha256: ['a'.repeat(64)] }, { token: saved.token })).status,
    401,
  );

  const bad = await pixvote(['login', '--url', app.url, '--username', user.username, '--scopes', 'nope'], { home });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--scopes: unknown scope "nope"/);
  const long = await pixvote(
    ['login', '--url', app.url, '--username', user.username, '--password-stdin', '--expires-in', '2y'],
    { home, stdin: `${user.password}\n` },
  );
  assert.equal(long.code, 1);
  assert.match(long.stderr, /400 invalid_request: expires_in must be a duration/);
});

test('pixvote login --jwt keeps the JWT instead of creating an API token', async () => {
  const r = await pixvote(
    ['login', '--url', app.url, '--email', user.email.toUpperCase(), '--password-stdin', '--jwt'],
    { home, stdin: user.password },
  );
  assert.equal(r.code, 0, r.stderr);
  const saved = (await readConfig()).servers[app.url];
  assert.equal(saved.kind, 'jwt');
  assert.equal(saved.token.split('.').length, 3);
  assert.equal((await app.api.get('/api/me', { token: saved.token })).status, 200);
});

test('pixvote login on 429 says at once, in one line, how long to wait, and saves nothing', async () => {
  // One POST /api/auth per client IP an hour: registering uses it up, so the login meets a 429.
  const strict = await startApp({ RATE_LIMIT_AUTH: '1/1h' });
  const strictHome = await mkdtemp(join(tmpdir(), 'pixvote-cli-home-'));
  try {
    const someone = await registerUser(strict.api);
    const r = await pixvote(['login', '--url', strict.url, '--username', someone.username, '--password-stdin'], {
      home: strictHome,
      stdin: `${someone.password}\n`,
    });
    assert.equal(r.code, 75, r.stdout + r.stderr);
    assert.match(
      r.stderr,
      /^pixvote: login refused for now \(429 rate_limited: .+\); try again in (\d+ min \d+ s|1 h 0 min), after \d\d:\d\d:\d\d UTC\n$/,
    );
    assert.equal(r.stdout, '');
    await assert.rejects(stat(join(strictHome, 'pixvote', 'config.json')), { code: 'ENOENT' });
  } finally {
    await strict.close();
    await rm(strictHome, { recursive: true, force: true });
  }
});
