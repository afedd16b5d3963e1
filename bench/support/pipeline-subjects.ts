/**
 * The ways of turning a set of images into the three WebP sizes that the benchmarks compare, each returning
 * images per second: the real MediaPool (worker threads), processImage called in this process, sharp called
 * directly (the yardstick), and the vips command-line tool (the other yardstick).
 */
import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { ensureModels } from '../../src/workers/detector/model-files.fetch.ts';
import { BOX_CLOSER_LOOK, createPersonDetector } from '../../src/workers/pipeline/detect.stage.ts';
import { WEBP_OPTIONS } from '../../src/workers/pipeline/encode.stage.ts';
import { processImage } from '../../src/workers/pipeline/process-image.ts';
import {
  VARIANT_MAX_SIDE,
  type DetectorRuntime,
  type DetectorSettings,
  type HumanPolicy,
  type PersonDetector,
} from '../../src/workers/pipeline/types.ts';
import { MediaPool } from '../../src/workers/pool.ts';
import { setupSharp, setupSharpProcess } from '../../src/workers/sharp-setup.ts';
import { ownBuffer, type BenchImage } from './images.ts';
import { clockTicks } from './server-process.ts';
import { mapLimit } from './stats.ts';

const run = promisify(execFile);
export const SIDES = Object.values(VARIANT_MAX_SIDE);

/** Whatever the policy, detection costs the same unless a person is found; 'flag' never rejects. */
export const POLICY: HumanPolicy = 'flag';

let modelDir: Promise<string> | undefined;
export const detectorModelDir = () =>
  (modelDir ??= ensureModels(undefined, { log: (m) => console.log(`  · ${m}`) }).then((m) => m.dir));

/** This process set up as the app's is: libvips locked to four loaders, one thread per image, no cache. */
export async function setupLikeTheApp(): Promise<void> {
  await setupSharpProcess();
  await setupSharp();
}

/**
 * The detector settings the app takes from HUMAN_INPUT_SIZE, HUMAN_SECOND_LOOK and HUMAN_RUNTIME, with its
 * defaults (the closer look on unless HUMAN_SECOND_LOOK=off), as for the app under comparison (src/config.ts
 * validates them there).
 */
export function appDetectorSettings(): DetectorSettings {
  const { HUMAN_INPUT_SIZE: size, HUMAN_SECOND_LOOK: look, HUMAN_RUNTIME: runtime } = process.env;
  return {
    ...(size ? { inputSize: Number(size) } : {}),
    closerLook: look !== 'off',
    ...(runtime ? { runtime: runtime as DetectorRuntime } : {}),
  };
}

/** An in-process detector as the app's workers load it (appDetectorSettings). */
export async function appDetector(): Promise<PersonDetector> {
  const { closerLook, ...rest } = appDetectorSettings();
  return createPersonDetector({
    modelDir: await detectorModelDir(),
    ...rest,
    ...(closerLook ? { closerLook: BOX_CLOSER_LOOK } : {}),
  });
}

/** A pool as the app starts one, its detector as appDetectorSettings says. */
export async function startPool(workers: number, policy: HumanPolicy): Promise<MediaPool> {
  const pool = await MediaPool.start({
    workers,
    maxQueue: 10_000,
    modelDir: await detectorModelDir(),
    preloadDetector: policy !== 'off',
    detector: appDetectorSettings(),
  });
  await pool.ping();
  return pool;
}

/** A fresh staging directory per measurement; removed before the next (outside the timing). */
export async function freshDir(dir: string): Promise<string> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  return dir;
}

const rate = (count: number, started: number) => (count * 1000) / (performance.now() - started);

export interface PoolRun {
  /** Images per second over the whole run. */
  rate: number;
  /** CPU time of this process (every thread: workers, libvips' and libuv's threads, the main thread). */
  cpuMs: number;
  wallMs: number;
  /**
   * CPU and wall time while the pool was saturated: from the submission until the (images − workers)-th
   * task settled, the moment the queue ran dry and a worker could first go idle.
   */
  saturated: { cpuMs: number; wallMs: number };
}

const cpuNow = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** All images submitted at once: the pool's queue keeps every worker busy, as under load. */
export async function poolRun(
  pool: MediaPool,
  images: readonly BenchImage[],
  stagingDir: string,
  policy: HumanPolicy,
  workers: number,
): Promise<PoolRun> {
  await freshDir(stagingDir);
  const buffers = images.map((i) => ownBuffer(i.bytes));
  const saturatedUntil = Math.max(1, images.length - workers);
  let settled = 0;
  let saturated = { cpuMs: Number.NaN, wallMs: Number.NaN };
  const cpu = cpuNow();
  const started = performance.now();
  await Promise.all(
    buffers.map(async (bytes, i) => {
      await pool.process({ bytes, stagingDir, baseName: `p${i}`, humanPolicy: policy, humanThreshold: 1 });
      if (++settled === saturatedUntil) saturated = { cpuMs: cpuNow() - cpu, wallMs: performance.now() - started };
    }),
  );
  const wallMs = performance.now() - started;
  return { rate: (images.length * 1000) / wallMs, cpuMs: cpuNow() - cpu, wallMs, saturated };
}

export async function poolRate(
  pool: MediaPool,
  images: readonly BenchImage[],
  stagingDir: string,
  policy: HumanPolicy,
): Promise<number> {
  return (await poolRun(pool, images, stagingDir, policy, 1)).rate;
}

/** processImage in this process, one image after another (what one worker thread does). */
export async function inProcessRate(
  images: readonly BenchImage[],
  detector: PersonDetector | null,
  stagingDir: string,
  policy: HumanPolicy,
): Promise<number> {
  await freshDir(stagingDir);
  const buffers = images.map((i) => ownBuffer(i.bytes));
  const started = performance.now();
  for (const [i, bytes] of buffers.entries()) {
    const r = await processImage(
      { bytes, stagingDir, baseName: `i${i}`, humanPolicy: policy, humanThreshold: 1 },
      { detector },
    );
    if (!r.ok) throw new Error(`processImage rejected ${images[i]!.name}: ${r.message}`);
  }
  return rate(images.length, started);
}

/**
 * The yardstick: the same three sizes by sharp straight from the file bytes (shrink-on-load each), same WebP
 * settings; every frame of an animation.
 */
export const directSharp = (bytes: Uint8Array, animated = false) =>
  Promise.all(
    SIDES.map((side) =>
      sharp(bytes, animated ? { pages: -1 } : {})
        .autoOrient()
        .resize(side, side, { fit: 'inside', withoutEnlargement: true })
        .webp(WEBP_OPTIONS)
        .toBuffer(),
    ),
  );

export async function sharpRate(images: readonly BenchImage[], concurrency: number): Promise<number> {
  const started = performance.now();
  await mapLimit(images, concurrency, (i) => directSharp(i.bytes, i.kind === 'gif'));
  return rate(images.length, started);
}

/** The vips CLI's version, or null when it is not installed (Debian: apt-get install -y libvips-tools). */
export async function vipsVersion(): Promise<string | null> {
  try {
    return (await run('vips', ['--version'])).stdout.trim();
  } catch {
    return null;
  }
}

/** Writes the images to files for the vips CLI. */
export async function writeImages(images: readonly BenchImage[], dir: string): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  return Promise.all(
    images.map(async (img, i) => {
      const file = path.join(dir, `in-${i}.${img.kind === 'jpeg' ? 'jpg' : img.kind}`);
      await writeFile(file, img.bytes);
      return file;
    }),
  );
}

/** `vips thumbnail` once per size (auto-rotates, shrinks on load, strips metadata), one libvips thread each. */
export async function vipsRate(files: readonly string[], concurrency: number, outDir: string): Promise<number> {
  return (await vipsRun(files, concurrency, outDir)).rate;
}

/**
 * The same, with the CPU time the vips processes used (user + system of the children a shell waited for, from
 * its /proc/self/stat, in clock ticks), so it can be set against the pool's images per busy core-second.
 */
export async function vipsRun(
  files: readonly string[],
  concurrency: number,
  outDir: string,
): Promise<{ rate: number; cpuMs: number }> {
  await freshDir(outDir);
  const opts = `[Q=${WEBP_OPTIONS.quality},effort=${WEBP_OPTIONS.effort},strip]`;
  const env = { ...process.env, VIPS_CONCURRENCY: '1' };
  let cpuMs = 0;
  const started = performance.now();
  await mapLimit(files, concurrency, async (file, i) => {
    const commands = SIDES.map((side, k) => `vips thumbnail "$1" "$${k + 2}" ${side} --size down`);
    const outs = SIDES.map((side) => `${path.join(outDir, `v${i}-${side}.webp`)}${opts}`);
    // Fields after the command name: cutime and cstime are the 14th and 15th.
    const script = `${commands.join(' && ')} && cat /proc/$$/stat`;
    const { stdout } = await run('sh', ['-c', script, 'sh', file, ...outs], { env });
    const fields = stdout.slice(stdout.lastIndexOf(')') + 2).split(' ');
    cpuMs += ((Number(fields[13]) + Number(fields[14])) * 1000) / clockTicks();
  });
  return { rate: (files.length * 1000) / (performance.now() - started), cpuMs };
}
