import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readinessOf } from '../../src/gateway/routes/health.routes.ts';

const ok = { status: 'ok' as const };
const down = { status: 'down' as const, reason: 'not reachable' };
const check = (name: string, result: typeof ok | typeof down, critical = true) => ({ name, critical, result });

test('readiness: ok when every dependency answers', () => {
  const r = readinessOf(
    [check('database', ok), check('workers', ok), check('media', ok), check('redis', ok, false)],
    false,
  );
  assert.deepEqual(r, { status: 'ok', reasons: [] });
});

test('readiness: degraded (still 200) when only Redis, which has in-process fallbacks, is down', () => {
  const r = readinessOf(
    [check('database', ok), check('workers', ok), check('media', ok), check('redis', down, false)],
    false,
  );
  assert.deepEqual(r, { status: 'degraded', reasons: ['redis: not reachable'] });
});

test('readiness: down when the database, the workers or the media store is down, whatever Redis says', () => {
  for (const name of ['database', 'workers', 'media']) {
    const all = ['database', 'workers', 'media'].map((n) => check(n, n === name ? down : ok));
    assert.deepEqual(
      readinessOf([...all, check('redis', ok, false)], false),
      { status: 'down', reasons: [`${name}: not reachable`] },
      name,
    );
    assert.deepEqual(readinessOf([...all, check('redis', down, false)], false).status, 'down', `${name} and redis`);
  }
});

test('readiness: down while shutting down, even with every dependency up', () => {
  assert.deepEqual(readinessOf([check('database', ok), check('redis', ok, false)], true), {
    status: 'down',
    reasons: ['shutting down'],
  });
  assert.deepEqual(readinessOf([check('redis', down, false)], true).reasons, ['shutting down', 'redis: not reachable']);
});
