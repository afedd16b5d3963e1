/**
 * Media pipeline: CPU ms per stage on 2 MP and 12 MP photo-like JPEGs (one image at a time, in this
 * process, person detection on), then images/s through a real MediaPool with 1 and 2 workers beside
 * processImage in this process, sharp making the three sizes directly, and the vips CLI making them —
 * all in the same interleaved rounds. Then animations: detection on every distinct frame of a GIF against
 * detection on a still, and the pool on GIFs against sharp making the animated sizes directly. Last,
 * resident memory per worker thread with the detector loaded.
 *
 *   npm run bench:pipeline [-- --sizes 2,12 --rounds 5 --no-rss]
 *   npm run bench:pipeline -- --webp-efforts      size and ms of the three variants at WebP effort 0..6
 *   npm run bench:pipeline -- --thumbhash         ThumbHash CPU ÷ encode CPU only (what bench:ci guards)
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { decode, type DecodedImage } from '../src/workers/pipeline/decode.stage.ts';
import { detectPeople } from '../src/workers/pipeline/detect-frames.ts';
import { resampleVariants, type StackedPixels } from '../src/workers/pipeline/encode.stage.ts';
import type { PersonDetector } from '../src/workers/pipeline/types.ts';
import type { MediaPool } from '../src/workers/pool.ts';
import { isMain, numbers, runAlone } from './support/cli.ts';
import { animations, jpegs, type BenchImage } from './support/images.ts';
import {
  POLICY,
  appDetector,
  detectorModelDir,
  freshDir,
  inProcessRate,
  poolRate,
  poolRun,
  setupLikeTheApp,
  sharpRate,
  startPool,
  vipsRun,
  vipsVersion,
  writeImages,
} from './support/pipeline-subjects.ts';
import { figure, type Recorder } from './support/report.ts';
import { TARGETS, asGoal } from './support/targets.ts';
import { NODE_TS } from './support/server-process.ts';
import { stageCosts, thumbhashCost, webpEfforts } from './support/stage-costs.ts';
import { cpuAndWall, interleave, ratios, summarize } from './support/stats.ts';
import { CpuYardstick } from './support/cpu-yardstick.ts';

export interface PipelineOptions {
  sizes: number[];
  rounds: number;
  rss: boolean;
}

/** Images per size: enough to keep two workers busy for about a second per measurement. */
const COUNT: Record<number, number> = { 2: 8, 12: 4 };

export async function pipelineBench(rec: Recorder, opts: PipelineOptions): Promise<void> {
  await setupLikeTheApp();
  const dir = await mkdtemp(path.join(tmpdir(), 'pixvote-bench-pipeline-'));
  const vips = await vipsVersion();
  if (!vips) rec.note('vips CLI yardstick skipped: vips not installed (Debian: apt-get install -y libvips-tools)');
  try {
    const detector = await appDetector();
    const sets = new Map<number, BenchImage[]>();
    for (const mp of opts.sizes) sets.set(mp, await jpegs(mp, COUNT[mp] ?? 4));
    for (const [mp, images] of sets)
      await stageCosts(rec, `${mp} MP`, images, detector, await freshDir(path.join(dir, 'stages')));
    await thumbhashCost(rec, { megapixels: 2, images: 4, rounds: opts.rounds });

    const pools = {
      one: await startPool(1, POLICY),
      two: await startPool(2, POLICY),
      twoOff: await startPool(2, 'off'),
    };
    const machine = new CpuYardstick();
    try {
      for (const [mp, images] of sets)
        await throughput(rec, mp, images, opts.rounds, { ...pools, machine, detector, vips, dir });
      await animationCosts(rec, opts.rounds, { ...pools, machine, detector, vips, dir });
    } finally {
      await Promise.all([...Object.values(pools).map((p) => p.close()), machine.close()]);
    }
    detector.dispose();
    // An animation too: its distinct frames go through the model in batches, which grow the wasm heap.
    if (opts.rss) await workerMemory(rec, [...[...sets.values()].flat(), ...(await animations(1)).distinct], dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

interface Subjects {
  one: MediaPool;
  two: MediaPool;
  twoOff: MediaPool;
  machine: CpuYardstick;
  detector: PersonDetector;
  vips: string | null;
  dir: string;
}

/** Images/s of every subject on the same images, in interleaved rounds, and the ratios between them. */
async function throughput(rec: Recorder, mp: number, images: BenchImage[], rounds: number, x: Subjects): Promise<void> {
  const label = `${mp} MP`;
  const files = await writeImages(images, path.join(x.dir, `files-${mp}`));
  const staging = path.join(x.dir, 'staging');
  // Per round, of each pool: cores busy while it was saturated (CPU time of this process ÷ wall time, up to the
  // moment the queue ran dry) and images per busy core-second over the whole run (images ÷ CPU seconds).
  const busy: Record<'pool1' | 'pool2', number[]> = { pool1: [], pool2: [] };
  const perCoreSecond: Record<'pool1' | 'pool2', number[]> = { pool1: [], pool2: [] };
  const vipsPerCoreSecond: number[] = [];
  const measured = (name: 'pool1' | 'pool2', pool: MediaPool, workers: number) => async () => {
    const r = await poolRun(pool, images, staging, POLICY, workers);
    busy[name].push(r.saturated.cpuMs / r.saturated.wallMs);
    perCoreSecond[name].push((images.length * 1000) / r.cpuMs);
    return r.rate;
  };
  const subjects: Record<string, () => Promise<number>> = {
    pool1: measured('pool1', x.one, 1),
    pool2: measured('pool2', x.two, 2),
    pool2off: () => poolRate(x.twoOff, images, staging, 'off'),
    inProcess: () => inProcessRate(images, x.detector, staging, POLICY),
    sharp: () => sharpRate(images, 2),
    machine: () => x.machine.scaling(),
    machineCores: () => x.machine.cores(),
    ...(x.vips
      ? {
          vips: async () => {
            const r = await vipsRun(files, 2, path.join(x.dir, 'vips'));
            vipsPerCoreSecond.push((images.length * 1000) / r.cpuMs);
            return r.rate;
          },
        }
      : {}),
  };
  await interleave(1, subjects); // warm-up
  for (const xs of [...Object.values(busy), ...Object.values(perCoreSecond), vipsPerCoreSecond]) xs.length = 0;
  const s = (await interleave(rounds, subjects)) as Record<
    'pool1' | 'pool2' | 'pool2off' | 'inProcess' | 'sharp' | 'machine' | 'machineCores',
    number[]
  > & { vips?: number[] };
  const scaling = ratios(s.pool2, s.pool1);
  const note = (xs: number[]) => `${summarize(xs).median.toFixed(2)} cores busy at saturation`;
  rec.add(
    figure('pipeline', `${label}: pool, 1 worker`, 'images/s', s.pool1, {
      note: `${images.length} distinct images per run; ${note(busy.pool1)}`,
    }),
    figure('pipeline', `${label}: pool, 2 workers`, 'images/s', s.pool2, { note: note(busy.pool2) }),
    figure('pipeline', `${label}: pool, 2 workers, detection off`, 'images/s', s.pool2off),
    figure('pipeline', `${label}: processImage in-process (1 at a time)`, 'images/s', s.inProcess),
    figure('pipeline', `${label}: sharp direct, 3 sizes (2 at a time)`, 'images/s', s.sharp),
  );
  if (s.vips)
    rec.add(figure('pipeline', `${label}: vips CLI, 3 sizes (2 at a time)`, 'images/s', s.vips, { note: x.vips! }));
  rec.add(
    figure('pipeline', `${label}: images per busy core-second, 1 worker`, 'images/s', perCoreSecond.pool1),
    figure('pipeline', `${label}: images per busy core-second, 2 workers`, 'images/s', perCoreSecond.pool2),
    figure(
      'pipeline',
      `${label}: images per busy core-second, 2 workers ÷ 1 worker`,
      '×',
      ratios(perCoreSecond.pool2, perCoreSecond.pool1),
      { target: TARGETS.coreSecondScaling, note: 'the CPU a second worker wastes (contention, idling threads)' },
    ),
    figure('pipeline', `${label}: cores busy at saturation, 1 worker`, 'cores', busy.pool1, {
      note: "libvips' and libuv's threads beside the worker's own",
    }),
    figure('pipeline', `${label}: cores busy at saturation, 2 workers`, 'cores', busy.pool2, {
      target: TARGETS.coresBusy,
      note: `of 2; two CPU-bound threads got ${summarize(s.machineCores).median.toFixed(2)} in the same rounds`,
    }),
    figure(
      'pipeline',
      `${label}: cores busy at saturation, 2 workers ÷ what 2 CPU-bound threads got`,
      '×',
      ratios(busy.pool2, s.machineCores),
      { target: TARGETS.coresBusyVsMachine, note: 'the same goal on a machine shared with other work' },
    ),
    figure('pipeline', `${label}: 2 workers ÷ 1 worker`, '×', scaling, {
      note: 'throughput; no target: one worker already keeps more than one core busy',
    }),
    figure('pipeline', `${label}: machine now, 2 threads ÷ 1 (CPU-bound JS)`, '×', s.machine, {
      note: '2.0 on an idle 2-core machine',
    }),
    figure('pipeline', `${label}: pool 1 worker ÷ in-process`, '×', ratios(s.pool1, s.inProcess), {
      target: mp === 2 ? TARGETS.poolOverhead : asGoal(TARGETS.poolOverhead),
    }),
    figure('pipeline', `${label}: pool (detection off) ÷ sharp direct`, '×', ratios(s.pool2off, s.sharp), {
      target: TARGETS.poolVsSharp,
    }),
    figure('pipeline', `${label}: whole pipeline ÷ sharp direct`, '×', ratios(s.pool2, s.sharp)),
  );
  if (s.vips)
    rec.add(
      figure('pipeline', `${label}: whole pipeline ÷ vips CLI`, '×', ratios(s.pool2, s.vips), {
        target: TARGETS.pipelineVsVips,
      }),
      figure('pipeline', `${label}: vips CLI, images per busy core-second`, 'images/s', vipsPerCoreSecond, {
        note: "the vips processes' user + system time",
      }),
      figure(
        'pipeline',
        `${label}: whole pipeline ÷ vips CLI, images per busy core-second`,
        '×',
        ratios(perCoreSecond.pool2, vipsPerCoreSecond),
        { note: 'CPU, not wall time: what a machine shared with other work cannot skew' },
      ),
    );
}

/** Counts what goes through the model: frames, and calls (a batch of frames is one call). */
function countingDetector(detector: PersonDetector) {
  const count = { frames: 0, calls: 0 };
  const counted: PersonDetector = {
    ...detector,
    detect: (rgb) => {
      count.frames++;
      count.calls++;
      return detector.detect(rgb);
    },
  };
  if (detector.detectMany) {
    counted.detectMany = (frames) => {
      count.frames += frames.length;
      count.calls += Math.ceil(frames.length / (detector.maxBatch ?? frames.length));
      return detector.detectMany!(frames);
    };
  }
  return { counted, count };
}

async function decodeAll(images: readonly BenchImage[]): Promise<DecodedImage[]> {
  return Promise.all(
    images.map(async (img) => {
      const decoded = await decode(new Uint8Array(img.bytes), { format: img.kind });
      if (!decoded.ok) throw new Error(`${img.name}: ${decoded.message}`);
      return decoded.image;
    }),
  );
}

/**
 * Animations, whose every distinct frame the detector checks. Detection CPU in this process (the images
 * decoded beforehand) per still 2 MP JPEG (the yardstick), per GIF of 12 different frames and per GIF of the
 * same 12 frames each held 4 times; then the pool (2 workers, detection on) on the 12-frame GIFs against
 * sharp making their three animated sizes directly. All in the same interleaved rounds.
 */
async function animationCosts(rec: Recorder, rounds: number, x: Subjects): Promise<void> {
  const stills = await decodeAll(await jpegs(2, 4));
  const gifs = await animations(2);
  const distinct = await decodeAll(gifs.distinct);
  const held = await decodeAll(gifs.held);
  const frames = distinct[0]!.frames;
  const { counted, count } = countingDetector(x.detector);
  // The pipeline's detector reads the encoder's thumb pixels (and the medium ones for its closer look), resampled
  // before it runs.
  const variants = new Map<DecodedImage, StackedPixels[]>();
  for (const image of [...stills, ...distinct, ...held]) {
    const { thumb, medium } = await resampleVariants(image);
    variants.set(image, [thumb, medium]);
  }
  const seen: Record<string, { frames: number; calls: number }> = {};
  /** CPU ms of detection per image of `set`, noting what went through the model per image. */
  const detectCpu = (name: string, set: readonly DecodedImage[]) => async () => {
    const before = { ...count };
    const { cpuMs } = await cpuAndWall(async () => {
      for (const image of set) await detectPeople(image, counted, { resampled: variants.get(image)! });
    });
    seen[name] = {
      frames: (count.frames - before.frames) / set.length,
      calls: (count.calls - before.calls) / set.length,
    };
    return cpuMs / set.length;
  };
  const staging = path.join(x.dir, 'staging-gif');
  const subjects = {
    still: detectCpu('still', stills),
    distinct: detectCpu('distinct', distinct),
    held: detectCpu('held', held),
    pool2: () => poolRate(x.two, gifs.distinct, staging, POLICY),
    pool2off: () => poolRate(x.twoOff, gifs.distinct, staging, 'off'),
    sharp: () => sharpRate(gifs.distinct, 2),
  };
  await interleave(1, subjects); // warm-up
  const s = await interleave(rounds, subjects);
  const model = (name: string) => `${seen[name]!.frames} frames through the model in ${seen[name]!.calls} calls`;
  const label = `GIF 480×360 × ${frames}`;
  rec.add(
    figure('pipeline', 'still 2 MP JPEG: detect CPU', 'ms', s.still, { note: model('still') }),
    figure('pipeline', `${label} distinct frames: detect CPU`, 'ms', s.distinct, { note: model('distinct') }),
    figure('pipeline', `GIF 480×360 × ${frames * 4} (${frames} frames held 4×): detect CPU`, 'ms', s.held, {
      note: model('held'),
    }),
    figure(
      'pipeline',
      `${label} distinct: detect CPU per frame ÷ still`,
      '×',
      s.distinct.map((ms, i) => ms / frames / s.still[i]!),
      { target: TARGETS.animatedFrameVsStill },
    ),
    figure(
      'pipeline',
      `${frames} frames held 4× ÷ ${frames} distinct frames: detect CPU`,
      '×',
      ratios(s.held, s.distinct),
      { target: TARGETS.heldFramesVsDistinct },
    ),
    figure('pipeline', `${label}: pool, 2 workers`, 'images/s', s.pool2, {
      note: `${gifs.distinct.length} distinct GIFs per run`,
    }),
    figure('pipeline', `${label}: sharp direct, 3 animated sizes (2 at a time)`, 'images/s', s.sharp),
    figure('pipeline', `${label}: pool (detection off) ÷ sharp direct`, '×', ratios(s.pool2off, s.sharp)),
    figure('pipeline', `${label}: whole pipeline ÷ sharp direct`, '×', ratios(s.pool2, s.sharp)),
  );
}

/**
 * bench:ci's pool-overhead check: a MediaPool of one worker against processImage in this process, one
 * image at a time, on the same 2 MP images with detection on. The pool costs a thread hop, a structured
 * clone of the result and queueing; 10 % would be a regression.
 */
export async function poolOverhead(rec: Recorder, opts: { images: number; rounds: number }): Promise<void> {
  await setupLikeTheApp();
  const dir = await mkdtemp(path.join(tmpdir(), 'pixvote-bench-overhead-'));
  const images = await jpegs(2, opts.images);
  const detector = await appDetector();
  const pool = await startPool(1, POLICY);
  try {
    const subjects = (list: BenchImage[]) => ({
      pool: () => poolRate(pool, list, dir, POLICY),
      inProcess: () => inProcessRate(list, detector, dir, POLICY),
    });
    // Warm-up: the worker's and this process's first images (modules, the detector's first run); a full round
    // of every image measured nothing more.
    await interleave(1, subjects(images.slice(0, 2)));
    const s = await interleave(opts.rounds, subjects(images));
    rec.add(
      figure('pipeline', '2 MP: pool, 1 worker', 'images/s', s.pool, {
        note: `${images.length} distinct images per run`,
      }),
      figure('pipeline', '2 MP: processImage in-process (1 at a time)', 'images/s', s.inProcess),
      figure('pipeline', '2 MP: pool 1 worker ÷ in-process', '×', ratios(s.pool, s.inProcess), {
        target: TARGETS.poolOverhead,
      }),
    );
  } finally {
    await pool.close();
    detector.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Resident memory per worker thread, detector loaded, after 12 MP and 2 MP images and a GIF went through it. */
async function workerMemory(rec: Recorder, images: BenchImage[], dir: string): Promise<void> {
  const files = await writeImages(images, path.join(dir, 'rss'));
  const probe = fileURLToPath(new URL('./support/worker-rss.probe.ts', import.meta.url));
  const modelDir = await detectorModelDir();
  for (const arenas of [undefined, '2']) {
    const env = { ...process.env, ...(arenas ? { MALLOC_ARENA_MAX: arenas } : {}) };
    const rss = async (workers: number) =>
      JSON.parse(
        (await promisify(execFile)(process.execPath, [...NODE_TS, probe, String(workers), modelDir, ...files], { env }))
          .stdout,
      ) as { rssMb: number; peakMb: number };
    const base = await rss(0);
    for (const workers of [1, 2]) {
      const m = await rss(workers);
      const how = arenas ? `, MALLOC_ARENA_MAX=${arenas}` : '';
      rec.add(
        figure(
          'pipeline',
          `RSS per worker (${workers} worker${workers > 1 ? 's' : ''}, detector loaded${how})`,
          'MB',
          (m.rssMb - base.rssMb) / workers,
          {
            target: TARGETS.rssPerWorkerMb,
            note:
              `process ${m.rssMb.toFixed(0)} MB (peak ${m.peakMb.toFixed(0)}) ` +
              `vs ${base.rssMb.toFixed(0)} MB without a pool`,
          },
        ),
      );
    }
  }
}

if (isMain(import.meta.url)) {
  await runAlone(
    'pipeline',
    {
      sizes: { type: 'string', default: '2,12' },
      rounds: { type: 'string', default: '5' },
      'no-rss': { type: 'boolean' },
      'webp-efforts': { type: 'boolean' },
      thumbhash: { type: 'boolean' },
    },
    (rec, v) =>
      v['webp-efforts']
        ? webpEfforts(rec)
        : v.thumbhash
          ? thumbhashCost(rec, { megapixels: 2, images: 4, rounds: Number(v.rounds) })
          : pipelineBench(rec, { sizes: numbers(String(v.sizes)), rounds: Number(v.rounds), rss: !v['no-rss'] }),
  );
}
