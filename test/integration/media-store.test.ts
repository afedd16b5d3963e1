import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, readdir, rm, utimes, writeFile, access } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileMediaStore, VARIANTS } from '../../src/store/media-store.ts';

async function stagedBy(store: FileMediaStore, instance: string, key: string, heartbeatAgeMs = 0) {
  const dir = join(store.stagingRoot, instance, key);
  await mkdir(dir, { recursive: true });
  for (const v of VARIANTS) await writeFile(join(dir, `${key}.${v}.webp`), 'x');
  const alive = join(store.stagingRoot, instance, '.alive');
  await writeFile(alive, '');
  const t = new Date(Date.now() - heartbeatAgeMs);
  await utimes(alive, t, t);
}

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

test(
  'sweep: staged media of a committed row moves in (any instance); a dead instance’s leftovers go; ' +
    'a live one’s stay',
  async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'pixvote-media-'));
    try {
      const store = new FileMediaStore(dataDir);
      await store.init();
      const deadHere = `${hostname()}~999999~1`; // a pid that does not exist on this host
      const liveHere = `${hostname()}~${process.pid}~2`; // this very process: alive
      const otherHostStale = `elsewhere~123~3`;
      const keys = {
        committedDead: '00000000-0000-4000-8000-000000000001',
        orphanDead: '00000000-0000-4000-8000-000000000002',
        committedLive: '00000000-0000-4000-8000-000000000003',
        orphanLive: '00000000-0000-4000-8000-000000000004',
        orphanStale: '00000000-0000-4000-8000-000000000005',
      };
      await stagedBy(store, deadHere, keys.committedDead);
      await stagedBy(store, deadHere, keys.orphanDead);
      await stagedBy(store, liveHere, keys.committedLive);
      await stagedBy(store, liveHere, keys.orphanLive);
      await stagedBy(store, otherHostStale, keys.orphanStale, 5 * 60_000);
      await mkdir(join(store.tmpRoot, deadHere, 'req'), { recursive: true });
      await writeFile(join(store.tmpRoot, deadHere, 'req', 'upload'), 'x');

      const committed = new Set([keys.committedDead, keys.committedLive]);
      const r = await store.sweep({ isReferenced: async (k) => committed.has(k) });
      assert.deepEqual(r, { committed: 2, discarded: 2 });
      for (const k of committed)
        for (const v of VARIANTS) assert.ok(await exists(store.variantPath(k, v)), `${k} ${v} moved in`);
      assert.ok(!(await exists(join(store.stagingRoot, deadHere))), 'the dead instance directory is gone');
      assert.ok(!(await exists(join(store.stagingRoot, otherHostStale))), 'an instance with a stale heartbeat is dead');
      assert.ok(
        await exists(join(store.stagingRoot, liveHere, keys.orphanLive)),
        'a live instance keeps its work in progress',
      );
      assert.ok(!(await exists(join(store.tmpRoot, deadHere))), 'temp files of the dead instance are gone');
      assert.deepEqual((await readdir(join(store.stagingRoot, store.instance))).sort(), ['.alive']);

      // A commit interrupted half-way (some files already moved) completes.
      const key = '00000000-0000-4000-8000-000000000006';
      const dir = await store.stage(key);
      for (const v of VARIANTS) await writeFile(join(dir, `${key}.${v}.webp`), 'y');
      await mkdir(join(store.root, key.slice(0, 2)), { recursive: true });
      await writeFile(store.variantPath(key, 'thumb'), 'y');
      await rm(join(dir, `${key}.thumb.webp`));
      await store.commit(key);
      for (const v of VARIANTS) assert.ok(await exists(store.variantPath(key, v)));

      // Files neither staged nor stored: the commit says so instead of pretending.
      const lost = '00000000-0000-4000-8000-000000000007';
      await store.stage(lost);
      await assert.rejects(store.commit(lost), /neither staged nor stored/);

      // This process's own staged files whose row exists are moved in by its sweep; its other work stays.
      const own = '00000000-0000-4000-8000-000000000008';
      const inProgress = '00000000-0000-4000-8000-000000000009';
      for (const k of [own, inProgress]) {
        const d = await store.stage(k);
        for (const v of VARIANTS) await writeFile(join(d, `${k}.${v}.webp`), 'z');
      }
      assert.deepEqual(await store.sweep({ isReferenced: async (k) => k === own }), { committed: 1, discarded: 0 });
      for (const v of VARIANTS) assert.ok(await exists(store.variantPath(own, v)));
      assert.ok(await exists(store.stagingDir(inProgress)));

      // Closing with something still staged leaves it for the next sweep.
      await store.close();
      assert.ok(await exists(store.stagingDir(inProgress)));
      const next = new FileMediaStore(dataDir);
      await next.init();
      // (The closed instance is this very process: its pid is alive, so only a committed row would move it.)
      assert.deepEqual(await next.sweep({ isReferenced: async (k) => k === inProgress }), {
        committed: 1,
        discarded: 0,
      });
      await next.close();
      assert.deepEqual(
        (await readdir(store.stagingRoot)).filter((d) => d === next.instance),
        [],
      );
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  },
);
