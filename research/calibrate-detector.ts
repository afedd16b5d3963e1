/**
 * Calibrates the person detector on the labelled test photos (test/support/photos.ts):
 * per-photo scores and ms per input size, a precision/recall table, a recommended HUMAN_THRESHOLD,
 * and the memory a worker thread adds by loading the detector.
 *
 *   node research/calibrate-detector.ts [--sizes 256,320,384,448,512] [--runs 3]
 *
 * Single thread, whatever backend loads (wasm SIMD here). Writes research/results/calibrate-detector.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { parseCommandLine } from '../bench/support/cli.ts';
import sharp from 'sharp';
import { ensureModels } from '../src/workers/detector/model-files.fetch.ts';
import { createPersonDetector, DEFAULT_INPUT_SIZE } from '../src/workers/pipeline/detect.stage.ts';
import type { RawImage } from '../src/workers/pipeline/types.ts';
import { getPhotos, type Photo } from '../test/support/photos.ts';

/** Recall matters most (a missed person is published); this much precision keeps false rejections rare. */
const MIN_PRECISION = 0.9;

/** Prepares a photo the way the pipeline does for a 'contain' spec: EXIF-rotated RGB fitted inside size×size. */
async function preparePhoto(file: string, size: number): Promise<RawImage> {
  const { data, info } = await sharp(file)
    .rotate()
    .removeAlpha()
    .toColourspace('srgb')
    .resize(size, size, { fit: 'inside' })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: 3 };
}

interface SizeResult {
  size: number;
  backend: string;
  msMedian: number;
  msP90: number;
  scores: Record<string, number>;
}

async function measureSize(photos: Photo[], modelDir: string, size: number, runs: number): Promise<SizeResult> {
  const detector = await createPersonDetector({ modelDir, inputSize: size });
  const perPhotoMs: number[] = [];
  const scores: Record<string, number> = {};
  await detector.detect(await preparePhoto(photos[0]!.path, size)); // warm-up: first run compiles kernels
  for (const photo of photos) {
    const rgb = await preparePhoto(photo.path, size);
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      const started = performance.now();
      scores[photo.name] = (await detector.detect(rgb)).score;
      times.push(performance.now() - started);
    }
    perPhotoMs.push(quantile(times, 0.5));
  }
  detector.dispose();
  return {
    size,
    backend: detector.backend,
    msMedian: quantile(perPhotoMs, 0.5),
    msP90: quantile(perPhotoMs, 0.9),
    scores,
  };
}

interface Row {
  threshold: number;
  tp: number;
  fp: number;
  fn: number;
  tn: number;
  precision: number;
  recall: number;
}

function precisionRecall(photos: Photo[], scores: Record<string, number>, threshold: number): Row {
  let tp = 0,
    fp = 0,
    fn = 0,
    tn = 0;
  for (const photo of photos) {
    const hit = scores[photo.name]! >= threshold;
    if (photo.people) {
      if (hit) tp++;
      else fn++;
    } else if (hit) fp++;
    else tn++;
  }
  return { threshold, tp, fp, fn, tn, precision: tp + fp === 0 ? 1 : tp / (tp + fp), recall: tp / (tp + fn) };
}

/**
 * The lowest threshold on a 0.05 grid (38 photos cannot support a finer one) that reaches the best
 * recall available with precision ≥ MIN_PRECISION; the lowest, because unseen people (small, partly
 * hidden) score lower than these.
 */
function recommend(photos: Photo[], scores: Record<string, number>): Row {
  const rows = grid(0.05, 0.6, 0.05)
    .map((t) => precisionRecall(photos, scores, t))
    .filter((r) => r.precision >= MIN_PRECISION);
  const bestRecall = Math.max(...rows.map((r) => r.recall));
  return rows.find((r) => r.recall === bestRecall)!;
}

async function measureWorkerRss(modelDir: string, size: number): Promise<{ emptyMb: number; detectorMb: number }> {
  const rssAfter = async (loadDetector: boolean) => {
    global.gc?.();
    const before = process.memoryUsage().rss;
    const worker = new Worker(new URL(import.meta.url), { workerData: { modelDir, size, loadDetector } });
    await new Promise((resolve, reject) => worker.once('message', resolve).once('error', reject));
    const after = process.memoryUsage().rss;
    await worker.terminate();
    return (after - before) / 2 ** 20;
  };
  return { emptyMb: await rssAfter(false), detectorMb: await rssAfter(true) };
}

async function workerMain(): Promise<void> {
  const { modelDir, size, loadDetector } = workerData as { modelDir: string; size: number; loadDetector: boolean };
  if (loadDetector) {
    const detector = await createPersonDetector({ modelDir, inputSize: size });
    const grey = new Uint8Array(size * size * 3).fill(128);
    for (let i = 0; i < 5; i++) await detector.detect({ data: grey, width: size, height: size, channels: 3 });
  }
  parentPort!.postMessage('ready');
}

async function main(): Promise<void> {
  const { values } = parseCommandLine('node research/calibrate-detector.ts', {
    sizes: { type: 'string', default: '256,320,384,448,512' },
    runs: { type: 'string', default: '3' },
  });
  const sizes = String(values.sizes).split(',').map(Number);
  const runs = Number(values.runs);
  const [{ dir: modelDir }, photos] = await Promise.all([ensureModels(), getPhotos()]);
  // Measured first, while this thread holds no detector and little garbage.
  const rss = await measureWorkerRss(modelDir, DEFAULT_INPUT_SIZE);
  const people = photos.filter((p) => p.people).length;
  console.log(
    `${photos.length} photos (${people} with people, ${photos.length - people} without), ` +
      `${runs} runs each, one thread\n`,
  );

  const results: SizeResult[] = [];
  for (const size of sizes) {
    results.push(await measureSize(photos, modelDir, size, runs));
    const last = results.at(-1)!;
    console.log(
      `size ${size}: ${last.msMedian.toFixed(0)} ms/image median, p90 ${last.msP90.toFixed(0)} ms (${last.backend})`,
    );
  }

  console.log(`\n${'photo'.padEnd(26)} people ${sizes.map((s) => String(s).padStart(6)).join('')}`);
  for (const photo of photos) {
    console.log(
      `${photo.name.padEnd(26)} ${(photo.people ? 'yes' : 'no').padEnd(6)} ` +
        results.map((r) => r.scores[photo.name]!.toFixed(3).padStart(6)).join(''),
    );
  }

  console.log('\nsize  recommended  recall  precision  missed people / flagged non-people');
  for (const r of results) {
    const best = recommend(photos, r.scores);
    const missed = photos.filter((p) => p.people && r.scores[p.name]! < best.threshold).map((p) => p.name);
    const flagged = photos.filter((p) => !p.people && r.scores[p.name]! >= best.threshold).map((p) => p.name);
    console.log(
      `${String(r.size).padEnd(5)} ${best.threshold.toFixed(2).padEnd(12)} ${best.recall.toFixed(3).padEnd(7)} ` +
        `${best.precision.toFixed(3).padEnd(10)} ${[...missed, '/', ...flagged].join(' ')}`,
    );
  }

  const chosen = results.find((r) => r.size === DEFAULT_INPUT_SIZE) ?? results[0]!;
  console.log(`\nprecision/recall at size ${chosen.size}\nthreshold  TP  FP  FN  TN  precision  recall`);
  for (const t of grid(0.1, 0.6, 0.05)) {
    const r = precisionRecall(photos, chosen.scores, t);
    console.log(
      `${t.toFixed(2).padEnd(10)} ${[r.tp, r.fp, r.fn, r.tn].map((n) => String(n).padStart(3)).join(' ')}  ` +
        `${r.precision.toFixed(3).padEnd(10)} ${r.recall.toFixed(3)}`,
    );
  }
  const best = recommend(photos, chosen.scores);
  console.log(
    `\nrecommended HUMAN_THRESHOLD at size ${chosen.size}: ${best.threshold.toFixed(2)} ` +
      `(recall ${best.recall.toFixed(3)}, precision ${best.precision.toFixed(3)})`,
  );

  console.log(
    `RSS added by a worker thread: ${rss.emptyMb.toFixed(0)} MB empty, ` +
      `${rss.detectorMb.toFixed(0)} MB with a ${DEFAULT_INPUT_SIZE} px detector loaded and warm`,
  );

  await mkdir(new URL('./results/', import.meta.url), { recursive: true });
  await writeFile(
    new URL('./results/calibrate-detector.json', import.meta.url),
    JSON.stringify({ results, recommended: best, rss }, null, 2),
  );
}

function grid(from: number, to: number, step: number): number[] {
  return Array.from(
    { length: Math.round((to - from) / step) + 1 },
    (_, i) => Math.round((from + i * step) * 100) / 100,
  );
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

if (isMainThread) await main();
else await workerMain();
