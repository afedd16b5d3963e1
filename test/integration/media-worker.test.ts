import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Piscina } from 'piscina';
import sharp from 'sharp';
import { MessageChannel } from 'node:worker_threads';
import type {
  HumanPolicy,
  ProcessedImage,
  ProcessImageResult,
  ProcessImageTask,
  StageRejection,
  StoppedAfterHash,
} from '../../src/workers/pipeline/types.ts';
import { CALIBRATED_FIRST_LOOK_THRESHOLD } from '../../src/domain/person-policy.ts';
import { ensureModels } from '../../src/workers/detector/model-files.fetch.ts';
import * as fx from '../support/fixtures.ts';
import { personGif } from '../support/photos.ts';

const WORKER = new URL('../../src/workers/media.worker.ts', import.meta.url).href;

describe('media worker in a Piscina pool', () => {
  let pool: Piscina;
  let stagingDir: string;
  let n = 0;

  const run = async (
    bytes: Uint8Array,
    humanPolicy: HumanPolicy = 'off',
  ): Promise<{ task: ProcessImageTask; result: ProcessedImage | StageRejection }> => {
    const task: ProcessImageTask = {
      bytes: fx.toArrayBuffer(bytes),
      stagingDir,
      baseName: `up-${++n}`,
      humanPolicy,
      humanThreshold: 0.5,
    };
    const result = (await pool.run(task, { name: 'processImage', transferList: [task.bytes] })) as
      ProcessedImage | StageRejection;
    return { task, result };
  };
  const ok = (r: ProcessedImage | StageRejection): ProcessedImage =>
    r.ok ? r : assert.fail(`${r.code}: ${r.message}`);
  const staged = async (task: ProcessImageTask) =>
    (await readdir(stagingDir)).filter((f) => f.startsWith(`${task.baseName}.`));

  before(async () => {
    stagingDir = await mkdtemp(path.join(tmpdir(), 'pixvote-worker-'));
    pool = new Piscina({
      filename: WORKER,
      minThreads: 2,
      maxThreads: 2,
      workerData: { modelDir: path.join(stagingDir, 'no-model') },
    });
  });
  after(async () => {
    await pool.destroy();
    await rm(stagingDir, { recursive: true, force: true });
  });

  it('moves the bytes to the thread and stages GPS-free, auto-oriented WebP variants', async () => {
    const jpeg = await fx.photoJpeg({ width: 2400, height: 1800, orientation: 6 });
    const { task, result } = await run(jpeg);
    assert.equal(task.bytes.byteLength, 0, 'transferred, not copied');
    const image = ok(result);
    assert.deepEqual([image.width, image.height, image.humanScore], [1800, 2400, null]);
    assert.deepEqual(
      image.variants.map((v) => [v.name, v.width, v.height]),
      [
        ['thumb', 240, 320],
        ['medium', 768, 1024],
        ['full', 1536, 2048],
      ],
    );
    for (const v of image.variants) {
      const bytes = await readFile(v.path);
      assert.deepEqual(fx.riffChunks(bytes), ['VP8 '], v.name);
      assert.ok(!bytes.includes('GPS'));
      const meta = await sharp(bytes).metadata();
      assert.deepEqual(
        [meta.width, meta.height, meta.exif, meta.xmp, meta.icc],
        [v.width, v.height, undefined, undefined, undefined],
      );
    }
    assert.equal(typeof (result as ProcessedImage & { startedAt?: number }).startedAt, 'number');
  });

  it(
    'asks, once the perceptual hash and the PDQ are known, whether to go on: told to stop, it encodes and stages ' +
      'nothing',
    async () => {
      const jpeg = await fx.photoJpeg({ width: 1600, height: 1200 });
      const ask = async (stop: boolean) => {
        const { port1, port2 } = new MessageChannel();
        const asked: string[] = [];
        const pdqs: Array<{ hash: string; quality: number } | undefined> = [];
        port1.on('message', (m: { phash: string; pdq?: { hash: string; quality: number } }) => {
          asked.push(m.phash);
          pdqs.push(m.pdq);
          port1.postMessage({ stop });
        });
        const task: ProcessImageTask = {
          bytes: fx.toArrayBuffer(jpeg),
          stagingDir,
          baseName: `up-${++n}`,
          humanPolicy: 'off',
          humanThreshold: 0.5,
          afterHash: port2,
        };
        try {
          const result = (await pool.run(task, {
            name: 'processImage',
            transferList: [task.bytes, port2 as never],
          })) as ProcessImageResult;
          return { task, result, asked, pdqs };
        } finally {
          port1.close();
        }
      };
      const stopped = await ask(true);
      assert.equal(stopped.asked.length, 1);
      const halt = stopped.result as StoppedAfterHash;
      assert.equal(halt.stopped, true);
      assert.equal(halt.phash, stopped.asked[0]);
      assert.deepEqual(
        Object.keys(halt.timings).sort(),
        ['decode', 'pdq', 'phash', 'provenance', 'sniff'],
        'no detection, no encoding',
      );
      assert.deepEqual(await staged(stopped.task), []);
      const went = await ask(false);
      assert.deepEqual(went.asked, stopped.asked, 'the same hash both times');
      const image = ok(went.result);
      assert.equal(image.phash, went.asked[0]);
      assert.deepEqual(went.pdqs[0], { hash: image.pdq, quality: image.pdqQuality }, 'the PDQ is asked about too');
      assert.equal((await staged(went.task)).length, 3);
    },
  );

  it('keeps an animated WebP animated in every variant', async () => {
    const image = ok((await run(await fx.animatedWebp({ width: 400, height: 300, frames: 4 }))).result);
    assert.deepEqual([image.animated, image.frames], [true, 4]);
    for (const v of image.variants) assert.equal((await sharp(v.path, { pages: -1 }).metadata()).pages, 4, v.name);
  });

  it('refuses every non-accepted format inside the thread, staging nothing', async () => {
    for (const { name, bytes } of await fx.refusedFormats()) {
      const { task, result } = await run(bytes);
      assert.equal(!result.ok && result.code, 'unsupported_format', name);
      assert.deepEqual(await staged(task), []);
    }
  });

  it('rejects truncated, corrupt and 201-frame images as invalid_image, staging nothing', async () => {
    for (const bytes of [await fx.truncatedJpeg(), await fx.corruptPng(), await fx.manyFramesGif(201)]) {
      const { task, result } = await run(bytes);
      assert.equal(!result.ok && result.code, 'invalid_image');
      assert.deepEqual(await staged(task), []);
    }
  });

  it('rejects the 100000×100000 PNG without the process allocating it', async () => {
    const rss = process.memoryUsage().rss;
    const { result } = await run(fx.hugeHeaderPng());
    assert.equal(!result.ok && result.message, 'image is 100000×100000 = 10000 MP; the limit is 50 MP');
    assert.ok(process.memoryUsage().rss - rss < 100e6, 'RSS grew by 100 MB or more');
  });

  it('answers the readiness ping without loading the detector', async () => {
    assert.deepEqual(await pool.run({}, { name: 'ping' }), { detectorBackend: null, detectorModel: null });
  });

  it('fails a task that needs detection with a clear error when the detector cannot load', async () => {
    const jpeg = await fx.photoJpeg({ width: 64, height: 48 });
    await assert.rejects(run(jpeg, 'reject'), /person detect(ion is needed|or could not be created)/);
    ok((await run(jpeg, 'off')).result);
  });
});

describe('media worker with the person detector', () => {
  let pool: Piscina;
  let stagingDir: string;
  let n = 0;
  const run = async (bytes: Uint8Array, humanPolicy: HumanPolicy) => {
    const task: ProcessImageTask = {
      bytes: fx.toArrayBuffer(bytes),
      stagingDir,
      baseName: `det-${++n}`,
      humanPolicy,
      humanThreshold: CALIBRATED_FIRST_LOOK_THRESHOLD,
    };
    const result = (await pool.run(task, { name: 'processImage', transferList: [task.bytes] })) as
      ProcessedImage | StageRejection;
    return { task, result };
  };

  before(async () => {
    stagingDir = await mkdtemp(path.join(tmpdir(), 'pixvote-worker-det-'));
    const { dir } = await ensureModels();
    pool = new Piscina({
      filename: WORKER,
      minThreads: 1,
      maxThreads: 1,
      workerData: { modelDir: dir, preloadDetector: true },
    });
  });
  after(async () => {
    await pool.destroy();
    await rm(stagingDir, { recursive: true, force: true });
  });

  it('finds a person on frame 2 of 5 of a GIF, running the model on the 2 distinct frames only', async () => {
    const { result } = await run(await personGif({ frames: 5, personAt: 1 }), 'flag');
    const image = result.ok ? result : assert.fail(`${result.code}: ${result.message}`);
    assert.ok(image.humanScore! >= CALIBRATED_FIRST_LOOK_THRESHOLD, `score ${image.humanScore}`);
    // One frame per model call on onnxruntime (ONNX_MAX_BATCH); TF.js batches them (test/unit/detect.stage.test.ts).
    assert.deepEqual(image.detection, { frames: 5, distinctFrames: 2, inferences: 2, modelCalls: 2, bestFrame: 1 });
  });

  it('refuses that GIF under reject as human_detected, staging nothing', async () => {
    const { task, result } = await run(await personGif({ frames: 5, personAt: 1 }), 'reject');
    assert.equal(!result.ok && result.code, 'human_detected');
    assert.equal(!result.ok && result.detection?.bestFrame, 1);
    assert.deepEqual(
      (await readdir(stagingDir)).filter((f) => f.startsWith(`${task.baseName}.`)),
      [],
    );
  });
});
