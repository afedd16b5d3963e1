import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { ensureModels } from '../../src/workers/detector/model-files.fetch.ts';
import { loadCenterNet } from '../../src/workers/detector/centernet.model.ts';
import {
  boxAt,
  heatmapPeaks,
  intersectionOverUnion,
  nonMaxSuppression,
  toImageBox,
} from '../../src/workers/detector/person-boxes.decode.ts';
import { loadTfRuntime } from '../../src/workers/detector/tfjs-backend.loader.ts';
import {
  BOX_CLOSER_LOOK,
  closeUpRegion,
  createPersonDetector,
  DEFAULT_INPUT_SIZE,
  detectStage,
  fitFrame,
  MAX_BATCH,
  ONNX_MAX_BATCH,
} from '../../src/workers/pipeline/detect.stage.ts';
import { decode, type DecodedImage } from '../../src/workers/pipeline/decode.stage.ts';
import {
  detectPeople,
  distinctFrames,
  frameSignatures,
  SAME_FRAME_TOLERANCE,
} from '../../src/workers/pipeline/detect-frames.ts';
import { CALIBRATED_BOXES_THRESHOLD, CALIBRATED_FIRST_LOOK_THRESHOLD } from '../../src/domain/person-policy.ts';
import type { PersonDetection, PersonDetector, RawImage } from '../../src/workers/pipeline/types.ts';
import { paddedBatch } from '../support/model-batch.ts';
import { getLabelledPhotos, getPhotos, personGif, type Photo } from '../support/photos.ts';

const box = (x1: number, y1: number, x2: number, y2: number, score = 1) => ({ x1, y1, x2, y2, score });

describe('person box decoding', () => {
  test('heatmap peaks are 3×3 local maxima at or above minScore, best first, capped', () => {
    // 5×5: a peak of 0.9 at (1,1) with a 0.8 shoulder, a lone 0.5 at (4,3), noise of 0.1 elsewhere.
    const heat = new Float32Array(25).fill(0.1);
    heat[1 * 5 + 1] = 0.9;
    heat[1 * 5 + 2] = 0.8;
    heat[3 * 5 + 4] = 0.5;
    assert.deepEqual(
      heatmapPeaks(heat, 5, 0.3, 10).map((p) => [p.cell, Number(p.score.toFixed(2))]),
      [
        [6, 0.9],
        [19, 0.5],
      ],
    );
    assert.deepEqual(
      heatmapPeaks(heat, 5, 0.3, 1).map((p) => p.cell),
      [6],
    );
    assert.deepEqual(heatmapPeaks(heat, 5, 0.95, 10), []);
  });

  test('a box spans the edge distances around stride × its cell', () => {
    const edges = new Float32Array(3 * 3 * 4);
    edges.set([10, 20, 30, 40], (2 * 3 + 1) * 4); // cell (x 1, y 2)
    assert.deepEqual(boxAt(7, 0.7, edges, 3, 4), box(4 - 10, 8 - 20, 4 + 30, 8 + 40, 0.7));
  });

  test('intersection over union', () => {
    assert.equal(intersectionOverUnion(box(0, 0, 10, 10), box(0, 0, 10, 10)), 1);
    assert.equal(intersectionOverUnion(box(0, 0, 10, 10), box(20, 20, 30, 30)), 0);
    assert.equal(intersectionOverUnion(box(0, 0, 10, 10), box(5, 0, 15, 10)), 50 / 150);
    assert.equal(intersectionOverUnion(box(0, 0, 0, 0), box(0, 0, 0, 0)), 0);
  });

  test('non-max suppression keeps the best of overlapping boxes and every separate one', () => {
    const boxes = [box(1, 0, 11, 10, 0.6), box(0, 0, 10, 10, 0.9), box(50, 50, 60, 60, 0.4), box(5, 0, 15, 10, 0.8)];
    assert.deepEqual(
      nonMaxSuppression(boxes, 0.5).map((b) => b.score),
      [0.9, 0.8, 0.4],
    );
    assert.deepEqual(
      nonMaxSuppression(boxes, 0.2).map((b) => b.score),
      [0.9, 0.4],
    );
    assert.deepEqual(
      nonMaxSuppression(boxes, 0.5, 2).map((b) => b.score),
      [0.9, 0.8],
    );
    assert.deepEqual(nonMaxSuppression([], 0.5), []);
  });

  test('boxes map from the letterboxed input back to the image, clipped to it', () => {
    // A 200×100 image fitted into 400×400: scale 2, 100 px of padding above.
    const frame = { scale: 2, padX: 0, padY: 100, width: 200, height: 100 };
    assert.deepEqual(toImageBox(box(40, 120, 100, 300, 0.5), frame), box(20, 10, 50, 100, 0.5));
    assert.deepEqual(toImageBox(box(-10, 0, 500, 150, 0.5), frame), box(0, 0, 200, 25, 0.5));
  });
});

describe('first look', () => {
  test('the first look keeps the aspect ratio and pads only up to multiples of 32', () => {
    const f = fitFrame({ width: 1920, height: 1280 }, 256);
    assert.deepEqual([f.scaledWidth, f.scaledHeight, f.inputWidth, f.inputHeight], [256, 171, 256, 192]);
    assert.deepEqual([f.padX, f.padY], [0, 10]);
    // A 1-px strip still makes a model-sized input.
    const strip = fitFrame({ width: 1, height: 1000 }, 256);
    assert.deepEqual([strip.inputWidth, strip.inputHeight], [64, 256]);
  });
});

describe('closer look at the boxes of an unsure first look', () => {
  const look = { size: 320, context: 1.5, minShare: 0.125 };
  // A 320×213 first look of a 1024×683 source (f = 3.2).
  const region = (x1: number, y1: number, x2: number, y2: number) =>
    closeUpRegion({ x1, y1, x2, y2 }, { width: 320, height: 213 }, { width: 1024, height: 683 }, look);

  test('a box becomes a square crop of the larger source, context × its longer side, kept inside the image', () => {
    // A 20×40 box at (100, 50).
    const r = region(100, 50, 120, 90);
    assert.equal(r.side, Math.round(40 * 3.2 * 1.5));
    assert.deepEqual([r.left, r.top], [Math.round(110 * 3.2 - r.side / 2), Math.round(70 * 3.2 - r.side / 2)]);
    // A tiny box gets at least minShare of the long side; one at the corner is shifted inside.
    const tiny = region(0, 0, 4, 4);
    assert.deepEqual([tiny.left, tiny.top, tiny.side], [0, 0, 128]);
    // A box larger than the image's short side gets the short side, centred on the box.
    const big = region(0, 0, 320, 213);
    assert.deepEqual([big.left, big.top, big.side], [Math.round(512 - 683 / 2), 0, 683]);
  });

  test("a box the model finds in the crop maps back to the first look's pixels", () => {
    const r = region(100, 50, 120, 90);
    // The crop's whole input maps onto the crop's region in first-look pixels.
    const whole = toImageBox(box(0, 0, look.size, look.size, 0.5), r.frame);
    const f = 1024 / 320;
    for (const [got, want] of [
      [whole.x1, r.left / f],
      [whole.y1, r.top / f],
      [whole.x2, (r.left + r.side) / f],
      [whole.y2, (r.top + r.side) / f],
    ])
      assert.ok(Math.abs(got! - want!) < 1e-6, `${got} ≈ ${want}`);
  });

  describe('on real photos', () => {
    let plain: PersonDetector;
    let closer: PersonDetector;
    const photos = new Map<string, { thumb: RawImage; source: RawImage }>();
    const pixels = async (file: string, size: number): Promise<RawImage> => {
      const { data, info } = await sharp(file)
        .rotate()
        .removeAlpha()
        .resize(size, size, { fit: 'inside', withoutEnlargement: size > 320 })
        .raw()
        .toBuffer({ resolveWithObject: true });
      return { data, width: info.width, height: info.height, channels: 3 };
    };
    /** Runs `detector` on a photo, counting how often it reads the larger source. */
    const run = async (detector: PersonDetector, name: string) => {
      const { thumb, source } = photos.get(name)!;
      let reads = 0;
      const found = await detector.detect(thumb, async () => (reads++, source));
      return { ...found, reads };
    };

    before(async () => {
      const { dir } = await ensureModels();
      plain = await createPersonDetector({ modelDir: dir });
      closer = await createPersonDetector({ modelDir: dir, closerLook: BOX_CLOSER_LOOK });
      const wanted = ['small-in-flowers', 'tiny-on-pasture', 'sheep-detail', 'mandrill', 'woman-green-dress'];
      for (const p of (await getLabelledPhotos()).filter((x) => wanted.includes(x.name))) {
        photos.set(p.name, { thumb: await pixels(p.path, 320), source: await pixels(p.path, 1024) });
      }
      assert.equal(photos.size, wanted.length);
    });
    after(() => {
      plain?.dispose();
      closer?.dispose();
    });

    test('it names itself and asks for the medium variant', () => {
      assert.equal(closer.model, 'centernet-320+boxes-320');
      assert.deepEqual(closer.inputSpec, { size: 320, fit: 'contain', closerSize: 1024 });
    });

    test('small people the first look scores low are found closer (held-out photos)', async () => {
      for (const name of ['small-in-flowers', 'tiny-on-pasture']) {
        const first = await run(plain, name);
        const second = await run(closer, name);
        assert.ok(first.score < BOX_CLOSER_LOOK.sure, `${name}: first look ${first.score}`);
        assert.equal(second.reads, 1);
        assert.ok(second.score >= CALIBRATED_BOXES_THRESHOLD, `${name}: closer look ${second.score}`);
        for (const b of second.boxes) {
          assert.ok(b.x >= 0 && b.y >= 0 && b.width > 0 && b.height > 0, JSON.stringify(b));
          assert.ok(b.x + b.width <= 320.001 && b.y + b.height <= 320.001, JSON.stringify(b));
        }
      }
    });

    test('animals the first look takes for people score low closer (held-out photos)', async () => {
      for (const name of ['sheep-detail', 'mandrill']) {
        const first = await run(plain, name);
        const second = await run(closer, name);
        assert.ok(first.score >= CALIBRATED_FIRST_LOOK_THRESHOLD * 0.8, `${name}: first look ${first.score}`);
        assert.ok(second.score < CALIBRATED_BOXES_THRESHOLD, `${name}: closer look ${second.score}`);
      }
    });

    test('no tensors leak across 20 closer looks', async () => {
      const { tf } = await loadTfRuntime();
      await run(closer, 'tiny-on-pasture');
      const before = tf.memory();
      for (let i = 0; i < 20; i++) assert.equal((await run(closer, 'tiny-on-pasture')).reads, 1);
      const after = tf.memory();
      assert.equal(after.numTensors, before.numTensors);
      assert.equal(after.numBytes, before.numBytes);
    });

    test('a sure first look decides alone, and an image without boxes is not looked at again', async () => {
      const sure = await run(closer, 'woman-green-dress');
      assert.equal(sure.reads, 0);
      assert.equal(sure.score, (await run(plain, 'woman-green-dress')).score);
      let reads = 0;
      const grey = await closer.detect(
        { data: new Uint8Array(320 * 213 * 3).fill(128), width: 320, height: 213, channels: 3 },
        async () => {
          reads++;
          return photos.get('mandrill')!.source;
        },
      );
      assert.deepEqual([grey.score, reads], [0, 0]);
    });

    test("an image's frames share one budget of crops: the best 3 boxes among them all", async () => {
      const { thumb, source } = photos.get('small-in-flowers')!;
      const reads: number[] = [];
      // Five frames, each with two unsure boxes; frame k's score 0.05 + 0.05k: the best three boxes are frame 4's
      // two and frame 3's better one.
      const frames = [0, 1, 2, 3, 4].map((k) => ({
        width: thumb.width,
        height: thumb.height,
        first: {
          score: 0.05 + 0.05 * k,
          boxes: [
            { x: 20 + 10 * k, y: 20, width: 30, height: 60, score: 0.05 + 0.05 * k },
            { x: 200, y: 100, width: 40, height: 80, score: 0.04 + 0.05 * k },
          ],
        },
        source: async () => (reads.push(k), source),
      }));
      const decided = await closer.lookCloser!(frames);
      assert.ok(decided);
      assert.deepEqual(reads.sort(), [3, 4], 'only the frames holding the best three boxes are read');
      assert.deepEqual(
        decided.map((d) => d !== null),
        [false, false, false, true, true],
      );
      // A sure frame anywhere decides alone: no closer look at all.
      reads.length = 0;
      const withSure = frames.map((f, k) =>
        k === 2 ? { ...f, first: { score: 0.6, boxes: [{ ...f.first.boxes[0]!, score: 0.6 }] } } : f,
      );
      assert.equal(await closer.lookCloser!(withSure), null);
      assert.deepEqual(reads, []);
      assert.equal(closer.sureAt, BOX_CLOSER_LOOK.sure);
      assert.equal(plain.lookCloser, undefined);
    });
  });
});

describe('person detector on real photos', () => {
  let detector: PersonDetector;
  let photos: Photo[];
  const scores = new Map<string, number>();

  // Documented in research/detector-eval.md: a ~20 px figure in an 1870s landscape, and photos whose shapes
  // fool the model (a flock, an aircraft from above, framed prints on a grey wall). They stay in the set and
  // count in the aggregate test below.
  const knownMisses = new Set(['canyon-boatman']);
  const knownFalseAlarms = new Set(['biplane-from-above', 'sheep-pasture', 'grey-room-prints']);

  /** The pipeline's preparation for a 'contain' spec: RGB fitted inside size×size. */
  async function prepare(file: string, channels: 1 | 3 | 4 = 3): Promise<RawImage> {
    const size = detector.inputSpec.size;
    let image = sharp(file).rotate().resize(size, size, { fit: 'inside' });
    image = channels === 1 ? image.greyscale() : channels === 4 ? image.ensureAlpha() : image.removeAlpha();
    const { data, info } = await image.raw().toBuffer({ resolveWithObject: true });
    return { data, width: info.width, height: info.height, channels };
  }

  before(async () => {
    const [model, fetched] = await Promise.all([ensureModels(), getPhotos()]);
    detector = await createPersonDetector({ modelDir: model.dir });
    photos = fetched;
    for (const photo of photos) scores.set(photo.name, (await detectStage(detector, await prepare(photo.path))).score);
  });

  after(() => detector?.dispose());

  test('loads on a native or wasm backend, never the pure-JS cpu one', () => {
    assert.ok(['onnxruntime', 'tensorflow', 'wasm'].includes(detector.backend), `backend is ${detector.backend}`);
    assert.notEqual(detector.backend, 'cpu');
    assert.deepEqual(detector.inputSpec, { size: DEFAULT_INPUT_SIZE, fit: 'contain' });
  });

  test(`photos with people score at least the threshold ${CALIBRATED_FIRST_LOOK_THRESHOLD}`, () => {
    const missed = photos.filter(
      (p) => p.people && !knownMisses.has(p.name) && scores.get(p.name)! < CALIBRATED_FIRST_LOOK_THRESHOLD,
    );
    assert.deepEqual(
      missed.map((p) => `${p.name} ${scores.get(p.name)!.toFixed(3)}`),
      [],
    );
  });

  test(`photos without people score below the threshold ${CALIBRATED_FIRST_LOOK_THRESHOLD}`, () => {
    const flagged = photos.filter(
      (p) => !p.people && !knownFalseAlarms.has(p.name) && scores.get(p.name)! >= CALIBRATED_FIRST_LOOK_THRESHOLD,
    );
    assert.deepEqual(
      flagged.map((p) => `${p.name} ${scores.get(p.name)!.toFixed(3)}`),
      [],
    );
  });

  test('over every photo, recall and precision stay at or above 0.9', () => {
    const hit = (p: Photo) => scores.get(p.name)! >= CALIBRATED_FIRST_LOOK_THRESHOLD;
    const truePositives = photos.filter((p) => p.people && hit(p)).length;
    assert.ok(truePositives / photos.filter((p) => p.people).length >= 0.9, 'recall');
    assert.ok(truePositives / photos.filter(hit).length >= 0.9, 'precision');
  });

  test('a flat grey image scores 0', async () => {
    const size = detector.inputSpec.size;
    const grey = await detector.detect({
      data: new Uint8Array(size * size * 3).fill(128),
      width: size,
      height: size,
      channels: 3,
    });
    assert.equal(grey.score, 0);
    assert.deepEqual(grey.boxes, []);
  });

  test('a one-pixel-wide strip is letterboxed, not refused', async () => {
    const strip = await detector.detect({
      data: new Uint8Array(1000 * 3).fill(200),
      width: 1,
      height: 1000,
      channels: 3,
    });
    assert.ok(strip.score < CALIBRATED_FIRST_LOOK_THRESHOLD, `scored ${strip.score}`);
  });

  test('boxes lie inside the image, best first, and the score is the best box', async () => {
    const photo = photos.find((p) => p.name === 'group-window')!;
    const rgb = await prepare(photo.path);
    const found = await detector.detect(rgb);
    assert.ok(
      found.boxes.filter((b) => b.score >= CALIBRATED_FIRST_LOOK_THRESHOLD).length >= 4,
      'four women side by side',
    );
    assert.equal(found.score, found.boxes[0]!.score);
    for (const [i, b] of found.boxes.entries()) {
      assert.ok(b.x >= 0 && b.y >= 0 && b.width > 0 && b.height > 0, JSON.stringify(b));
      assert.ok(b.x + b.width <= rgb.width && b.y + b.height <= rgb.height, JSON.stringify(b));
      if (i > 0) assert.ok(b.score <= found.boxes[i - 1]!.score);
    }
  });

  test('grey, RGBA and oversized inputs give about the same score as the prepared RGB', async () => {
    const photo = photos.find((p) => p.name === 'three-men-portrait')!;
    const reference = scores.get(photo.name)!;
    for (const channels of [1, 4] as const) {
      const { score } = await detector.detect(await prepare(photo.path, channels));
      assert.ok(Math.abs(score - reference) < 0.15, `${channels} channels: ${score} vs ${reference}`);
    }
    const { data, info } = await sharp(photo.path).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    const { score } = await detector.detect({ data, width: info.width, height: info.height, channels: 3 });
    assert.ok(Math.abs(score - reference) < 0.15, `full size: ${score} vs ${reference}`);
  });

  test('pixels that do not match the stated size are refused', async () => {
    await assert.rejects(
      detector.detect({ data: new Uint8Array(10), width: 4, height: 4, channels: 3 }),
      /48 bytes of pixels but received 10/,
    );
  });

  test('a mean over the spatial axes (an average pool on wasm) equals the sum divided by the count', async () => {
    const { tf, backend } = await loadTfRuntime();
    if (backend === 'wasm') assert.equal((tf.getKernel(tf.Mean, 'wasm') as { pixvote?: boolean }).pixvote, true);
    const x = tf.randomUniform([2, 7, 9, 5], -3, 3, 'float32', 17);
    try {
      for (const [axis, keepDims] of [
        [[1, 2], false],
        [[2, 1], true],
        [[-3, -2], false],
      ] as const) {
        const got = tf.mean(x, [...axis], keepDims);
        const want = tf.div(tf.sum(x, [1, 2], keepDims), 63);
        assert.deepEqual(got.shape, want.shape);
        const [a, b] = [await got.data(), await want.data()];
        assert.ok(
          a.every((v, i) => Math.abs(v - b[i]!) < 1e-5),
          `mean over ${axis} differs`,
        );
        tf.dispose([got, want]);
      }
      // Other axes take the backend's own kernel.
      const channels = tf.mean(x, 3);
      assert.deepEqual(channels.shape, [2, 7, 9]);
      channels.dispose();
    } finally {
      x.dispose();
    }
  });

  test("the class head cut to the person channel gives the full head's person scores and boxes", async () => {
    const { tf } = await loadTfRuntime();
    const dir = (await ensureModels()).dir;
    const engine = { runtime: 'tfjs', tf } as const;
    const [cut, full] = await Promise.all([
      loadCenterNet(engine, dir),
      loadCenterNet(engine, dir, { allClasses: true }),
    ]);
    try {
      const rgb = await prepare(photos.find((p) => p.name === 'small-trio')!.path);
      const input = paddedBatch([rgb]);
      const [a, b] = [(await cut.run(input))[0]!, (await full.run(input))[0]!];
      assert.deepEqual([a.gridWidth, a.gridHeight, a.heatmap.length], [b.gridWidth, b.gridHeight, b.heatmap.length]);
      const maxDiff = (x: Float32Array, y: Float32Array) => x.reduce((m, v, i) => Math.max(m, Math.abs(v - y[i]!)), 0);
      assert.ok(maxDiff(a.heatmap, b.heatmap) < 1e-5, `heatmap differs by ${maxDiff(a.heatmap, b.heatmap)}`);
      assert.ok(Math.max(...a.heatmap) > 0.3, 'the photo has people: the compared scores are not all near 0');
      assert.equal(maxDiff(a.edges, b.edges), 0);
    } finally {
      cut.dispose();
      full.dispose();
    }
  });

  test('no tensors leak across 50 detections', async () => {
    const { tf } = await loadTfRuntime();
    const rgb = await prepare(photos.find((p) => p.name === 'small-trio')!.path);
    await detector.detect(rgb);
    const before = tf.memory();
    for (let i = 0; i < 50; i++) await detector.detect(rgb);
    const after = tf.memory();
    assert.equal(after.numTensors, before.numTensors);
    assert.equal(after.numBytes, before.numBytes);
  });
});

/** An RGB animation of `frames` (each width × height × 3 bytes), stacked as decode() leaves it. */
function animation(frames: Uint8Array[], width: number, height: number): DecodedImage {
  const data = new Uint8Array(frames.length * width * height * 3);
  frames.forEach((f, i) => data.set(f, i * f.length));
  const animated = frames.length > 1;
  return {
    format: 'gif',
    width,
    height,
    frames: frames.length,
    animated,
    raw: { data, width, height: height * frames.length, channels: 3 },
    pageHeight: height,
  };
}

/** A flat frame of grey `level`, with an optional dark `w`×`h` block at (x, y) (a figure). */
function frame(
  width: number,
  height: number,
  level: number,
  block?: { x: number; y: number; w: number; h: number; level?: number },
): Uint8Array {
  const px = new Uint8Array(width * height * 3).fill(level);
  if (block) {
    for (let y = block.y; y < block.y + block.h; y++)
      px.fill(block.level ?? 30, (y * width + block.x) * 3, (y * width + block.x + block.w) * 3);
  }
  return px;
}

/** Wraps a detector to count what goes through the model: frames, and calls (a batch is one call). */
function counting(detector: PersonDetector) {
  const count = { frames: 0, calls: 0 };
  const counted: PersonDetector = {
    ...detector,
    async detect(rgb) {
      count.frames++;
      count.calls++;
      return detector.detect(rgb);
    },
  };
  if (detector.detectMany) {
    counted.detectMany = async (frames) => {
      count.frames += frames.length;
      count.calls += Math.ceil(frames.length / detector.maxBatch!);
      return detector.detectMany!(frames);
    };
  }
  return { counted, count };
}

/** A model-free detector: the score of a frame is its first pixel's red / 255; batches when maxBatch is set. */
function scriptedDetector(maxBatch?: number): PersonDetector {
  const one = async (rgb: RawImage): Promise<PersonDetection> => ({ score: rgb.data[0]! / 255, boxes: [] });
  return {
    backend: 'fake',
    model: 'fake',
    inputSpec: { size: 32, fit: 'contain' },
    detect: one,
    ...(maxBatch ? { maxBatch, detectMany: (frames: readonly RawImage[]) => Promise.all(frames.map(one)) } : {}),
    dispose() {},
  };
}

describe('which frames of an animation are checked', () => {
  const W = 120;
  const H = 90;
  const chosen = (frames: Uint8Array[]) => distinctFrames(frameSignatures(animation(frames, W, H)));

  test('identical frames are checked once', () => {
    assert.deepEqual(chosen([frame(W, H, 100), frame(W, H, 100), frame(W, H, 100)]), [0]);
  });

  test('noise within the tolerance is the same frame; a figure-sized change is not', () => {
    const noisy = frame(W, H, 100).map((v, i) => v + (i % 7 === 0 ? 3 : 0));
    assert.deepEqual(chosen([frame(W, H, 100), noisy]), [0]);
    // A 6×12 px figure in a 120×90 frame: a person the model could not even see at this size.
    assert.deepEqual(chosen([frame(W, H, 100), frame(W, H, 100, { x: 50, y: 40, w: 6, h: 12 })]), [0, 1]);
  });

  test('a slow change is checked once it adds up, compared with the frames checked, not the one before', () => {
    const drift = Array.from({ length: 7 }, (_, i) => frame(W, H, 100 + i));
    assert.ok(SAME_FRAME_TOLERANCE === 2);
    assert.deepEqual(chosen(drift), [0, 3, 6]);
  });

  test('an animation that returns to an earlier picture does not check it again', () => {
    const a = frame(W, H, 60);
    const b = frame(W, H, 60, { x: 10, y: 10, w: 40, h: 60 });
    assert.deepEqual(chosen([a, b, a, b, a]), [0, 1]);
  });

  test('RGBA frames are compared as they are seen, on white: transparent pixels of any colour match', () => {
    const rgba = (rgb: [number, number, number], alpha: number) => {
      const px = new Uint8Array(W * H * 4);
      for (let i = 0; i < px.length; i += 4) px.set([...rgb, alpha], i);
      return px;
    };
    const data = new Uint8Array([...rgba([255, 0, 0], 0), ...rgba([0, 0, 255], 0), ...rgba([0, 0, 255], 255)]);
    const image = { raw: { data, width: W, height: H * 3, channels: 4 as const }, pageHeight: H };
    assert.deepEqual(distinctFrames(frameSignatures(image)), [0, 2]);
  });

  test(
    'distinct frames go through the model in batches of maxBatch, ' + 'one frame at a time without detectMany',
    async () => {
      const frames = Array.from({ length: 10 }, (_, i) => frame(W, H, 10 + i * 20));
      const image = animation(frames, W, H);
      const batched = counting(scriptedDetector(4));
      const found = await detectPeople(image, batched.counted);
      assert.deepEqual(found.info, { frames: 10, distinctFrames: 10, inferences: 10, modelCalls: 3, bestFrame: 9 });
      assert.deepEqual(batched.count, { frames: 10, calls: 3 });
      assert.equal(found.score, (10 + 9 * 20) / 255);
      const single = counting(scriptedDetector());
      assert.equal((await detectPeople(image, single.counted)).info.modelCalls, 10);
      assert.deepEqual(single.count, { frames: 10, calls: 10 });
    },
  );

  test('with stopAt, the batches after the first frame at that score are not run', async () => {
    const levels = [10, 200, 30, 40, 50, 60, 70, 80, 90];
    const found = await detectPeople(
      animation(
        levels.map((l) => frame(W, H, l)),
        W,
        H,
      ),
      scriptedDetector(4),
      { stopAt: 0.5 },
    );
    assert.deepEqual([found.info.inferences, found.info.modelCalls, found.info.bestFrame], [4, 1, 1]);
    assert.equal(found.score, 200 / 255);
  });

  test('resampled pixels of the input size are read as they are; else the smallest larger ones', async () => {
    // The working buffer: four frames alike. The 32 px pixels (as the encoder's thumb): frames 0 and 2 differ.
    const image = animation([frame(W, H, 9), frame(W, H, 9), frame(W, H, 9), frame(W, H, 9)], W, H);
    const w = 32;
    const h = 24;
    const levels = [40, 40, 120, 40];
    const rgba = new Uint8Array(levels.length * w * h * 4);
    levels.forEach((level, f) => {
      for (let i = 0; i < w * h; i++) rgba.set([level, level, level, 255], (f * w * h + i) * 4);
    });
    const small = { data: rgba, width: w, height: h, channels: 4 as const, frames: levels.length };
    const { counted, count } = counting(scriptedDetector(4));
    const found = await detectPeople(image, counted, { resampled: [small] });
    assert.deepEqual([found.info.distinctFrames, count.frames, found.info.bestFrame], [2, 2, 2]);
    assert.equal(found.score, 120 / 255);
    // Of others, the input is resampled from the smallest at least the input size; smaller ones, and ones with
    // another number of frames, are not used (then the working buffer is, as before).
    const flat = (width: number, height: number, level: number, frames = 4) => ({
      data: new Uint8Array(frames * width * height * 3).fill(level),
      width,
      height,
      channels: 3 as const,
      frames,
    });
    const score = async (resampled: ReturnType<typeof flat>[]) =>
      (await detectPeople(image, scriptedDetector(4), { resampled })).score * 255;
    assert.equal(await score([flat(64, 48, 200), flat(48, 36, 150), flat(24, 18, 90)]), 150);
    assert.equal(await score([flat(24, 18, 90)]), 9);
    assert.equal(await score([flat(48, 36, 150, 3)]), 9);
  });

  test("the closer look's source: closerSize pixels as they are, else resampled; read on demand", async () => {
    const image = animation([frame(W, H, 9), frame(W, H, 200)], W, H);
    const flat = (width: number, height: number, levels: number[]) => ({
      data: Uint8Array.from(levels.flatMap((l) => Array<number>(width * height * 3).fill(l))),
      width,
      height,
      channels: 3 as const,
      frames: levels.length,
    });
    const thumb = flat(32, 24, [40, 120]);
    const medium = flat(64, 48, [50, 150]);
    const read: Array<[number, number, number]> = [];
    // A detector whose closer look reads the source of frames scoring under 0.3 only.
    const looking = (closerSize: number): PersonDetector => {
      const one = async (rgb: RawImage, source?: () => Promise<RawImage>) => {
        if (rgb.data[0]! / 255 < 0.3 && source) {
          const s = await source();
          read.push([s.width, s.height, s.data[0]!]);
        }
        return { score: rgb.data[0]! / 255, boxes: [] };
      };
      return {
        backend: 'fake',
        model: 'fake',
        inputSpec: { size: 32, fit: 'contain', closerSize },
        detect: one,
        maxBatch: 4,
        detectMany: (frames, sources) => Promise.all(frames.map((f, i) => one(f, sources?.[i]))),
        dispose() {},
      };
    };
    await detectPeople(image, looking(64), { resampled: [thumb, medium] });
    // Frame 0 (40/255) is unsure and reads the medium frame 0 as it is; frame 1 (120/255) does not read at all.
    assert.deepEqual(read, [[64, 48, 50]]);
    // No resampled pixels that large: from the working buffer (120×90 here), never enlarged.
    read.length = 0;
    await detectPeople(image, looking(96), { resampled: [thumb, medium] });
    assert.deepEqual(read, [[96, 72, 9]]);
    read.length = 0;
    await detectPeople(image, looking(200), { resampled: [thumb, medium] });
    assert.deepEqual(read, [[120, 90, 9]]);
    // Only larger ones: resampled from them to closerSize.
    read.length = 0;
    await detectPeople(image, looking(40), { resampled: [thumb, medium] });
    assert.deepEqual(read, [[40, 30, 50]]);
  });

  test('a still image is checked once', async () => {
    const found = await detectPeople(animation([frame(W, H, 51)], W, H), scriptedDetector(4));
    assert.deepEqual(found.info, { frames: 1, distinctFrames: 1, inferences: 1, modelCalls: 1, bestFrame: 0 });
  });
});

// On TF.js, which batches frames (MAX_BATCH); onnxruntime runs them one per call (ONNX_MAX_BATCH, tested below).
describe('person detector on every distinct frame of a GIF', () => {
  let detector: PersonDetector;
  const decodeGif = async (bytes: Uint8Array): Promise<DecodedImage> => {
    const decoded = await decode(bytes, { format: 'gif' });
    return decoded.ok ? decoded.image : assert.fail(decoded.message);
  };

  before(async () => {
    detector = await createPersonDetector({ modelDir: (await ensureModels()).dir, runtime: 'tfjs' });
  });
  after(() => detector?.dispose());

  test(`on onnxruntime, one frame per model call (${ONNX_MAX_BATCH}), the same scores as TF.js's batches`, async () => {
    const onnx = await createPersonDetector({ modelDir: (await ensureModels()).dir });
    try {
      assert.equal(onnx.maxBatch, ONNX_MAX_BATCH);
      const image = await decodeGif(await personGif({ frames: 5, personAt: 1 }));
      const { counted, count } = counting(onnx);
      const [found, batched] = [await detectPeople(image, counted), await detectPeople(image, detector)];
      assert.deepEqual(count, { frames: 2, calls: 2 });
      assert.ok(Math.abs(found.score - batched.score) < 1e-3, `${found.score} vs ${batched.score}`);
    } finally {
      onnx.dispose();
    }
  });

  test(`batches up to ${MAX_BATCH} frames per model call, with the same scores as one by one`, async () => {
    assert.equal(detector.maxBatch, MAX_BATCH);
    const image = await decodeGif(await personGif({ frames: 2, personAt: 1 }));
    const size = detector.inputSpec.size;
    const frames = await Promise.all(
      [0, 1, 0].map(async (f) => {
        const { data, info } = await sharp(
          image.raw.data.subarray(
            f * image.raw.width * image.pageHeight * 4,
            (f + 1) * image.raw.width * image.pageHeight * 4,
          ),
          {
            raw: { width: image.raw.width, height: image.pageHeight, channels: 4 },
          },
        )
          .resize(size, size, { fit: 'inside' })
          .removeAlpha()
          .raw()
          .toBuffer({ resolveWithObject: true });
        return { data, width: info.width, height: info.height, channels: 3 as const };
      }),
    );
    const many = await detector.detectMany!(frames);
    const one = await Promise.all(frames.map((f) => detector.detect(f)));
    assert.equal(many.length, 3);
    for (const [i, r] of many.entries())
      assert.ok(Math.abs(r.score - one[i]!.score) < 1e-3, `frame ${i}: ${r.score} vs ${one[i]!.score}`);
    assert.ok(many[1]!.score >= CALIBRATED_FIRST_LOOK_THRESHOLD && many[0]!.score < CALIBRATED_FIRST_LOOK_THRESHOLD);
  });

  test(
    'a person on frame 2 of 5 (0-based 1) is found; ' + 'the four identical frames are checked once, in one batch',
    async () => {
      const image = await decodeGif(await personGif({ frames: 5, personAt: 1 }));
      const { counted, count } = counting(detector);
      const found = await detectPeople(image, counted);
      assert.ok(found.score >= CALIBRATED_FIRST_LOOK_THRESHOLD, `score ${found.score}`);
      assert.deepEqual(found.info, { frames: 5, distinctFrames: 2, inferences: 2, modelCalls: 1, bestFrame: 1 });
      assert.deepEqual(count, { frames: 2, calls: 1 });
    },
  );

  test('the same GIF without the person scores below the threshold, on one inference', async () => {
    const image = await decodeGif(await personGif({ frames: 5, personAt: null }));
    const { counted, count } = counting(detector);
    const found = await detectPeople(image, counted);
    assert.ok(found.score < CALIBRATED_FIRST_LOOK_THRESHOLD, `score ${found.score}`);
    assert.deepEqual(count, { frames: 1, calls: 1 });
  });

  test('no tensors leak across batched detections', async () => {
    const { tf } = await loadTfRuntime();
    const image = await decodeGif(await personGif({ frames: 6, personAt: 4, background: 'kitten-in-leaves' }));
    const stepped = {
      ...image,
      raw: {
        ...image.raw,
        data: image.raw.data.map((v, i) =>
          i % 4 === 3 ? v : Math.min(255, v + Math.floor(i / (image.raw.width * image.pageHeight * 4)) * 9),
        ),
      },
    };
    await detectPeople(stepped, detector);
    const before = tf.memory();
    for (let i = 0; i < 5; i++) assert.ok((await detectPeople(stepped, detector)).info.modelCalls >= 2);
    assert.equal(tf.memory().numTensors, before.numTensors);
    assert.equal(tf.memory().numBytes, before.numBytes);
  });
});
