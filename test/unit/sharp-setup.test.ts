import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import type { Sharp } from 'sharp';
import { setupSharp, setupSharpProcess } from '../../src/workers/sharp-setup.ts';
import * as fx from '../support/fixtures.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SETUP_URL = new URL('../../src/workers/sharp-setup.ts', import.meta.url).href;

/** Whether sharp itself (no sniff in front) decodes these bytes or this file. */
async function decodes(input: Buffer | string): Promise<boolean> {
  try {
    await sharp(input).raw().toBuffer();
    return true;
  } catch {
    return false;
  }
}

/** Runs an ES module snippet in a fresh Node process (a fresh libvips) and returns what it printed. */
function runNode(code: string, env: NodeJS.ProcessEnv): string {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { cwd: ROOT, env, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

const envWithout = (name: string): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== name));

describe('sharp setup', () => {
  let dir: string;
  let vipsFile: string;
  let refused: Array<{ name: string; bytes: Buffer }>;
  let accepted: Array<{ name: string; bytes: Buffer }>;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'pixvote-sharp-setup-'));
    // libvips' own format: a loader flagged untrusted, read from a file.
    vipsFile = path.join(dir, 'image.v');
    await sharp(fx.photoPixels(16, 16).data, { raw: { width: 16, height: 16, channels: 3 } }).toFile(vipsFile);
    refused = await fx.refusedFormats();
    const rgb = fx.photoPixels(64, 48);
    accepted = [
      { name: 'JPEG', bytes: await fx.photoJpeg({ width: 64, height: 48 }) },
      { name: 'PNG', bytes: await fx.pngWithAlpha(64, 48) },
      { name: 'GIF', bytes: await fx.animatedGif({ width: 32, height: 24 }) },
      { name: 'WebP', bytes: await fx.animatedWebp({ width: 32, height: 24 }) },
      {
        name: 'UltraHDR JPEG',
        // withGainMap (sharp 0.35) is missing from sharp's type declarations.
        bytes: await (
          sharp(rgb.data, { raw: { width: 64, height: 48, channels: 3 } }) as Sharp & { withGainMap(): Sharp }
        )
          .withGainMap()
          .jpeg()
          .toBuffer(),
      },
    ];
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('without it, sharp would decode SVG, TIFF and AVIF: the sniff would be the only guard', async () => {
    for (const { name, bytes } of refused.filter((r) => ['SVG', 'TIFF', 'AVIF'].includes(r.name))) {
      assert.equal(await decodes(bytes), true, name);
    }
  });

  it(
    'with it, sharp refuses SVG, TIFF, AVIF, PDF, BMP and the libvips format ' + 'even when the sniff is bypassed',
    async () => {
      await setupSharp();
      for (const { name, bytes } of refused) assert.equal(await decodes(bytes), false, name);
      assert.equal(await decodes(vipsFile), false);
    },
  );

  it('keeps JPEG, PNG, GIF and WebP decoding, UltraHDR JPEGs included (through the plain JPEG loader)', async () => {
    await setupSharp();
    for (const { name, bytes } of accepted) assert.equal(await decodes(bytes), true, name);
    assert.equal((await sharp(accepted[4]!.bytes).metadata()).format, 'jpeg');
  });

  it('runs libvips with one thread per image and no operation cache', async () => {
    await setupSharp();
    assert.equal(sharp.concurrency(), 1);
    const cache = sharp.cache();
    assert.deepEqual([cache.memory.max, cache.files.max, cache.items.max], [0, 0, 0]);
  });

  it('the process-wide allow-list (pool side, before workers start) refuses and keeps the same formats', async () => {
    await setupSharpProcess();
    for (const { name, bytes } of refused) assert.equal(await decodes(bytes), false, name);
    for (const { name, bytes } of accepted) assert.equal(await decodes(bytes), true, name);
  });

  it('importing it on the main thread before sharp loads makes VIPS_BLOCK_UNTRUSTED block untrusted loaders', () => {
    const probe = (prelude: string) =>
      runNode(
        `${prelude}
         const { default: sharp } = await import('sharp');
         console.log(await sharp(${JSON.stringify(vipsFile)}).metadata().then(() => 'loaded', () => 'refused'));`,
        envWithout('VIPS_BLOCK_UNTRUSTED'),
      );
    assert.equal(probe(''), 'loaded');
    assert.equal(probe(`await import(${JSON.stringify(SETUP_URL)});`), 'refused');
  });

  it(
    'VIPS_BLOCK_UNTRUSTED set inside a worker thread does not reach libvips ' + '(a worker has its own process.env)',
    () => {
      const out = runNode(
        `import { Worker } from 'node:worker_threads';
       const worker = new Worker(\`
         process.env.VIPS_BLOCK_UNTRUSTED = '1';
         const { default: sharp } = await import('sharp');
         console.log(await sharp(${JSON.stringify(vipsFile)}).metadata().then(() => 'loaded', () => 'refused'));
       \`, { eval: true });
       await new Promise((resolve) => worker.on('exit', resolve));`,
        envWithout('VIPS_BLOCK_UNTRUSTED'),
      );
      assert.equal(out, 'loaded');
    },
  );
});
