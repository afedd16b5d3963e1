/**
 * settleTickObjects (src/tick-objects.ts) relies on the shape of Node's tick objects: three symbol keys, read from a
 * tick through executionAsyncResource(). On a Node whose ticks differ it does nothing, silently; this test is what
 * says so when the Node that npm installs changes. What it buys is measured, not asserted (bench:feed-processes).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { executionAsyncResource } from 'node:async_hooks';
import { settleTickObjects } from '../../src/tick-objects.ts';

test('a tick object has the three symbol keys settleTickObjects builds its shapes with', async () => {
  const settled = settleTickObjects();
  const keys = await new Promise<symbol[]>((resolve) =>
    process.nextTick(() => resolve(Object.getOwnPropertySymbols(executionAsyncResource()))),
  );
  await settled;
  assert.equal(keys.length, 3, `tick keys: ${keys.map(String).join(', ')}`);
});
