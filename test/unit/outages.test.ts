/**
 * The outage tracker (src/outages.ts): however many runs of however many loops fail while a dependency is down,
 * one line when it goes and one when it is back (with the outage's length), no stack for the expected failure;
 * any other failure is still logged, with its error, every time.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OutageTracker, type Dependency } from '../../src/outages.ts';
import { until as waitFor } from '../support/budget.ts';

interface Line {
  level: 'warn' | 'info';
  obj: Record<string, unknown>;
  msg: string;
}

function setUp() {
  const lines: Line[] = [];
  const log = {
    warn: (obj: object, msg: string) => void lines.push({ level: 'warn', obj: obj as Line['obj'], msg }),
    info: (obj: object, msg: string) => void lines.push({ level: 'info', obj: obj as Line['obj'], msg }),
  };
  let clock = 0;
  const up = { database: true, redis: true };
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  const closed = new Error('Connection is closed.');
  const dependency = (name: keyof typeof up, err: Error): Dependency => ({
    name,
    isDown: (e) => e === err,
    check: () => (up[name] ? Promise.resolve() : Promise.reject(err)),
  });
  const outages = new OutageTracker({
    log,
    dependencies: [dependency('redis', closed), dependency('database', refused)],
    probeMs: 5,
    now: () => clock,
  });
  return { lines, outages, up, refused, closed, advance: (ms: number) => void (clock += ms) };
}

const until = (check: () => boolean) => waitFor(check, 2);

test('a 7 s database outage met by two loops, 7 + 2 failed runs: one line down, one line back with 7.0 s', async () => {
  const { lines, outages, up, refused, advance } = setUp();
  const deliveries = outages.onError('webhook deliveries failed; retried');
  const jobs = outages.onError('a moderation job failed; retried');
  up.database = false;
  for (let s = 0; s < 7; s++) {
    deliveries(refused);
    if (s % 5 === 0) jobs(refused);
    advance(1000);
  }
  assert.deepEqual(outages.down(), ['database']);
  assert.equal(lines.length, 1, JSON.stringify(lines));
  const [down] = lines;
  assert.equal(down!.level, 'warn');
  assert.equal(down!.msg, 'database unavailable; background jobs wait for it');
  assert.equal(down!.obj.dependency, 'database');
  assert.equal(down!.obj.failed, 'webhook deliveries failed; retried');
  assert.match(String(down!.obj.reason), /ECONNREFUSED/);
  assert.equal('err' in down!.obj, false, 'no error object: no stack');
  up.database = true;
  await until(() => lines.length === 2);
  assert.deepEqual(lines[1], {
    level: 'info',
    obj: { dependency: 'database', outageSeconds: 7 },
    msg: 'database is back after 7.0 s',
  });
  assert.deepEqual(outages.down(), []);
  // The next outage is logged again.
  deliveries(refused);
  assert.equal(lines.length, 3);
  outages.close();
});

test('each dependency has its own outage; an unexpected error is logged with its error every time', async () => {
  const { lines, outages, up, refused, closed } = setUp();
  const loop = outages.onError('vote-ring detection failed; retried at the next interval');
  up.redis = false;
  up.database = false;
  loop(closed);
  loop(refused);
  loop(closed);
  assert.deepEqual(
    lines.map((l) => l.msg),
    ['redis unavailable; background jobs wait for it', 'database unavailable; background jobs wait for it'],
  );
  const bug = new TypeError("Cannot read properties of undefined (reading 'id')");
  loop(bug, { job: 'j1' });
  loop(bug);
  assert.equal(lines.length, 4);
  for (const l of lines.slice(2)) {
    assert.equal(l.msg, 'vote-ring detection failed; retried at the next interval');
    assert.equal(l.obj.err, bug, 'logged with the error (its stack)');
  }
  assert.equal(lines[2]!.obj.job, 'j1');
  up.redis = true;
  await until(() => lines.length === 5);
  assert.equal(lines[4]!.msg, 'redis is back after 0.0 s');
  assert.deepEqual(outages.down(), ['database']);
  outages.close();
  up.database = true;
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(lines.length, 5, 'closed: nothing more is probed or logged');
});
