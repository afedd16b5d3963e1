import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { ensureModels } from '../../src/workers/detector/model-files.fetch.ts';
import { boxAt, heatmapPeaks, intersectionOverUnion, nonMaxSuppression, toImageBox } from '../../src/workers/detector/person-boxes.decode.ts';
import { loadTfRuntime } from '../../src/workers/detector/tfjs-backend.loader.ts';
import { createPersonDetector, detectStage } from '../../src/workers/pipeline/detect.stage.ts';
import { CALIBRATED_HUMAN_THRESHOLD } from '../../src/domain/person-policy.ts';
import type { PersonDetector, RawImage } from '../../src/workers/pipeline/types.ts';
import { getPhotos, type Photo } from '../support/photos.ts';

const box = (x1: number, y1: number, x2: number, y2: number, score = 1) => ({ x1, y1, x2, y2, score });

describe('person box decoding', () => {
  test('heatmap peaks are 3×3 local maxima at or above minScore, best first, capped', () => {
    // 5×5: a peak of 0.9 at (1,1) with a 0.8 shoulder, a lone 0.5 at (4,3), noise of 0.1 elsewhere.
    const heat = new Float32Array(25).fill(0.1);
    heat[1 * 5 + 1] = 0.9;
    heat[1 * 5 + 2] = 0.8;
    heat[3 * 5 + 4] = 0.5;
    assert.deepEqual(heatmapPeaks(heat, 5, 0.3, 10).map((p) => [p.cell, Number(p.score.toFixed(2))]), [[6, 0.9], [19, 0.5]]);
    assert.deepEqual(heatmapPeaks(heat, 5, 0.3, 1).map((p) => p.cell), [6]);
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
    assert.deepEqual(nonMaxSuppression(boxes, 0.5).map((b) => b.score), [0.9, 0.8, 0.4]);
    assert.deepEqual(nonMaxSuppression(boxes, 0.2).map((b) => b.score), [0.9, 0.4]);
    assert.deepEqual(nonMaxSuppression(boxes, 0.5, 2).map((b) => b.score), [0.9, 0.8]);
    assert.deepEqual(nonMaxSuppression([], 0.5), []);
  });

  test('boxes map from the letterboxed input back to the image, clipped to it', () => {
    // A 200×100 image fitted into 400×400: scale 2, 100 px of padding above.
    const frame = { scale: 2, padX: 0, padY: 100, width: 200, height: 100 };
    assert.deepEqual(toImageBox(box(40, 120, 100, 300, 0.5), frame), box(20, 10, 50, 100, 0.5));
    assert.deepEqual(toImageBox(box(-10, 0, 500, 150, 0.5), frame), box(0, 0, 200, 25, 0.5));
  });
});

describe('person detector on real photos', () => {
  let detector: PersonDetector;
  let photos: Photo[];
  const scores = new Map<string, number>();

  // Documented in the calibration report: a ~20 px figure in an 1870s landscape, and two photos
  // whose shapes fool the model. They stay in the set and count in the aggregate test below.
  const knownMisses = new Set(['canyon-boatman']);
  const knownFalseAlarms = new Set(['biplane-from-above', 'sheep-pasture']);

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
    assert.ok(['tensorflow', 'wasm'].includes(detector.backend), `backend is ${detector.backend}`);
    assert.notEqual(detector.backend, 'cpu');
    assert.deepEqual(detector.inputSpec, { size: 384, fit: 'contain' });
  });

  test(`photos with people score at least the threshold ${CALIBRATED_HUMAN_THRESHOLD}`, () => {
    const missed = photos.filter((p) => p.people && !knownMisses.has(p.name) && scores.get(p.name)! < CALIBRATED_HUMAN_THRESHOLD);
    assert.deepEqual(missed.map((p) => `${p.name} ${scores.get(p.name)!.toFixed(3)}`), []);
  });

  test(`photos without people score below the threshold ${CALIBRATED_HUMAN_THRESHOLD}`, () => {
    const flagged = photos.filter((p) => !p.people && !knownFalseAlarms.has(p.name) && scores.get(p.name)! >= CALIBRATED_HUMAN_THRESHOLD);
    assert.deepEqual(flagged.map((p) => `${p.name} ${scores.get(p.name)!.toFixed(3)}`), []);
  });

  test('over every photo, recall and precision stay at or above 0.9', () => {
    const hit = (p: Photo) => scores.get(p.name)! >= CALIBRATED_HUMAN_THRESHOLD;
    const truePositives = photos.filter((p) => p.people && hit(p)).length;
    assert.ok(truePositives / photos.filter((p) => p.people).length >= 0.9, 'recall');
    assert.ok(truePositives / photos.filter(hit).length >= 0.9, 'precision');
  });

  test('a flat grey image scores 0', async () => {
    const size = detector.inputSpec.size;
    const grey = await detector.detect({ data: new Uint8Array(size * size * 3).fill(128), width: size, height: size, channels: 3 });
    assert.equal(grey.score, 0);
    assert.deepEqual(grey.boxes, []);
  });

  test('a one-pixel-wide strip is letterboxed, not refused', async () => {
    const strip = await detector.detect({ data: new Uint8Array(1000 * 3).fill(200), width: 1, height: 1000, channels: 3 });
    assert.equal(strip.score, 0);
  });

  test('boxes lie inside the image, best first, and the score is the best box', async () => {
    const photo = photos.find((p) => p.name === 'group-window')!;
    const rgb = await prepare(photo.path);
    const found = await detector.detect(rgb);
    assert.ok(found.boxes.filter((b) => b.score >= CALIBRATED_HUMAN_THRESHOLD).length >= 4, 'four women side by side');
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
    await assert.rejects(detector.detect({ data: new Uint8Array(10), width: 4, height: 4, channels: 3 }), /48 bytes of pixels but received 10/);
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
