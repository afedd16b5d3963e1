import assert from 'node:assert/strict';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import type { io, Tensor3D, Tensor4D } from '@tensorflow/tfjs-core';
import {
  loadCenterNet,
  onnxCenterNet,
  type CenterNet,
  type ModelBatch,
} from '../../src/workers/detector/centernet.model.ts';
import { convertCenterNet, tfGraphToOnnx } from '../../src/workers/detector/centernet.onnx.ts';
import { sha256Hex } from '../../src/workers/detector/file-integrity.ts';
import { ensureModels, readManifest } from '../../src/workers/detector/model-files.fetch.ts';
import { writeOnnxModel } from '../../src/workers/detector/onnx-proto.write.ts';
import { loadOnnxRuntime, type OnnxRuntime } from '../../src/workers/detector/onnx-runtime.loader.ts';
import { loadTfRuntime, type Tf } from '../../src/workers/detector/tfjs-backend.loader.ts';
import {
  BOX_CLOSER_LOOK,
  createPersonDetector,
  fitFrame,
  writeCrop,
  writeModelInput,
} from '../../src/workers/pipeline/detect.stage.ts';
import { paddedBatch } from '../support/model-batch.ts';
import type { PersonDetector, RawImage } from '../../src/workers/pipeline/types.ts';
import { getLabelledPhotos, type LabelledPhoto } from '../support/photos.ts';

const maxDiff = (x: Float32Array, y: Float32Array) => x.reduce((m, v, i) => Math.max(m, Math.abs(v - y[i]!)), 0);

async function rgbOf(file: string, size: number): Promise<RawImage> {
  const { data, info } = await sharp(file)
    .rotate()
    .removeAlpha()
    .resize(size, size, { fit: 'inside', withoutEnlargement: true })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: 3 };
}

describe('ONNX protobuf writer', () => {
  test('a small graph written by hand runs on onnxruntime with the expected numbers', async () => {
    const ort = await loadOnnxRuntime();
    // y = Clip(Transpose(x) * [1, 2, 3] per channel, 0, 6): int lists, float initializers, two inputs per node.
    const model = writeOnnxModel({
      name: 'tiny',
      producer: 'test',
      opset: 13,
      nodes: [
        { op: 'Transpose', inputs: ['x'], outputs: ['t'], attributes: { perm: [0, 3, 1, 2] } },
        { op: 'Mul', inputs: ['t', 'k'], outputs: ['m'] },
        { op: 'Clip', inputs: ['m', 'lo', 'hi'], outputs: ['y'], name: 'clip' },
      ],
      initializers: [
        { name: 'k', dims: [1, 3, 1, 1], data: Float32Array.of(1, 2, 3) },
        { name: 'lo', dims: [], data: Float32Array.of(0) },
        { name: 'hi', dims: [], data: Float32Array.of(6) },
      ],
      inputs: [{ name: 'x', shape: ['N', 1, 2, 3] }],
      outputs: [{ name: 'y' }],
    });
    const session = await ort.InferenceSession.create(model);
    try {
      const x = new ort.Tensor('float32', Float32Array.of(1, 1, 1, -1, 2, 3), [1, 1, 2, 3]);
      const { y } = await session.run({ x });
      assert.deepEqual(y!.dims, [1, 3, 1, 2]);
      // Channel c of pixel p is x[p][c] × (c + 1), clipped: pixel 0 = (1, 1, 1), pixel 1 = (-1, 2, 3).
      assert.deepEqual([...(y!.data as Float32Array)], [1, 0, 2, 4, 3, 6]);
    } finally {
      await session.release();
    }
  });
});

describe('CenterNet converted to ONNX once, beside the weights', () => {
  let dir: string;
  let scratch: string;
  before(async () => {
    ({ dir } = await ensureModels());
    scratch = await mkdtemp(path.join(tmpdir(), 'pixvote-models-'));
  });
  after(() => rm(scratch, { recursive: true, force: true }));

  test('the conversion gives the same bytes every time: those the manifest pins and ensureModels wrote', async () => {
    const { converted } = (await readManifest()).models['centernet']!;
    const [first, second] = [await convertCenterNet(dir), await convertCenterNet(dir)];
    assert.ok(Buffer.from(first).equals(second), 'two conversions differ');
    assert.deepEqual([sha256Hex(first), first.length], [converted.sha256, converted.bytes]);
    assert.ok((await readFile(path.join(dir, converted.path))).equals(first));
  });

  test('ensureModels converts where the ONNX file is missing or differs, and only there; fetches nothing', async () => {
    const { files, converted } = (await readManifest()).models['centernet']!;
    const modelDir = path.join(scratch, 'centernet');
    await mkdir(modelDir, { recursive: true });
    for (const file of files) await copyFile(path.join(dir, file.path), path.join(modelDir, file.path));
    const logged: string[] = [];
    const ensure = () => ensureModels(scratch, { log: (m) => logged.push(m) });
    assert.deepEqual(await ensure(), {
      dir: modelDir,
      modelPath: path.join(modelDir, 'centernet.json'),
      model: 'centernet',
      fetched: false,
      converted: true,
    });
    assert.match(logged.join('\n'), /converting centernet\.json to centernet\.onnx/);
    assert.equal((await ensure()).converted, false);
    await writeFile(path.join(modelDir, converted.path), 'not a model');
    assert.equal((await ensure()).converted, true);
    assert.equal(sha256Hex(await readFile(path.join(modelDir, converted.path))), converted.sha256);
  });

  test('the workers load the converted file, never convert: without it the ONNX runtime does not load', async () => {
    const ort = await loadOnnxRuntime();
    const weightsOnly = path.join(scratch, 'weights-only');
    await mkdir(weightsOnly, { recursive: true });
    await copyFile(path.join(dir, 'centernet.json'), path.join(weightsOnly, 'centernet.json'));
    await assert.rejects(loadCenterNet({ runtime: 'onnx', ort }, weightsOnly), /no centernet\.onnx in .*fetch-models/);
  });
});

describe('CenterNet converted to ONNX', () => {
  let tf: Tf;
  let ort: OnnxRuntime;
  let dir: string;
  let onTfjs: CenterNet;
  let onOnnx: CenterNet;
  let photos: LabelledPhoto[];

  before(async () => {
    [{ tf }, ort, { dir }, photos] = await Promise.all([
      loadTfRuntime(),
      loadOnnxRuntime(),
      ensureModels(),
      getLabelledPhotos(),
    ]);
    onTfjs = await loadCenterNet({ runtime: 'tfjs', tf }, dir);
    onOnnx = await loadCenterNet({ runtime: 'onnx', ort }, dir);
  });
  after(() => {
    onTfjs?.dispose();
    onOnnx?.dispose();
  });

  /** Photos fitted inside `height`×`width` (multiples of 32), padded to it, as one batch. */
  async function batchOf(names: string[], height: number, width: number): Promise<ModelBatch> {
    const images = await Promise.all(
      names.map((name) => rgbOf(photos.find((p) => p.name === name)!.path, Math.min(height, width))),
    );
    return paddedBatch(images, { height, width });
  }

  test('gives the TF.js graph’s heatmap and box edges, in batches and at several shapes', async () => {
    assert.equal(onOnnx.runtime, 'onnx');
    assert.equal(onTfjs.runtime, 'tfjs');
    for (const [height, width] of [
      [224, 320],
      [320, 224],
      [320, 320],
      [672, 1024],
    ] as const) {
      const input = await batchOf(['small-trio', 'sheep-detail'], height, width);
      const [a, b] = [await onTfjs.run(input), await onOnnx.run(input)];
      assert.equal(b.length, 2);
      for (const [i, out] of b.entries()) {
        const ref = a[i]!;
        assert.deepEqual([out.gridHeight, out.gridWidth], [height / 4, width / 4]);
        assert.deepEqual([out.heatmap.length, out.edges.length], [ref.heatmap.length, ref.edges.length]);
        assert.ok(maxDiff(out.heatmap, ref.heatmap) < 1e-4, `heatmap ±${maxDiff(out.heatmap, ref.heatmap)}`);
        // Edges are distances in input pixels (up to hundreds): float32 sums in another order differ in the
        // last bits.
        assert.ok(maxDiff(out.edges, ref.edges) < 0.05, `edges ±${maxDiff(out.edges, ref.edges)}`);
      }
      assert.ok(Math.max(...a[0]!.heatmap) > 0.3, 'the first photo has people: scores are not all near 0');
    }
  });

  test('the full 80-class head converts too, its person channel the cut head’s', async () => {
    const full = await onnxCenterNet(ort, await convertCenterNet(dir, { allClasses: true }));
    const input = await batchOf(['small-trio'], 224, 320);
    try {
      const [cut, all] = [(await onOnnx.run(input))[0]!, (await full.run(input))[0]!];
      assert.equal(all.heatmap.length, cut.heatmap.length);
      assert.ok(maxDiff(all.heatmap, cut.heatmap) < 1e-5);
    } finally {
      full.dispose();
    }
  });

  test('refuses input shapes the graph cannot take, as on TF.js', async () => {
    const input = { data: new Float32Array(100 * 128 * 3), images: 1, height: 100, width: 128 };
    await assert.rejects(onOnnx.run(input), /multiples of 32 between 64 and 1024 but received 100×128/);
  });

  test('a graph op it does not know fails the conversion, naming the op', () => {
    const artifacts: io.ModelArtifacts = {
      modelTopology: {
        node: [
          { name: 'in', op: 'Placeholder', attr: {} },
          { name: 'out', op: 'Softplus', input: ['in'], attr: {} },
        ],
      },
      weightSpecs: [],
      weightData: new ArrayBuffer(0),
    };
    assert.throws(
      () => tfGraphToOnnx(artifacts, { input: 'in', outputs: ['out'], upsampleDivisors: new Map() }),
      /out: TF op Softplus is not converted to ONNX/,
    );
  });
});

describe('model input prepared in JS, as TF.js prepares it', () => {
  /** A random `width`×`height` image with `channels` channels. */
  const randomImage = (width: number, height: number, channels: 1 | 3 | 4): RawImage => ({
    data: Uint8Array.from({ length: width * height * channels }, () => Math.floor(Math.random() * 256)),
    width,
    height,
    channels,
  });
  const tfRgb = (tf: Tf, rgb: RawImage): Tensor3D => {
    const t = tf.tensor3d(rgb.data, [rgb.height, rgb.width, rgb.channels], 'float32');
    return rgb.channels === 3 ? t : rgb.channels === 1 ? tf.tile(t, [1, 1, 3]) : tf.slice(t, [0, 0, 0], [-1, -1, 3]);
  };

  test('writeModelInput: resized (half-pixel bilinear), cut and padded like resizeBilinear + pad', async () => {
    const { tf } = await loadTfRuntime();
    for (const channels of [1, 3, 4] as const) {
      const rgb = randomImage(517, 389, channels);
      const frame = fitFrame(rgb, 320); // 320×241 in a 320×256 input: a resize and a vertical padding
      const batch = {
        data: new Float32Array(2 * frame.inputHeight * frame.inputWidth * 3),
        images: 2,
        height: 256,
        width: 320,
      };
      writeModelInput(rgb, frame, batch, 1);
      const expected = tf.tidy(() => {
        const resized = tf.image.resizeBilinear(tfRgb(tf, rgb), [frame.scaledHeight, frame.scaledWidth], false, true);
        const padY = Math.floor((frame.inputHeight - frame.scaledHeight) / 2);
        return tf.pad(resized, [
          [padY, frame.inputHeight - frame.scaledHeight - padY],
          [0, frame.inputWidth - frame.scaledWidth],
          [0, 0],
        ]);
      });
      const want = expected.dataSync() as Float32Array;
      expected.dispose();
      const got = batch.data.subarray(want.length);
      // wasm's kernels round in float32 differently: hundredths of a level of 255.
      assert.ok(maxDiff(got, want) < 0.05, `${channels} channels: ±${maxDiff(got, want)}`);
      assert.ok(
        batch.data.subarray(0, want.length).every((v) => v === 0),
        'image 0 of the batch untouched',
      );
    }
  });

  test('writeCrop: a square crop resampled like cropAndResize', async () => {
    const { tf } = await loadTfRuntime();
    const source = randomImage(1024, 683, 3);
    for (const crop of [
      { left: 100, top: 50, side: 200 },
      { left: 0, top: 0, side: 683 },
      { left: 900, top: 600, side: 83 },
    ]) {
      const batch = { data: new Float32Array(64 * 64 * 3), images: 1, height: 64, width: 64 };
      writeCrop(source, crop, batch, 0);
      const expected = tf.tidy(() =>
        tf.image.cropAndResize(
          tf.expandDims<Tensor4D>(tfRgb(tf, source), 0),
          tf.tensor2d(
            [[crop.top / 682, crop.left / 1023, (crop.top + crop.side - 1) / 682, (crop.left + crop.side - 1) / 1023]],
            [1, 4],
          ),
          tf.zeros([1], 'int32'),
          [64, 64],
        ),
      );
      const want = expected.dataSync() as Float32Array;
      expected.dispose();
      assert.ok(maxDiff(batch.data, want) < 0.05, `crop ${JSON.stringify(crop)}: ±${maxDiff(batch.data, want)}`);
    }
  });
});

describe('person detector on either runtime', () => {
  let onOnnx: PersonDetector;
  let onTfjs: PersonDetector;
  let photos: LabelledPhoto[];

  before(async () => {
    const [{ dir: modelDir }, labelled] = await Promise.all([ensureModels(), getLabelledPhotos()]);
    photos = labelled;
    onOnnx = await createPersonDetector({ modelDir, closerLook: BOX_CLOSER_LOOK });
    onTfjs = await createPersonDetector({ modelDir, closerLook: BOX_CLOSER_LOOK, runtime: 'tfjs' });
  });
  after(() => {
    onOnnx?.dispose();
    onTfjs?.dispose();
  });

  test('auto picks onnxruntime where it loads; tfjs runs on wasm', () => {
    assert.equal(onOnnx.backend, 'onnxruntime');
    assert.equal(onTfjs.backend, 'wasm');
    assert.equal(onOnnx.model, onTfjs.model);
  });

  test('both score every held-out photo alike, closer looks included', async () => {
    const heldOut = photos.filter((p) => p.split === 'held-out');
    assert.ok(heldOut.length >= 30);
    for (const photo of heldOut) {
      const [rgb, medium] = await Promise.all([rgbOf(photo.path, 320), rgbOf(photo.path, 1024)]);
      const [a, b] = [await onOnnx.detect(rgb, async () => medium), await onTfjs.detect(rgb, async () => medium)];
      assert.ok(Math.abs(a.score - b.score) < 1e-3, `${photo.name}: onnx ${a.score}, tfjs ${b.score}`);
      assert.equal(a.boxes.length, b.boxes.length, photo.name);
    }
  });
});
