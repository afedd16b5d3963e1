import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Worker } from 'node:cluster';
import { EventEmitter } from 'node:events';
import { clusterGenerations, FEED_IPC, servePrimaryGenerations, type Ipc } from '../../src/store/cache/generations.ts';
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
  assert.ok(
    sent.some((m) => m.type === FEED_IPC.applied),
    'the new generation was confirmed to the primary',
  );
  await cache.write('k', first.generation, page('stale'), 60);
  assert.equal((await cache.read('k')).hit, null, 'a page built before the write is not kept');
  cache.close();
});

test(
  'cluster feed cache: with the primary gone, a write still resolves without waiting out its timeout, ' +
    'and this process drops its pages',
  async (t) => {
    // Timers frozen: the fallback timeout cannot fire, so only the failed send can settle the write.
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { ipc } = channel('gone');
    const cache = clusterFeedCache(ipc);
    const first = await cache.read('k');
    await cache.write('k', first.generation, page('one'), 60);
    await cache.invalidate();
    assert.equal((await cache.read('k')).hit, null);
    cache.close();
  },
);

/** The primary (servePrimaryGenerations over a stand-in for node:cluster) and gateway processes joined to it. */
function primaryWith(n: number) {
  const cluster = new EventEmitter();
  const log = { warnings: 0, warn: () => void log.warnings++ };
  servePrimaryGenerations(cluster, log);
  const processes = Array.from({ length: n }, (_, pid) => {
    const proc = new EventEmitter();
    let connected = true;
    /** When false, this process's messages never reach the primary (a process that hangs). */
    let answering = true;
    const worker = {
      process: { pid },
      isConnected: () => connected,
      // Each process hears the primary a few turns later than the one before: IPC channels are not ordered
      // among themselves, so the write's process may hear back before another process has the new generation.
      send: (msg: object) => later(pid * 3, () => proc.emit('message', msg)),
    } as unknown as Worker;
    const ipc: Ipc = {
      send(msg, callback) {
        if (answering) setImmediate(() => cluster.emit('message', worker, msg));
        setImmediate(() => callback(null));
        return true;
      },
      on: (e, fn) => proc.on(e, fn),
      off: (e, fn) => proc.off(e, fn),
    };
    const exit = () => {
      connected = false;
      cluster.emit('exit', worker);
    };
    return { cache: clusterFeedCache(ipc), hang: () => void (answering = false), exit };
  });
  return { processes, log };
}

const later = (k: number, fn: () => void): void => void setImmediate(() => (k > 0 ? later(k - 1, fn) : fn()));

const turns = async (k = 10) => {
  for (let i = 0; i < k; i++) await new Promise((r) => setImmediate(r));
};

test(
  'cluster primary: ' + 'a write through one process answers only after every other process dropped its pages',
  async () => {
    const { processes } = primaryWith(2);
    const [a, b] = processes.map((p) => p.cache);
    await turns(); // both joined
    for (let i = 0; i < 5; i++) {
      const before = await b!.read('k');
      await b!.write('k', before.generation, page(`v${i}`), 60);
      assert.equal((await b!.read('k')).hit?.etag, `W/"v${i}"`);
      await a!.invalidate();
      const next = await b!.read('k');
      assert.equal(next.hit, null, `round ${i}: B served a page from before A's write`);
      assert.notEqual(next.generation, before.generation);
    }
    for (const p of processes) p.cache.close();
  },
);

test('cluster primary: a process that exits without confirming is not waited for', async (t) => {
  // Timers frozen: neither timeout can fire, so only the exit can settle the round.
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { processes, log } = primaryWith(2);
  const [a, b] = processes;
  await turns();
  b!.hang();
  let answered = false;
  const write = a!.cache.invalidate().then(() => void (answered = true));
  await turns();
  assert.equal(answered, false, 'the primary waits for B');
  b!.exit();
  await write;
  assert.equal(log.warnings, 0, 'settled by the exit, not by the timeout');
  for (const p of processes) p.cache.close();
});

test(
  'cluster primary: a vote through one process drops only the pages of its scopes in every process, ' +
    'and has the others recount its upload',
  async () => {
    const { processes } = primaryWith(2);
    const [a, b] = processes.map((p) => p.cache);
    await turns(); // both joined
    const voted = { scopes: ['rank:all', 'rank:tag:cats'], uploads: ['u1'] };
    const keep = async (key: string, scopes: string[], ids?: string[]) => {
      const r = await b!.read(key, scopes);
      await b!.write(key, r.generation, { ...page(key), ids }, 60, { scopes, seq: r.seq });
    };
    for (let i = 0; i < 3; i++) {
      await keep('top-cats', ['rank:tag:cats']);
      await keep('top-dogs', ['rank:tag:dogs']);
      await keep('new', [], ['u0', 'u1', 'u2']);
      await keep('new-other', [], ['u0', 'u2']);
      await a!.voted(voted);
      assert.equal((await b!.read('top-cats', ['rank:tag:cats'])).hit, null, `round ${i}: the voted scope is dropped`);
      assert.equal((await b!.read('top-dogs', ['rank:tag:dogs'])).hit?.etag, 'W/"top-dogs"', 'another scope is kept');
      const fresh = await b!.read('new', []);
      assert.equal(fresh.hit?.etag, 'W/"new"', 'a page no vote reorders is kept');
      assert.deepEqual(fresh.recount, ['u1'], 'with the voted upload to recount');
      assert.deepEqual((await b!.read('new-other', [])).recount, [], 'a page without it has nothing to recount');
    }
    // A global bump still drops everything.
    await a!.invalidate();
    assert.equal((await b!.read('top-dogs', ['rank:tag:dogs'])).hit, null);
    assert.equal((await b!.read('new', [])).hit, null);
    for (const p of processes) p.cache.close();
  },
);
