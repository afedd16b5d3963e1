/**
 * The pages' build cache (src/gateway/web-assets.ts): a start reads what an earlier start with the same inputs
 * built, byte for byte, instead of running esbuild and Brotli again; a damaged entry or a directory that cannot be
 * written costs a build, never the start.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadWebAssets, type WebAssets } from '../../src/gateway/web-assets.ts';

const PAGES = ['feed', 'upload', 'new', 'signin', 'profile', 'moderation', 'modlog'];

function snapshot(a: WebAssets) {
  return [...a.byPath.values()]
    .filter((x) => x.path.endsWith('.js') || x.path.endsWith('.css') || x.path.endsWith('.svg'))
    .map((x) => ({ path: x.path, raw: x.raw.toString('base64'), etag: x.etag }))
    .sort((x, y) => x.path.localeCompare(y.path));
}

test('a second load reads the first one’s entry: the same assets, and what it reads is what it serves', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'pixvote-web-cache-'));
  const cacheDir = pathToFileURL(`${dir}/`);
  try {
    const built = await loadWebAssets(cacheDir);
    const entries = (await readdir(dir)).filter((f) => f.endsWith('.json'));
    assert.equal(entries.length, 1, `one entry, no temporary file left: ${await readdir(dir)}`);
    const again = await loadWebAssets(cacheDir);
    assert.deepEqual(snapshot(again), snapshot(built));
    for (const page of PAGES) {
      assert.deepEqual(again.bundle(page).br, built.bundle(page).br, page);
      assert.deepEqual(again.bundle(page).gzip, built.bundle(page).gzip, page);
    }
    assert.deepEqual(again.css.br, built.css.br);

    // The entry is what a load with these inputs serves: marked, the mark comes out (no build ran).
    const file = join(dir, entries[0]!);
    const entry = JSON.parse(await readFile(file, 'utf8')) as { bundles: Record<string, { raw: string }> };
    const feedPath = Object.keys(entry.bundles).find((p) => p.includes('feed'))!;
    entry.bundles[feedPath]!.raw = Buffer.from('/* from the cache */').toString('base64');
    await writeFile(file, JSON.stringify(entry));
    assert.equal((await loadWebAssets(cacheDir)).bundle('feed').raw.toString(), '/* from the cache */');

    // A damaged entry: built again, the same bytes as the first build, and the entry made whole again.
    await writeFile(file, '{"generated": {');
    const rebuilt = await loadWebAssets(cacheDir);
    assert.deepEqual(snapshot(rebuilt), snapshot(built));
    assert.doesNotThrow(() => JSON.parse(readFileSync(file, 'utf8')));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('the directory keeps the newest entries only: each edit of the pages makes one', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'pixvote-web-cache-'));
  try {
    // Ten entries of earlier inputs, oldest first.
    for (let i = 0; i < 10; i++) {
      const file = join(dir, `old${i}.json`);
      await writeFile(file, '{}');
      await utimes(file, 1000 + i, 1000 + i);
    }
    await loadWebAssets(pathToFileURL(`${dir}/`));
    const left = (await readdir(dir)).sort();
    assert.equal(left.length, 8, left.join(' '));
    assert.deepEqual(
      left.filter((f) => f.startsWith('old')),
      ['old3.json', 'old4.json', 'old5.json', 'old6.json', 'old7.json', 'old8.json', 'old9.json'],
      'the oldest went, the entry just made stays',
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a cache directory that cannot be made (a file in its place) costs a build, not the start', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'pixvote-web-cache-'));
  try {
    await writeFile(join(dir, 'blocked'), 'a file, not a directory');
    const assets = await loadWebAssets(pathToFileURL(join(dir, 'blocked', 'cache/')));
    assert.ok(assets.bundle('feed').raw.length > 1000);
    assert.deepEqual(await readdir(dir), ['blocked']);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
