import { after, before, describe, it, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import sharp from 'sharp';
import { processImage, verdict } from '../../src/workers/pipeline/process-image.ts';
import { normalizeBoxes } from '../../src/workers/pipeline/detect-frames.ts';
import { MAX_PERSON_BOXES } from '../../src/domain/person-policy.ts';
import type {
  DetectorInputSpec,
  HumanPolicy,
  PersonDetector,
  ProcessImageTask,
  RawImage,
} from '../../src/workers/pipeline/types.ts';
import { VARIANT_MAX_SIDE } from '../../src/workers/pipeline/types.ts';
import { setupSharp } from '../../src/workers/sharp-setup.ts';
import * as fx from '../support/fixtures.ts';
import * as pf from '../support/provenance-fixtures.ts';

interface FakeDetector extends PersonDetector {
  inputs: RawImage[];
}

/** A detector that answers `score` for every frame (or what `scoreOf` says), recording its inputs. */
function fakeDetector(
  score: number,
  opts: { inputSpec?: DetectorInputSpec; scoreOf?: (call: number) => number } = {},
): FakeDetector {
  const inputs: RawImage[] = [];
  return {
    backend: 'fake',
    model: 'fake',
    inputSpec: opts.inputSpec ?? { size: 96, fit: 'contain' },
    inputs,
    async detect(rgb) {
      inputs.push(rgb);
      const s = opts.scoreOf?.(inputs.length - 1) ?? score;
      return { score: s, boxes: s > 0 ? [{ x: 1, y: 2, width: 3, height: 4, score: s }] : [] };
    },
    dispose() {},
  };
}

const throwingDetector = (): PersonDetector => ({
  ...fakeDetector(0),
  detect: () => Promise.reject(new Error('detector exploded')),
});

describe('processImage', () => {
  let stagingDir: string;
  let n = 0;
  const task = (
    bytes: Uint8Array,
    humanPolicy: HumanPolicy = 'off',
    extra: Partial<ProcessImageTask> = {},
  ): ProcessImageTask => ({
    bytes: fx.toArrayBuffer(bytes),
    stagingDir,
    baseName: `upload-${++n}`,
    humanPolicy,
    humanThreshold: 0.5,
    ...extra,
  });
  const staged = async (t: ProcessImageTask) =>
    (await readdir(stagingDir)).filter((f) => f.startsWith(`${t.baseName}.`)).sort();

  before(async () => {
    await setupSharp();
    stagingDir = await mkdtemp(path.join(tmpdir(), 'pixvote-process-'));
  });
  after(() => rm(stagingDir, { recursive: true, force: true }));

  it('turns a camera JPEG into hashes, staged variants and per-stage timings', async () => {
    const detector = fakeDetector(0.25);
    const t = task(await fx.photoJpeg({ width: 640, height: 480, orientation: 6 }), 'flag');
    const result = await processImage(t, { detector });
    if (!result.ok) assert.fail(result.message);
    assert.deepEqual(
      [result.format, result.width, result.height, result.animated, result.frames, result.humanScore],
      ['jpeg', 480, 640, false, 1, 0.25],
    );
    assert.match(result.phash, /^[0-9a-f]{16}$/);
    assert.match(result.pdq, /^[0-9a-f]{64}$/);
    assert.ok(Number.isInteger(result.pdqQuality) && result.pdqQuality >= 0 && result.pdqQuality <= 100);
    assert.match(result.thumbhash, /^[A-Za-z0-9+/]+={0,2}$/);
    assert.deepEqual(
      result.variants.map((v) => [v.name, v.width, v.height]),
      [
        ['thumb', 240, 320],
        ['medium', 480, 640],
        ['full', 480, 640],
      ],
    );
    for (const v of result.variants) assert.equal((await stat(v.path)).size, v.bytes);
    assert.deepEqual(await staged(t), [
      `${t.baseName}.full.webp`,
      `${t.baseName}.medium.webp`,
      `${t.baseName}.thumb.webp`,
    ]);
    assert.deepEqual(Object.keys(result.timings).sort(), [
      'decode',
      'detect',
      'encode',
      'pdq',
      'phash',
      'provenance',
      'resample',
      'sniff',
      'thumbhash',
    ]);
    assert.ok(Object.values(result.timings).every((ms) => typeof ms === 'number' && ms >= 0));
  });

  it('carries the provenance read from the original bytes; the C2PA reader is asked only about manifests', async () => {
    const asked: number[] = [];
    const summary = { present: true, valid: true, generator: 'g', signer: 's', actions: [] };
    const c2pa = {
      read: (bytes: Uint8Array) => {
        asked.push(bytes.length);
        return Promise.resolve(summary);
      },
    };
    const xmp = await processImage(task(await pf.pngWithXmpSourceType('trainedAlgorithmicMedia')), {
      detector: null,
      c2pa,
    });
    assert.deepEqual(xmp.ok && xmp.provenance, {
      ai_generated: true,
      source_type: 'trainedAlgorithmicMedia',
      c2pa: null,
    });
    const plain = await processImage(task(await fx.photoJpeg({ width: 64, height: 48 })), { detector: null, c2pa });
    assert.deepEqual(plain.ok && plain.provenance, { ai_generated: null, source_type: null, c2pa: null });
    assert.deepEqual(asked, [], 'no manifest, no reader');
    if (await pf.c2paLibrary()) {
      const signed = await pf.c2paSignedJpeg({ sourceType: 'digitalCapture' });
      const r = await processImage(task(signed), { detector: null, c2pa });
      assert.deepEqual(r.ok && r.provenance.c2pa, summary);
      assert.deepEqual(asked, [signed.length], 'the original bytes, before any decoding');
    }
  });

  it('AI_POLICY=reject: a generated-says marker refuses the image before anything is decoded or staged', async () => {
    const marked = await pf.pngWithXmpSourceType('algorithmicMedia');
    const t = task(marked, 'off', { aiPolicy: 'reject' });
    const r = await processImage(t, { detector: null });
    assert.equal(r.ok, false);
    assert.equal(!r.ok && r.code, 'ai_generated');
    assert.match(!r.ok ? r.message : '', /IPTC DigitalSourceType algorithmicMedia/);
    assert.deepEqual(await staged(t), [], 'nothing staged');
    // The same image under the default policy, and a captured one under reject: processed, labelled by the record.
    const labelled = await processImage(task(marked, 'off', { aiPolicy: 'label' }), { detector: null });
    assert.equal(labelled.ok && labelled.provenance.ai_generated, true);
    const captured = await processImage(
      task(await pf.pngWithXmpSourceType('digitalCapture'), 'off', { aiPolicy: 'reject' }),
      { detector: null },
    );
    assert.equal(captured.ok && captured.provenance.ai_generated, false);
  });

  it('prepares RGB for the detector as its inputSpec asks: contained, or filled to a square', async () => {
    const jpeg = await fx.photoJpeg({ width: 640, height: 480, metadata: false });
    const contain = fakeDetector(0, { inputSpec: { size: 96, fit: 'contain' } });
    await processImage(task(jpeg, 'flag'), { detector: contain });
    assert.deepEqual(
      contain.inputs.map((i) => [i.width, i.height, i.channels, i.data.length]),
      [[96, 72, 3, 96 * 72 * 3]],
    );
    const fill = fakeDetector(0, { inputSpec: { size: 64, fit: 'fill' } });
    await processImage(task(jpeg, 'flag'), { detector: fill });
    assert.deepEqual(
      fill.inputs.map((i) => [i.width, i.height, i.channels]),
      [[64, 64, 3]],
    );
  });

  it("reads the thumb's pixels when the detector's input is the thumb's size, alpha flattened on white", async () => {
    const png = await sharp({
      create: { width: 800, height: 400, channels: 4, background: { r: 200, g: 10, b: 10, alpha: 0.5 } },
    })
      .png()
      .toBuffer();
    const detector = fakeDetector(0, { inputSpec: { size: VARIANT_MAX_SIDE.thumb, fit: 'contain' } });
    const result = await processImage(task(new Uint8Array(png), 'flag'), { detector });
    assert.ok(result.ok);
    const thumb = result.variants.find((v) => v.name === 'thumb')!;
    const [input] = detector.inputs;
    assert.deepEqual([input!.width, input!.height, input!.channels], [thumb.width, thumb.height, 3]);
    // Half-transparent red over white: (200 + 255) / 2, (10 + 255) / 2.
    const pixel = [...input!.data.subarray(0, 3)];
    assert.ok(
      pixel.every((v, i) => Math.abs(v - [228, 133, 133][i]!) <= 1),
      `${pixel}`,
    );
  });

  it("skips detection under humanPolicy 'off'", async () => {
    const result = await processImage(task(await fx.pngImage(64, 48)), { detector: throwingDetector() });
    assert.equal(result.ok && result.humanScore, null);
    assert.equal(result.ok && result.timings.detect, undefined);
  });

  it("rejects a person under 'reject' before encoding anything, naming the score and threshold", async () => {
    const t = task(await fx.photoJpeg(), 'reject');
    assert.deepEqual(await processImage(t, { detector: fakeDetector(0.91) }), {
      ok: false,
      code: 'human_detected',
      message: 'a person was detected (score 0.910, threshold 0.5); images showing people are not accepted',
      detection: { frames: 1, distinctFrames: 1, inferences: 1, modelCalls: 1, bestFrame: 0 },
    });
    assert.deepEqual(await staged(t), []);
    const below = await processImage(task(await fx.photoJpeg(), 'reject'), { detector: fakeDetector(0.49) });
    assert.equal(below.ok && below.humanScore, 0.49);
  });

  it("keeps a gray-zone score under 'reject' (the service holds it), its boxes as fractions of the image", async () => {
    const detector = fakeDetector(0.4);
    const result = await processImage(task(await fx.photoJpeg(), 'reject', { humanReviewThreshold: 0.3 }), {
      detector,
    });
    assert.ok(result.ok, JSON.stringify(result));
    assert.equal(result.humanScore, 0.4);
    const { width, height } = detector.inputs[0]!;
    const r4 = (v: number) => Math.round(v * 10_000) / 10_000;
    assert.deepEqual(result.humanBoxes, [
      { x: r4(1 / width), y: r4(2 / height), width: r4(3 / width), height: r4(4 / height), score: 0.4 },
    ]);
  });

  it('normalizeBoxes: best first, at most MAX_PERSON_BOXES, clamped to the image', () => {
    const boxes = [0.1, 0.9, 0.5, 0.3, 0.7, 0.2].map((score, i) => ({ x: i * 10, y: 0, width: 20, height: 10, score }));
    boxes.push({ x: -10, y: 90, width: 30, height: 40, score: 0.95 });
    const out = normalizeBoxes(boxes, 100, 100);
    assert.equal(out.length, MAX_PERSON_BOXES);
    assert.deepEqual(
      out.map((b) => b.score),
      [0.95, 0.9, 0.7, 0.5, 0.3],
    );
    assert.deepEqual(out[0], { x: 0, y: 0.9, width: 0.2, height: 0.1, score: 0.95 });
  });

  it('looks at every distinct frame of an animation and keeps the highest score', async () => {
    const detector = fakeDetector(0, { scoreOf: (call) => [0.1, 0.7, 0.2, 0.3, 0.1][call]! });
    const result = await processImage(task(await fx.animatedGif({ width: 64, height: 48, frames: 5 }), 'flag'), {
      detector,
    });
    assert.equal(detector.inputs.length, 5);
    assert.equal(result.ok && result.humanScore, 0.7);
    assert.equal(result.ok && result.animated, true);
    assert.deepEqual(result.ok && result.detection, {
      frames: 5,
      distinctFrames: 5,
      inferences: 5,
      modelCalls: 5,
      bestFrame: 1,
    });
  });

  it('returns each expected rejection with its code and leaves nothing staged', async () => {
    const cases: Array<[string, Uint8Array, string]> = [
      ...(await fx.refusedFormats()).map(({ name, bytes }): [string, Uint8Array, string] => [
        name,
        bytes,
        'unsupported_format',
      ]),
      ['text', fx.nonImageBytes(), 'unsupported_format'],
      ['truncated JPEG', await fx.truncatedJpeg(), 'invalid_image'],
      ['corrupt PNG', await fx.corruptPng(), 'invalid_image'],
      ['100000×100000 PNG', fx.hugeHeaderPng(), 'invalid_image'],
      ['201-frame GIF', await fx.manyFramesGif(201), 'invalid_image'],
    ];
    for (const [name, bytes, code] of cases) {
      const t = task(bytes, 'reject');
      const result = await processImage(t, { detector: fakeDetector(0) });
      assert.equal(result.ok ? 'ok' : result.code, code, name);
      assert.deepEqual(await staged(t), [], name);
    }
  });

  it('removes the variants it already wrote when a later write fails, and throws', async () => {
    const t = task(await fx.photoJpeg({ width: 1600, height: 1200, metadata: false }));
    await mkdir(path.join(stagingDir, `${t.baseName}.thumb.webp`)); // the thumb write hits a directory
    await assert.rejects(processImage(t, { detector: null }), { code: 'EISDIR' });
    assert.deepEqual(await staged(t), [`${t.baseName}.thumb.webp`]);
  });

  it('throws, staging nothing, when the detector fails or is missing (bugs, not rejections)', async () => {
    const t = task(await fx.photoJpeg(), 'flag');
    await assert.rejects(processImage(t, { detector: throwingDetector() }), /detector exploded/);
    await assert.rejects(processImage(task(await fx.photoJpeg(), 'reject'), { detector: null }), /no person detector/);
    assert.deepEqual(await staged(t), []);
  });

  it('stops between stages once the pool raises the cancel flag', async () => {
    const cancel = new Int32Array(new SharedArrayBuffer(4));
    Atomics.store(cancel, 0, 1);
    const early = await processImage(task(await fx.photoJpeg(), 'off', { cancel }), { detector: null });
    assert.equal(!early.ok && early.message, 'processing was cancelled before decode: the request was aborted');

    const flag = new Int32Array(new SharedArrayBuffer(4));
    const t = task(await fx.photoJpeg(), 'flag', { cancel: flag });
    const detector = fakeDetector(0, { scoreOf: () => (Atomics.store(flag, 0, 1), 0) });
    const late = await processImage(t, { detector });
    assert.equal(!late.ok && late.message, 'processing was cancelled before encode: the request was aborted');
    assert.deepEqual(await staged(t), []);
  });
});

test('after-hash question: an abort that closed the port before it was asked does not hold the worker', async () => {
  // The pool sets the cancel flag, then closes its end; the close reaches this end while nobody listens (an earlier
  // stage was running), so the 'close' event is lost and a question posted to the closed port is never answered.
  const { port1, port2 } = new MessageChannel();
  const cancel = new Int32Array(new SharedArrayBuffer(4));
  Atomics.store(cancel, 0, 1);
  port1.close();
  await new Promise((r) => setTimeout(r, 50));
  const hung = new Promise<'hung'>((r) => setTimeout(() => r('hung'), 2000));
  assert.deepEqual(await Promise.race([verdict(port2, 'f00d', cancel), hung]), { stop: false });
  // Without the flag the port still answers as before.
  const live = new MessageChannel();
  live.port1.on('message', () => live.port1.postMessage({ stop: true }));
  assert.deepEqual(await verdict(live.port2, 'f00d', new Int32Array(new SharedArrayBuffer(4))), { stop: true });
  live.port1.close();
});
