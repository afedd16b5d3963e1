/**
 * Where a pipeline's time goes: CPU and wall ms of each stage of processImage, one image at a time in this
 * process (nothing else running in it), and the WebP effort trade-off. Part of bench:pipeline.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { decode, derive } from '../../src/workers/pipeline/decode.stage.ts';
import { encodeVariants, firstFrame, resampleVariants, WEBP_OPTIONS } from '../../src/workers/pipeline/encode.stage.ts';
import { PHASH_INPUT_SIZE, phash } from '../../src/workers/pipeline/phash.stage.ts';
import { detectPeople } from '../../src/workers/pipeline/detect-frames.ts';
import { sniff } from '../../src/workers/pipeline/sniff.stage.ts';
import { THUMBHASH_MAX_SIDE, thumbhash, thumbhashOf } from '../../src/workers/pipeline/thumbhash.stage.ts';
import type { PersonDetector } from '../../src/workers/pipeline/types.ts';
import { jpegs, type BenchImage } from './images.ts';
import { setupLikeTheApp } from './pipeline-subjects.ts';
import { figure, type Recorder } from './report.ts';
import { TARGETS } from './targets.ts';
import { cpuAndWall, quantile, ratios } from './stats.ts';

/** The stages in processImage's order, each timed alone; the first image is a warm-up. */
export async function stageCosts(
  rec: Recorder,
  label: string,
  images: readonly BenchImage[],
  detector: PersonDetector,
  dir: string,
): Promise<void> {
  const cpu: Record<string, number[]> = {};
  const wall: Record<string, number[]> = {};
  const stage = async <T>(name: string, fn: () => Promise<T> | T): Promise<T> => {
    const { value, cpuMs, wallMs } = await cpuAndWall(fn);
    (cpu[name] ??= []).push(cpuMs);
    (wall[name] ??= []).push(wallMs);
    return value;
  };
  for (const [i, img] of [images[0]!, ...images].entries()) {
    const bytes = new Uint8Array(img.bytes);
    const sniffed = await stage('sniff', () => sniff(bytes));
    if (!sniffed.ok) throw new Error(sniffed.message);
    const decoded = await stage('decode', () => decode(bytes, { format: sniffed.format }));
    if (!decoded.ok) throw new Error(decoded.message);
    const image = decoded.image;
    await stage('phash', async () =>
      phash(await derive(image, { width: PHASH_INPUT_SIZE, height: PHASH_INPUT_SIZE, fit: 'fill', channels: 1 })),
    );
    const resampled = await stage('resample', () => resampleVariants(image));
    await stage('detect', () => detectPeople(image, detector, { resampled: [resampled.thumb, resampled.medium] }));
    await stage('encode', () => encodeVariants(image, { stagingDir: dir, baseName: `stage-${i}` }, resampled));
    await stage('thumbhash', () => thumbhashOf(firstFrame(resampled.thumb)));
    if (i === 0) for (const k of Object.keys(cpu)) cpu[k]!.length = wall[k]!.length = 0; // the first pass only warms up
  }
  const total = cpu.sniff!.map((_, i) => Object.values(cpu).reduce((s, xs) => s + xs[i]!, 0));
  for (const [name, xs] of Object.entries(cpu)) {
    rec.add(
      figure('pipeline', `${label}: ${name} CPU`, 'ms', xs, {
        note: `wall ${quantile(wall[name]!, 0.5).toFixed(1)} ms`,
      }),
    );
  }
  rec.add(figure('pipeline', `${label}: whole pipeline CPU`, 'ms', total));
  rec.add(
    figure('pipeline', `${label}: detection wall (${detector.backend})`, 'ms', wall.detect!, {
      target: TARGETS.detectionMs,
    }),
  );
}

/**
 * What the ThumbHash costs, against the encoding that produced its input (the yardstick, same images, same
 * rounds): CPU ms of `thumbhashOf` on the thumb variant's pixels (the mean of 20 warm runs per image, as in a
 * worker that has seen a few images), of the way it was made before (sharp resizing the whole working buffer
 * to ≤ 100 px, then the same hash), and of `encodeVariants`. bench:ci guards thumbhash ÷ encode.
 */
export async function thumbhashCost(rec: Recorder, opts: { megapixels: number; images: number; rounds: number }) {
  await setupLikeTheApp();
  const dir = await mkdtemp(path.join(tmpdir(), 'pixvote-bench-thumbhash-'));
  const label = `${opts.megapixels} MP`;
  const images = await Promise.all(
    (await jpegs(opts.megapixels, opts.images)).map(async (img) => {
      const decoded = await decode(new Uint8Array(img.bytes), { format: 'jpeg' });
      if (!decoded.ok) throw new Error(decoded.message);
      return decoded.image;
    }),
  );
  const REPEAT = 20;
  const ms = { thumbhash: [] as number[], before: [] as number[], encode: [] as number[] };
  try {
    for (let round = -1; round < opts.rounds; round++) {
      const sum = { thumbhash: 0, before: 0, encode: 0 };
      for (const [i, image] of images.entries()) {
        const encoded = await cpuAndWall(async () => {
          const resampled = await resampleVariants(image);
          await encodeVariants(image, { stagingDir: dir, baseName: `t${i}` }, resampled);
          return resampled;
        });
        sum.encode += encoded.cpuMs;
        const thumbPixels = firstFrame(encoded.value.thumb);
        sum.thumbhash +=
          (
            await cpuAndWall(() => {
              for (let k = 0; k < REPEAT; k++) thumbhashOf(thumbPixels);
            })
          ).cpuMs / REPEAT;
        sum.before += (
          await cpuAndWall(async () =>
            thumbhash(
              await derive(image, {
                width: THUMBHASH_MAX_SIDE,
                height: THUMBHASH_MAX_SIDE,
                fit: 'inside',
                channels: 4,
              }),
            ),
          )
        ).cpuMs;
      }
      if (round < 0) continue; // warm-up
      for (const k of ['thumbhash', 'before', 'encode'] as const) ms[k].push(sum[k] / images.length);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  rec.add(
    figure('pipeline', `${label}: thumbhash CPU, from the thumb variant`, 'ms', ms.thumbhash, {
      target: TARGETS.thumbhashMs,
      note: `mean of ${opts.images} images × ${REPEAT} runs per round`,
    }),
    figure('pipeline', `${label}: thumbhash CPU, the way before (resize of the working buffer)`, 'ms', ms.before),
    figure('pipeline', `${label}: encode CPU (the yardstick)`, 'ms', ms.encode),
    figure('pipeline', `${label}: thumbhash CPU ÷ encode CPU`, '×', ratios(ms.thumbhash, ms.encode), {
      target: TARGETS.thumbhashVsEncode,
    }),
  );
}

/** Size and time of the three variants at every WebP effort, on the decoded 12 MP image. */
export async function webpEfforts(rec: Recorder): Promise<void> {
  await setupLikeTheApp();
  const dir = await mkdtemp(path.join(tmpdir(), 'pixvote-bench-effort-'));
  const [img] = await jpegs(12, 1);
  const decoded = await decode(img!.bytes, { format: 'jpeg' });
  if (!decoded.ok) throw new Error(decoded.message);
  for (let effort = 0; effort <= 6; effort++) {
    const ms: number[] = [];
    let kib = 0;
    for (let i = 0; i < 4; i++) {
      const { value, cpuMs } = await cpuAndWall(() =>
        encodeVariants(decoded.image, { stagingDir: dir, baseName: `e${effort}`, webp: { ...WEBP_OPTIONS, effort } }),
      );
      if (i > 0) ms.push(cpuMs);
      kib = value.variants.reduce((s, v) => s + v.bytes, 0) / 1024;
    }
    rec.add(
      figure('webp-effort', `effort ${effort}: encode CPU (3 variants)`, 'ms', ms, { note: `${kib.toFixed(0)} KiB` }),
    );
  }
  await rm(dir, { recursive: true, force: true });
}
