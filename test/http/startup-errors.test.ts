/**
 * The first hour of an operator: a database the server cannot open stops the start with one line on stderr that
 * names the variable to fix (DATABASE_URL with its password masked, or DATA_DIR) and why, and no stack trace.
 * Each case runs the start command of package.json (what `npm start` runs) and reads what it printed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, realpathSync, statSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ROOT, startArgv } from '../support/start-command.ts';
import { scaledBudget } from '../support/budget.ts';

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the start command with `env` (over a clean base: no DATABASE_URL of the test run) until it exits. */
function start(env: Record<string, string>, opts: { asUser?: number } = {}): Promise<Exit> {
  const [node, ...args] = startArgv();
  const argv = [node === 'node' ? process.execPath : node!, ...args];
  const [command, ...rest] =
    opts.asUser === undefined
      ? argv
      : ['setpriv', `--reuid=${opts.asUser}`, `--regid=${opts.asUser}`, '--clear-groups', ...argv];
  const child = spawn(command!, rest, {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      HUMAN_POLICY: 'off',
      WORKERS: '1',
      LOG_LEVEL: 'warn',
      DATABASE_URL: '',
      REDIS_URL: '',
      JWT_SECRET: 'j'.repeat(40),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  // A start that hangs instead of exiting is killed (and then fails its assertions): after a minute, stretched
  // by the machine's load.
  const timer = setTimeout(() => child.kill('SIGKILL'), scaledBudget(60_000));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The one line on stderr, checked to be one line, with no stack trace. */
function oneLine(r: Exit): string {
  assert.ok(r.stderr.endsWith('\n') && !r.stderr.slice(0, -1).includes('\n'), `one line on stderr:\n${r.stderr}`);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  assert.doesNotMatch(r.stdout, /"stack"/, 'no stack trace in the log either');
  return r.stderr.trimEnd();
}

/** A port nothing listens on. */
async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as { port: number };
  await new Promise((r) => probe.close(r));
  return port;
}

test('DATABASE_URL where nothing listens: after DATABASE_WAIT_MS, one line naming it (masked) and why', async () => {
  const port = await freePort();
  const started = Date.now();
  const r = await start({
    DATABASE_URL: `postgres://pixvote:hunter2secret@127.0.0.1:${port}/pixvote`,
    DATABASE_WAIT_MS: '1000',
  });
  assert.equal(r.code, 1);
  const line = oneLine(r);
  assert.match(
    line,
    new RegExp(
      `^pixvote: failed to start: DATABASE_URL=postgres://pixvote:\\*\\*\\*@127\\.0\\.0\\.1:${port}/pixvote: ` +
        `connection refused by 127\\.0\\.0\\.1:${port} \\(ECONNREFUSED: nothing listens there\\); ` +
        'gave up after \\d+\\.\\d s of retries \\(DATABASE_WAIT_MS=1000\\)$',
    ),
  );
  assert.ok(!(r.stdout + r.stderr).includes('hunter2secret'), 'the password is never printed');
  assert.ok(Date.now() - started >= 1000, 'it waited DATABASE_WAIT_MS first');
});

test('DATABASE_URL with a host name that does not resolve: one line saying unknown host', async () => {
  const r = await start({
    DATABASE_URL: 'postgres://pixvote:hunter2secret@pixvote-db.invalid:5432/pixvote',
    DATABASE_WAIT_MS: '0',
  });
  assert.equal(r.code, 1);
  assert.match(
    oneLine(r),
    // ENOTFOUND, or EAI_AGAIN where no DNS server answers at all
    /^pixvote: failed to start: DATABASE_URL=postgres:\/\/pixvote:\*\*\*@pixvote-db\.invalid:5432\/pixvote: (unknown host "pixvote-db\.invalid" \(ENOTFOUND|the host name "pixvote-db\.invalid" could not be resolved \(EAI_AGAIN).*; not retried \(DATABASE_WAIT_MS=0\)$/,
  );
});

test('DATABASE_URL where something accepts but never answers: one line saying it timed out', async () => {
  const sockets = new Set<Socket>();
  const silent: Server = createServer((s) => void sockets.add(s)).listen(0, '127.0.0.1');
  await once(silent, 'listening');
  const { port } = silent.address() as { port: number };
  try {
    const r = await start({ DATABASE_URL: `postgres://pixvote@127.0.0.1:${port}/pixvote`, DATABASE_WAIT_MS: '0' });
    assert.equal(r.code, 1);
    assert.match(
      oneLine(r),
      new RegExp(
        `^pixvote: failed to start: DATABASE_URL=postgres://pixvote@127\\.0\\.0\\.1:${port}/pixvote: ` +
          `timed out connecting to 127\\.0\\.0\\.1:${port}; not retried \\(DATABASE_WAIT_MS=0\\)$`,
      ),
    );
  } finally {
    for (const s of sockets) s.destroy();
    silent.close();
  }
});

test('SQLite with a DATA_DIR that cannot be a directory: one line naming DATA_DIR and why', async () => {
  const base = await mkdtemp(join(tmpdir(), 'pixvote-startup-'));
  try {
    await writeFile(join(base, 'file'), 'not a directory');
    const dataDir = join(base, 'file', 'data');
    const r = await start({ DATA_DIR: dataDir });
    assert.equal(r.code, 1);
    assert.equal(
      oneLine(r),
      `pixvote: failed to start: DATA_DIR=${dataDir}: cannot open the SQLite database ${dataDir}/app.db: ` +
        `${base}/file is a file, not a directory (ENOTDIR)`,
    );
    // Without JWT_SECRET the embedded secret is the first thing written there: the same variable is named.
    const r2 = await start({ DATA_DIR: dataDir, JWT_SECRET: '' });
    assert.equal(r2.code, 2, 'a configuration error');
    assert.match(
      oneLine(r2),
      new RegExp(
        `^pixvote: invalid configuration: DATA_DIR=${dataDir}: cannot create ${dataDir}/jwt-secret: ` +
          `${base}/file is a file, not a directory \\(ENOTDIR\\); make DATA_DIR writable .*, or set JWT_SECRET$`,
      ),
    );
  } finally {
    await rm(base, { recursive: true, force: true });
  }
});

// root may write anywhere: as root the start runs as nobody (setpriv), where it can.
const uid = process.getuid?.() ?? 0;
const asUser = uid === 0 ? 65534 : undefined;
const canDropRoot = uid !== 0 || existsSync('/usr/bin/setpriv') || existsSync('/bin/setpriv');

/** Whether another user may reach `path`: every folder above it lets others through (a mktemp -d clone does not). */
function othersReach(path: string): boolean {
  for (let dir = realpathSync(path); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return false;
    if (dir === dirname(dir)) return true;
  }
}
const otherUserSkip = !canDropRoot
  ? 'running as root without setpriv to run as another user'
  : asUser !== undefined && !othersReach(ROOT)
    ? `uid ${asUser} cannot reach this checkout (${ROOT}: a folder above it is private)`
    : false;

test(
  'SQLite with a DATA_DIR this user may not write: one line naming DATA_DIR and the permission',
  { skip: otherUserSkip },
  async () => {
    const base = await mkdtemp(join(tmpdir(), 'pixvote-startup-'));
    try {
      await chmod(base, 0o555);
      const r = await start({ DATA_DIR: base }, asUser === undefined ? {} : { asUser });
      assert.equal(r.code, 1);
      assert.equal(
        oneLine(r),
        `pixvote: failed to start: DATA_DIR=${base}: cannot open the SQLite database ${base}/app.db: ` +
          `${base} is not writable by this user (uid ${asUser ?? uid}, EACCES)`,
      );
    } finally {
      await chmod(base, 0o755);
      await rm(base, { recursive: true, force: true });
    }
  },
);
