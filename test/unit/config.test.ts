import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { PACKAGE_ROOT } from '../../src/data-dir.ts';
import { spawnSync } from 'node:child_process';
import { ConfigError, isListenHost, loadConfig, maskPassword } from '../../src/config.ts';
import { parseDuration, parseRate } from '../../src/domain/durations.ts';
import {
  CALIBRATED_BOXES_THRESHOLD,
  CALIBRATED_FIRST_LOOK_REVIEW_THRESHOLD,
  CALIBRATED_FIRST_LOOK_THRESHOLD,
  CALIBRATED_REVIEW_THRESHOLD,
} from '../../src/domain/person-policy.ts';

const made: string[] = [];
const dataDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'pixvote-cfg-'));
  made.push(dir);
  return dir;
};
after(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

test('WORKERS defaults to the cores each of the PROCESSES gateways has: they share the machine', () => {
  const cores = availableParallelism();
  assert.equal(loadConfig({ DATA_DIR: dataDir(), PROCESSES: '2' }).workers, Math.max(1, Math.floor(cores / 2)));
  assert.equal(loadConfig({ DATA_DIR: dataDir(), PROCESSES: String(cores * 4) }).workers, 1);
  assert.equal(loadConfig({ DATA_DIR: dataDir(), PROCESSES: '2', WORKERS: '3' }).workers, 3);
});

test('an embedded jwt-secret file cut short is refused, naming the file, never used as a weak secret', () => {
  const dir = dataDir();
  writeFileSync(join(dir, 'jwt-secret'), 'short\n');
  assert.throws(
    () => loadConfig({ DATA_DIR: dir }),
    (e: Error) => e instanceof ConfigError && /jwt-secret holds 5 characters, fewer than 32/.test(e.message),
  );
});

test('defaults match API.md', () => {
  const c = loadConfig({ DATA_DIR: dataDir() });
  assert.equal(c.port, 3000);
  assert.equal(c.host, '0.0.0.0');
  assert.equal(c.databaseUrl, null);
  assert.equal(c.redisUrl, null);
  assert.equal(c.jwtTtlSeconds, 86400);
  assert.equal(c.workers, Math.max(1, availableParallelism()));
  assert.equal(c.workerQueue, 4 * c.workers);
  assert.equal(c.humanPolicy, 'reject');
  assert.equal(c.nearDuplicateDistance, 4);
  assert.equal(c.fetchAllowPrivate, false);
  assert.equal(c.fetchTimeoutMs, 10000);
  assert.deepEqual(c.rateLimits, {
    auth: { points: 5, seconds: 900 },
    upload: { points: 20, seconds: 3600 },
    vote: { points: 20, seconds: 3600 },
    general: { points: 600, seconds: 900 },
    media: { points: 6000, seconds: 900 },
    report: { points: 20, seconds: 3600 },
  });
  assert.equal(c.reportHoldThreshold, 3);
  assert.equal(c.blocklistDistance, 8);
  assert.equal(c.humanInputSize, 320);
  assert.equal(c.humanSecondLook, 'boxes');
  assert.equal(c.humanThreshold, CALIBRATED_BOXES_THRESHOLD);
  assert.equal(c.humanRuntime, 'auto');
  assert.equal(c.trustProxy, false);
  assert.equal(c.logLevel, 'info');
  assert.ok(Object.isFrozen(c));
});

test('HUMAN_SECOND_LOOK=off has its own calibrated threshold default; HUMAN_THRESHOLD still wins', () => {
  const off = loadConfig({ DATA_DIR: dataDir(), HUMAN_SECOND_LOOK: 'off' });
  assert.equal(off.humanSecondLook, 'off');
  assert.equal(off.humanThreshold, CALIBRATED_FIRST_LOOK_THRESHOLD);
  assert.notEqual(CALIBRATED_BOXES_THRESHOLD, CALIBRATED_FIRST_LOOK_THRESHOLD);
  assert.equal(
    loadConfig({ DATA_DIR: dataDir(), HUMAN_SECOND_LOOK: 'off', HUMAN_THRESHOLD: '0.5' }).humanThreshold,
    0.5,
  );
  assert.equal(loadConfig({ DATA_DIR: dataDir(), HUMAN_THRESHOLD: '0.5' }).humanThreshold, 0.5);
  assert.equal(loadConfig({ DATA_DIR: dataDir(), HUMAN_RUNTIME: 'tfjs' }).humanRuntime, 'tfjs');
});

test('HUMAN_REVIEW_THRESHOLD: calibrated defaults per HUMAN_SECOND_LOOK, never above HUMAN_THRESHOLD', () => {
  const d = loadConfig({ DATA_DIR: dataDir() });
  assert.deepEqual(
    [d.humanReviewThreshold, d.humanThreshold],
    [CALIBRATED_REVIEW_THRESHOLD, CALIBRATED_BOXES_THRESHOLD],
  );
  assert.ok(CALIBRATED_REVIEW_THRESHOLD < CALIBRATED_BOXES_THRESHOLD, 'a gray zone by default');
  const off = loadConfig({ DATA_DIR: dataDir(), HUMAN_SECOND_LOOK: 'off' });
  assert.deepEqual(
    [off.humanReviewThreshold, off.humanThreshold],
    [CALIBRATED_FIRST_LOOK_REVIEW_THRESHOLD, CALIBRATED_FIRST_LOOK_THRESHOLD],
  );
  const set = loadConfig({ DATA_DIR: dataDir(), HUMAN_THRESHOLD: '0.6', HUMAN_REVIEW_THRESHOLD: '0.4' });
  assert.deepEqual([set.humanReviewThreshold, set.humanThreshold], [0.4, 0.6]);
  const equal = loadConfig({ DATA_DIR: dataDir(), HUMAN_THRESHOLD: '0.4', HUMAN_REVIEW_THRESHOLD: '0.4' });
  assert.equal(equal.humanReviewThreshold, 0.4, 'equal: the gray zone is off');
  // A HUMAN_THRESHOLD under the review default alone narrows the gray zone to nothing instead of failing.
  assert.equal(loadConfig({ DATA_DIR: dataDir(), HUMAN_THRESHOLD: '0.2' }).humanReviewThreshold, 0.2);
  assert.throws(
    () => loadConfig({ DATA_DIR: dataDir(), HUMAN_THRESHOLD: '0.4', HUMAN_REVIEW_THRESHOLD: '0.45' }),
    (e: Error) =>
      e instanceof ConfigError &&
      /HUMAN_REVIEW_THRESHOLD=0\.45: must not be above HUMAN_THRESHOLD \(0\.4\)/.test(e.message),
  );
  assert.throws(
    () => loadConfig({ DATA_DIR: dataDir(), HUMAN_REVIEW_THRESHOLD: '0.9', WORKERS: 'abc' }),
    (e: Error) =>
      e instanceof ConfigError &&
      e.message.includes(
        `HUMAN_REVIEW_THRESHOLD=0.9: must not be above HUMAN_THRESHOLD (${CALIBRATED_BOXES_THRESHOLD}, the default)`,
      ) &&
      /WORKERS=abc/.test(e.message),
  );
  assert.throws(
    () => loadConfig({ DATA_DIR: dataDir(), HUMAN_REVIEW_THRESHOLD: '1.5' }),
    (e: Error) =>
      e instanceof ConfigError && /HUMAN_REVIEW_THRESHOLD=1\.5: expected a number in \(0, 1\]/.test(e.message),
  );
});

test('every bad variable is listed in one error', () => {
  try {
    loadConfig({
      DATA_DIR: dataDir(),
      WORKERS: 'abc',
      PORT: '70000',
      HUMAN_POLICY: 'maybe',
      REPORT_HOLD_THRESHOLD: '-1',
      BLOCKLIST_DISTANCE: '40',
      BLOCKLIST_PDQ_DISTANCE: '200',
      RATE_LIMIT_VOTE: '20 per hour',
      RATE_LIMIT_MEDIA: '0/15m',
      NEAR_DUPLICATE_DISTANCE: '-2',
      FETCH_ALLOW_PRIVATE: 'yes',
      DATABASE_URL: 'mysql://x',
      HUMAN_INPUT_SIZE: '300',
      HUMAN_SECOND_LOOK: 'tiles',
      HUMAN_RUNTIME: 'gpu',
    });
    assert.fail('should throw');
  } catch (e) {
    assert.ok(e instanceof ConfigError);
    const m = e.message;
    assert.match(m, /WORKERS=abc: expected a positive integer/);
    for (const v of [
      'PORT',
      'HUMAN_POLICY',
      'RATE_LIMIT_VOTE',
      'RATE_LIMIT_MEDIA',
      'NEAR_DUPLICATE_DISTANCE',
      'FETCH_ALLOW_PRIVATE',
      'DATABASE_URL',
      'REPORT_HOLD_THRESHOLD',
      'BLOCKLIST_DISTANCE',
      'BLOCKLIST_PDQ_DISTANCE',
    ])
      assert.match(m, new RegExp(`${v}=`));
    assert.match(m, /HUMAN_POLICY=maybe: expected reject, flag, hold or off/);
    assert.match(m, /HUMAN_INPUT_SIZE=300: expected a multiple of 32 from 128 to 1024/);
    assert.match(m, /HUMAN_SECOND_LOOK=tiles: expected off or boxes/);
    assert.match(m, /HUMAN_RUNTIME=gpu: expected auto, onnx or tfjs/);
    assert.equal(e.problems.length, 14);
  }
  // Rules between variables join the same list.
  assert.throws(
    () =>
      loadConfig({
        DATA_DIR: dataDir(),
        NODE_ENV: 'production',
        WORKERS: 'abc',
        NEAR_DUPLICATE_INDEX: 'sqlite-vec',
        DATABASE_URL: 'postgres://x/y',
      }),
    (e: Error) =>
      e instanceof ConfigError &&
      e.problems.length === 3 &&
      /JWT_SECRET=: required/.test(e.message) &&
      /sqlite-vec: only available on SQLite/.test(e.message) &&
      /WORKERS=abc/.test(e.message),
  );
});

test('HOST is checked with the rest: an IP address (v4 or v6) or a host name, else listed as bad', () => {
  for (const host of [
    '0.0.0.0',
    '127.0.0.1',
    '::',
    '::1',
    'fe80::1%eth0',
    '::ffff:10.0.0.1',
    'localhost',
    'db-1.internal',
    'example.org.',
  ])
    assert.ok(isListenHost(host), host);
  for (const host of [
    'not a host',
    '[::1]',
    '127.1',
    '999.1.1.1',
    '1.2.3.4.5',
    '-lead.example',
    'under_score',
    'a..b',
    'x'.repeat(64),
    `${'a.'.repeat(127)}a`,
    'http://localhost',
  ])
    assert.ok(!isListenHost(host), host);
  assert.equal(loadConfig({ DATA_DIR: dataDir(), HOST: '::1' }).host, '::1');
  assert.equal(loadConfig({ DATA_DIR: dataDir(), HOST: 'localhost' }).host, 'localhost');
  assert.throws(
    () => loadConfig({ DATA_DIR: dataDir(), HOST: 'not a host', WORKERS: 'abc' }),
    (e: Error) =>
      e instanceof ConfigError &&
      e.problems.length === 2 &&
      e.problems.includes(
        'HOST=not a host: expected an IP address (e.g. 0.0.0.0, 127.0.0.1, ::) or a host name (e.g. localhost)',
      ) &&
      e.problems.includes('WORKERS=abc: expected a positive integer'),
  );
});

test('a bad DATABASE_URL or REDIS_URL is listed with its password masked', () => {
  assert.equal(maskPassword('postgres://app:s3cret@db:5432/pixvote'), 'postgres://app:***@db:5432/pixvote');
  assert.equal(maskPassword('postgres://db/pixvote'), 'postgres://db/pixvote');
  assert.throws(
    () => loadConfig({ DATA_DIR: dataDir(), DATABASE_URL: 'mysql://app:s3cret@db/x', REDIS_URL: 'http://:pw@r' }),
    (e: Error) =>
      e instanceof ConfigError &&
      !e.message.includes('s3cret') &&
      !e.message.includes(':pw@') &&
      /DATABASE_URL=mysql:\/\/app:\*\*\*@db\/x: expected a postgres or postgresql URL/.test(e.message) &&
      /REDIS_URL=http:\/\/:\*\*\*@r\/?: expected a redis or rediss URL/.test(e.message),
  );
});

test('JWT_SECRET is generated once into DATA_DIR and reused; required in production', () => {
  const dir = dataDir();
  const a = loadConfig({ DATA_DIR: dir });
  const b = loadConfig({ DATA_DIR: dir });
  assert.equal(a.jwtSecret, b.jwtSecret);
  assert.ok(a.jwtSecret.length >= 32);
  assert.equal(readFileSync(join(dir, 'jwt-secret'), 'utf8').trim(), a.jwtSecret);
  assert.equal(statSync(join(dir, 'jwt-secret')).mode & 0o777, 0o600);
  assert.throws(() => loadConfig({ DATA_DIR: dir, NODE_ENV: 'production' }), /JWT_SECRET/);
  assert.equal(
    loadConfig({ DATA_DIR: dir, NODE_ENV: 'production', JWT_SECRET: 's'.repeat(32) }).jwtSecret,
    's'.repeat(32),
  );
});

test('a relative DATA_DIR (the default ./data too) is taken from the checkout, not the current directory', () => {
  const dir = dataDir();
  const cwd = process.cwd();
  process.chdir(tmpdir());
  try {
    assert.equal(loadConfig({ DATA_DIR: relative(PACKAGE_ROOT, dir) }).dataDir, dir);
    assert.equal(loadConfig({ DATA_DIR: dir }).dataDir, dir);
    // (a JWT_SECRET, so that nothing is written into the checkout's data/)
    assert.equal(loadConfig({ JWT_SECRET: 's'.repeat(32) }).dataDir, join(PACKAGE_ROOT, 'data'));
  } finally {
    process.chdir(cwd);
  }
});

test('durations and rates parse the documented forms', () => {
  assert.equal(parseDuration('24h'), 86400);
  assert.equal(parseDuration('15m'), 900);
  assert.equal(parseDuration('90'), 90);
  assert.equal(parseDuration('1y'), null);
  assert.deepEqual(parseRate('5/15m'), { points: 5, seconds: 900 });
  assert.deepEqual(parseRate('20/1h'), { points: 20, seconds: 3600 });
  assert.deepEqual(parseRate('600/h'), { points: 600, seconds: 3600 });
  assert.equal(parseRate('0/1h'), null);
  assert.equal(parseRate('20 per hour'), null);
});

test('VOTE_RING_*: defaults, 0 turns the job off, bad values are listed by name', () => {
  const d = loadConfig({ DATA_DIR: dataDir() }).voteRings;
  assert.deepEqual(d, {
    intervalMs: 600_000,
    windowMs: 14 * 86_400_000,
    minAccounts: 3,
    minScore: 1.5,
    factsRetentionMs: 30 * 86_400_000,
    restoreMs: 30 * 86_400_000,
  });
  const set = loadConfig({
    DATA_DIR: dataDir(),
    VOTE_RING_INTERVAL: '0',
    VOTE_RING_WINDOW: '2d',
    VOTE_RING_MIN_ACCOUNTS: '5',
    VOTE_RING_MIN_SCORE: '3.5',
    VOTE_FACTS_RETENTION: '2d',
    VOTE_RING_RESTORE_DAYS: '7',
  }).voteRings;
  assert.deepEqual(set, {
    intervalMs: 0,
    windowMs: 2 * 86_400_000,
    minAccounts: 5,
    minScore: 3.5,
    factsRetentionMs: 2 * 86_400_000,
    restoreMs: 7 * 86_400_000,
  });
  assert.throws(
    () =>
      loadConfig({
        DATA_DIR: dataDir(),
        VOTE_RING_INTERVAL: 'often',
        VOTE_RING_WINDOW: '0',
        VOTE_RING_MIN_ACCOUNTS: '1',
        VOTE_RING_MIN_SCORE: '7',
        VOTE_RING_RESTORE_DAYS: '0',
      }),
    (e: unknown) =>
      e instanceof ConfigError &&
      [
        'VOTE_RING_INTERVAL',
        'VOTE_RING_WINDOW',
        'VOTE_RING_MIN_ACCOUNTS',
        'VOTE_RING_MIN_SCORE',
        'VOTE_RING_RESTORE_DAYS',
      ].every((v) => e.message.includes(v)),
  );
  // The evidence must outlive the detector's window (the default 30d against a 60d window, and a bad duration).
  assert.throws(
    () => loadConfig({ DATA_DIR: dataDir(), VOTE_RING_WINDOW: '60d' }),
    (e: unknown) =>
      e instanceof ConfigError && /VOTE_FACTS_RETENTION=30d: must be at least VOTE_RING_WINDOW \(60d\)/.test(e.message),
  );
  assert.throws(
    () => loadConfig({ DATA_DIR: dataDir(), VOTE_FACTS_RETENTION: 'forever' }),
    (e: unknown) => e instanceof ConfigError && e.message.includes('VOTE_FACTS_RETENTION=forever'),
  );
});

test('`WORKERS=abc npm start` exits non-zero naming WORKERS', () => {
  const r = spawnSync(process.execPath, ['--experimental-strip-types', 'src/main.ts'], {
    env: { ...process.env, WORKERS: 'abc', DATA_DIR: dataDir(), PORT: '0' },
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /WORKERS=abc: expected a positive integer/);
});

test('the start script refuses Node older than 22.17 in one line', () => {
  const node20 = '/usr/bin/node';
  const probe = spawnSync(node20, ['--version'], { encoding: 'utf8' });
  if (probe.status !== 0 || !/^v(1\d|20|21)\./.test(probe.stdout)) return; // no old Node on this machine to try
  const r = spawnSync(node20, ['scripts/require-node.js'], { encoding: 'utf8' });
  assert.equal(r.status, 1);
  assert.equal(r.stderr.trim().split('\n').length, 1);
  assert.match(r.stderr, /needs Node\.js >= 22\.17/);
});

test('MAX_CONNECTIONS_PER_IP: 64 by default, 0 turns the cap off, anything but a count is refused by name', () => {
  assert.equal(loadConfig({ DATA_DIR: dataDir() }).maxConnectionsPerIp, 64);
  assert.equal(loadConfig({ DATA_DIR: dataDir(), MAX_CONNECTIONS_PER_IP: '0' }).maxConnectionsPerIp, 0);
  assert.equal(loadConfig({ DATA_DIR: dataDir(), MAX_CONNECTIONS_PER_IP: '500' }).maxConnectionsPerIp, 500);
  for (const bad of ['-1', 'ten', '1.5'])
    assert.throws(
      () => loadConfig({ DATA_DIR: dataDir(), MAX_CONNECTIONS_PER_IP: bad }),
      (e: Error) =>
        e instanceof ConfigError &&
        e.problems.includes(`MAX_CONNECTIONS_PER_IP=${bad}: expected a non-negative integer (0 turns the cap off)`),
      bad,
    );
});

test('MODERATION_JOB_PAUSE_MS: 0 by default, milliseconds up to 5000, anything else names the variable', () => {
  assert.equal(loadConfig({ DATA_DIR: dataDir() }).moderationJobPauseMs, 0);
  assert.equal(loadConfig({ DATA_DIR: dataDir(), MODERATION_JOB_PAUSE_MS: '250' }).moderationJobPauseMs, 250);
  for (const bad of ['5001', '-1', '1s'])
    assert.throws(
      () => loadConfig({ DATA_DIR: dataDir(), MODERATION_JOB_PAUSE_MS: bad }),
      (e: unknown) => e instanceof ConfigError && e.message.includes('MODERATION_JOB_PAUSE_MS'),
      bad,
    );
});

for (const [name, key, what] of [
  ['SQLITE_READERS', 'sqliteReaders', 'reader threads; 0: reads on the event loop'],
  ['PG_READERS', 'pgReaders', 'reader connections; 0: reads on the main pool'],
] as const) {
  test(`${name}: 2 by default (${what}), 0 to 64, anything else names it`, () => {
    assert.equal(loadConfig({ DATA_DIR: dataDir() })[key], 2);
    assert.equal(loadConfig({ DATA_DIR: dataDir(), [name]: '0' })[key], 0);
    assert.equal(loadConfig({ DATA_DIR: dataDir(), [name]: '4' })[key], 4);
    for (const bad of ['65', '-1', 'two'])
      assert.throws(
        () => loadConfig({ DATA_DIR: dataDir(), [name]: bad }),
        (e: unknown) => e instanceof ConfigError && e.message.includes(name),
        bad,
      );
  });
}

test('C2PA_READER and C2PA_TRUST_ANCHORS: the anchors are read at start, a missing or empty file named', () => {
  const d = loadConfig({ DATA_DIR: dataDir() });
  assert.equal(d.c2paReader, 'auto');
  assert.equal(d.c2paTrustAnchors, null);
  assert.equal(loadConfig({ DATA_DIR: dataDir(), C2PA_READER: 'off' }).c2paReader, 'off');
  const anchors = new URL('../fixtures/c2pa/root.pub', import.meta.url).pathname;
  assert.equal(
    loadConfig({ DATA_DIR: dataDir(), C2PA_TRUST_ANCHORS: anchors }).c2paTrustAnchors,
    readFileSync(anchors, 'utf8'),
  );
  const dir = dataDir();
  const notPem = join(dir, 'anchors.txt');
  writeFileSync(notPem, 'no certificate here');
  assert.throws(
    () =>
      loadConfig({
        DATA_DIR: dir,
        C2PA_READER: 'on',
        C2PA_TRUST_ANCHORS: notPem,
      }),
    (e: Error) =>
      e instanceof ConfigError &&
      /C2PA_READER=on: expected auto or off/.test(e.message) &&
      e.message.includes(`expected a PEM file of certificates; ${notPem} holds none`),
  );
  assert.throws(
    () => loadConfig({ DATA_DIR: dir, C2PA_TRUST_ANCHORS: join(dir, 'missing.pem') }),
    (e: Error) => e instanceof ConfigError && /C2PA_TRUST_ANCHORS=.*cannot read .*missing\.pem/.test(e.message),
  );
});

test('PROCESS_RESTART_DELAY_MS, MODERATION_JOB_LEASE_MS: production defaults, shorter for tests, bounds named', () => {
  const defaults = loadConfig({ DATA_DIR: dataDir() });
  assert.equal(defaults.processRestartDelayMs, 1000);
  assert.equal(defaults.moderationJobLeaseMs, 10_000);
  const short = loadConfig({ DATA_DIR: dataDir(), PROCESS_RESTART_DELAY_MS: '50', MODERATION_JOB_LEASE_MS: '1000' });
  assert.deepEqual([short.processRestartDelayMs, short.moderationJobLeaseMs], [50, 1000]);
  for (const [name, value, why] of [
    ['PROCESS_RESTART_DELAY_MS', '0', /expected a positive integer/],
    ['PROCESS_RESTART_DELAY_MS', '20000', /expected an integer from 1 to 15000/],
    ['MODERATION_JOB_LEASE_MS', '99', /expected an integer from 100 to 600000/],
    ['MODERATION_JOB_LEASE_MS', '1s', /expected a positive integer/],
  ] as const)
    assert.throws(
      () => loadConfig({ DATA_DIR: dataDir(), [name]: value }),
      (e: Error) => e instanceof ConfigError && e.message.includes(`${name}=${value}`) && why.test(e.message),
      `${name}=${value}`,
    );
});
