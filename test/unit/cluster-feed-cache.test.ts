import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { clusterGenerations, FEED_IPC, type Ipc } from '../../src/store/cache/generations.ts';
import { memoryFeedCache } from '../../src/store/cache/memory-feed-cache.ts';

/** A gateway process's cache of PROCESSES=N without Redis, as src/main.ts builds it. */
const clusterFeedCache = (ipc: Ipc) => memoryFeedCache(clusterGenerations(ipc));

const page = (text: string) => ({ etag: `W/"${text}"`, body: Buffer.from(text) });

/** A gateway process's side of the IPC channel, with a primary that answers as src/cluster.ts does (or is gone). */
function channel(primary: 'answers' | 'gone') {
  const proc = new EventEmitter();
  const sent: Array<{ type: string; id?: number }> = [];
  let generation = 0;
  const ipc: Ipc = {
    send(msg, callback) {
      const m = msg as { type: string; id?: number };
      sent.push(m);
      if (primary === 'gone') {
        setImmediate(() => callback(new Error('channel closed')));
        return false;
      }
      setImmediate(() => callback(null));
      if (m.type === FEED_IPC.bump) {
        generation++;
        setImmediate(() => {
          proc.emit('message', { type: FEED_IPC.generation, generation, id: 7 });
          setImmediate(() => proc.emit('message', { type: FEED_IPC.bumped, id: m.id }));
        });
      }
      return true;
    },
    on: (e, fn) => proc.on(e, fn),
    off: (e, fn) => proc.off(e, fn),
  };
  return { ipc, sent };
}

test('cluster feed cache: joins, and a write waits for the new generation before it resolves', async () => {
  const { ipc, sent } = channel('answers');
  const cache = clusterFeedCache(ipc);
  assert.equal(sent[0]?.type, FEED_IPC.join);
  const first = await cache.read('k');
  await cache.write('k', first.generation, page('one'), 60);
  assert.equal((await cache.read('k')).hit?.etag, 'W/"one"');
  await cache.invalidate();
  const after = await cache.read('k');
  assert.equal(after.hit, null, 'the page of the old generation is gone');
  assert.notEqual(after.generation, first.generation);
  assert.ok(sent.some((m) => m.type === FEED_IPC.applied), 'the new generation was confirmed to the primary');
  await cache.write('k', first.generation, page('stale'), 60);
  assert.equal((await cache.read('k')).hit, null, 'a page built before the write is not kept');
  cache.close();
});

test('cluster feed cache: with the primary gone, a write still resolves without waiting out its timeout, and this process drops its pages', async (t) => {
  // Timers frozen: the fallback timeout cannot fire, so only the failed send can settle the write.
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { ipc } = channel('gone');
  const cache = clusterFeedCache(ipc);
  const first = await cache.read('k');
  await cache.write('k', first.generation, page('one'), 60);
  await cache.invalidate();
  assert.equal((await cache.read('k')).hit, null);
  cache.close();
});
