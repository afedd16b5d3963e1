/**
 * The CenterNet graph model of models/manifest.json, loaded once for inputs of any shape and run
 * for its two raw outputs: the person channel of the class heatmap and the box-edge distances.
 */
import { access } from 'node:fs/promises';
import path from 'node:path';
import type { GraphModel } from '@tensorflow/tfjs-converter';
import type { io, Tensor, Tensor4D } from '@tensorflow/tfjs-core';
import { readArtifacts, weights } from './graph-artifacts.ts';
import { tfGraphToOnnx } from './centernet.onnx.ts';
import type { OnnxRuntime as Ort } from './onnx-runtime.loader.ts';
import type { Tf } from './tfjs-backend.loader.ts';

const CENTERNET_FILE = 'centernet.json';
/** The size the graph was exported for; its upsampling constants are sized for it. */
const CENTERNET_TRAINED_SIZE = 512;
/** Output grid cell in input pixels. */
export const CENTERNET_STRIDE = 4;
/** COCO class 'person', of 80. */
const PERSON_CLASS = 0;
const COCO_CLASSES = 80;

const INPUT = 'tower_0/images';
const HEATMAP = 'tower_0/keypoints';
const EDGES = 'tower_0/wh';
// UpSampling2D exported as ResizeBilinear with a constant output size (32, 64, 128 at 512 px).
const UPSAMPLE_SIZE = /\/up_sampling2d(_\d+)?\/mul$/;
/** The class head's last (pointwise) convolution: one output channel per COCO class, and its biases. */
const CLASS_HEAD = {
  weights: 'CenternetHead/centernet_cls_output/pointwise_weights',
  biases: 'CenternetHead/centernet_cls_output/biases',
};

/**
 * The class head's last convolution cut down to the person channel: its pointwise weights [1, 1, C, 80] become
 * [1, 1, C, 1] and its 80 biases one, in the weight buffer, so the graph computes (and the sigmoid and the read
 * back touch) one heatmap channel instead of 80. The person scores are the same numbers: each output channel
 * of a pointwise convolution is computed from its own weights alone.
 */
function keepPersonClassOnly(artifacts: io.ModelArtifacts): void {
  const kept: Uint8Array[] = [];
  let cut = 0;
  for (const { spec, count, size, bytes } of weights(artifacts)) {
    if (spec.name !== CLASS_HEAD.weights && spec.name !== CLASS_HEAD.biases) {
      kept.push(bytes);
      continue;
    }
    const classes = spec.shape[spec.shape.length - 1]!;
    if (classes !== COCO_CLASSES || spec.quantization?.scale !== undefined)
      throw new Error(`${CENTERNET_FILE}: unexpected ${spec.dtype}[${spec.shape}] for ${spec.name}`);
    const person = new Uint8Array((count / classes) * size);
    for (let i = 0; i < count / classes; i++) {
      person.set(
        bytes.subarray((i * classes + PERSON_CLASS) * size, (i * classes + PERSON_CLASS + 1) * size),
        i * size,
      );
    }
    kept.push(person);
    spec.shape = [...spec.shape.slice(0, -1), 1];
    cut++;
  }
  if (cut !== 2) throw new Error(`${CENTERNET_FILE}: expected the class head's weights and biases, found ${cut} of 2`);
  const out = new Uint8Array(kept.reduce((n, b) => n + b.length, 0));
  let at = 0;
  for (const b of kept) {
    out.set(b, at);
    at += b.length;
  }
  artifacts.weightData = out.buffer;
}

/** Raw outputs for one image, on a `gridWidth`×`gridHeight` grid (input size / 4), row-major. */
export interface CenterNetOutput {
  gridWidth: number;
  gridHeight: number;
  /** Person probability per cell. */
  heatmap: Float32Array;
  /** Per cell: distances from (4x, 4y) to the box's left, top, right, bottom edges, input pixels. */
  edges: Float32Array;
}

/** A batch of `images` RGB images of one shape, NHWC floats in 0–255 (`images`×`height`×`width`×3 values). */
export interface ModelBatch {
  data: Float32Array;
  images: number;
  height: number;
  width: number;
}

export interface CenterNet {
  /**
   * `input`: H and W multiples of 32 (any shape: the graph is made shape-free at load), a batch of N images of one
   * shape run as one; one output per image, in order.
   */
  run(input: ModelBatch): Promise<CenterNetOutput[]>;
  runtime: CenterNetRuntime;
  dispose(): void;
}

/** Smallest and largest input side accepted. */
export const CENTERNET_MIN_SIDE = 64;
export const CENTERNET_MAX_SIDE = 1024;

/** Where the model runs: TF.js on its backend, or onnxruntime-node (the graph converted at load). */
export type CenterNetRuntime = CenterNetEngine['runtime'];

/** The model on its runtime: TF.js (`tf`, any backend) or onnxruntime-node (`ort`, the graph converted to ONNX). */
export type CenterNetEngine = { runtime: 'tfjs'; tf: Tf } | { runtime: 'onnx'; ort: Ort };

/**
 * Loads the model from `modelDir` (or its `centernet/` subdirectory), for inputs of any multiple-of-32 shape. On
 * onnxruntime-node the graph is converted to ONNX in memory (centernet.onnx.ts) and TF.js is not loaded at all.
 */
export async function loadCenterNet(
  engine: CenterNetEngine,
  modelDir: string,
  opts: { /** Keep all 80 class channels (tests compare the cut-down head against them). */ allClasses?: boolean } = {},
): Promise<CenterNet> {
  const artifacts = await readArtifacts(await findModelDir(modelDir), CENTERNET_FILE);
  const upsampleDivisors = freeInputShape(artifacts);
  if (!opts.allClasses) keepPersonClassOnly(artifacts);
  if (engine.runtime === 'onnx') {
    const conversion = { input: INPUT, outputs: [HEATMAP, EDGES], upsampleDivisors };
    return onnxCenterNet(engine.ort, tfGraphToOnnx(artifacts, conversion));
  }
  const { tf } = engine;
  const model: GraphModel = await tf.loadGraphModel(tf.io.fromMemory(artifacts));
  /** The upsampling output sizes per input shape "HxW": one int32 [2] tensor per upsampling step. */
  const sizesByShape = new Map<string, Record<string, Tensor>>();
  const upsampleSizes = (height: number, width: number): Record<string, Tensor> => {
    const key = `${height}x${width}`;
    let sizes = sizesByShape.get(key);
    if (!sizes) {
      sizes = Object.fromEntries(
        [...upsampleDivisors].map(([name, d]) => [name, tf.tensor1d([height / d, width / d], 'int32')]),
      );
      sizesByShape.set(key, sizes);
    }
    return sizes;
  };

  return {
    runtime: 'tfjs',
    async run({ data, images, height, width }) {
      checkInputShape(height, width);
      // The executor copies its weight map on every execute: these constants hold for this call only.
      for (const [name, size] of Object.entries(upsampleSizes(height, width))) model.weights[name] = [size];
      // The class head computes the person channel only (keepPersonClassOnly): the heatmap is [N, H/4, W/4, 1].
      const [heat, edges] = tf.tidy(() => {
        const input = tf.tensor4d(data, [images, height, width, 3], 'float32');
        const [keypoints, wh] = model.execute(input, [HEATMAP, EDGES]) as [Tensor4D, Tensor4D];
        if (keypoints.shape[3] === 1) return [keypoints, wh];
        return [tf.slice(keypoints, [0, 0, 0, PERSON_CLASS], [-1, -1, -1, 1]), wh];
      });
      try {
        const [heatmap, distances] = await Promise.all([heat.data<'float32'>(), edges.data<'float32'>()]);
        return perImage(heatmap, distances, heat.shape);
      } finally {
        tf.dispose([heat, edges]);
      }
    },
    dispose: () => {
      model.dispose();
      for (const sizes of sizesByShape.values()) tf.dispose(Object.values(sizes));
    },
  };
}

/**
 * The converted graph on onnxruntime-node: one thread per session, as the pool runs one worker per core. Its arena
 * keeps the largest activations so far for the next run; the memory-pattern planner is off (it keeps buffers
 * planned per input shape: more memory for no measured gain).
 */
async function onnxCenterNet(ort: Ort, model: Uint8Array): Promise<CenterNet> {
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    enableMemPattern: false,
  });
  return {
    runtime: 'onnx',
    async run({ data, images, height, width }) {
      checkInputShape(height, width);
      const feed = new ort.Tensor('float32', data, [images, height, width, 3]);
      const results = await session.run({ images: feed }, [HEATMAP, EDGES]);
      const heat = results[HEATMAP]!;
      const edges = results[EDGES]!;
      try {
        let heatmap = heat.data as Float32Array;
        if (heat.dims[3] !== 1) heatmap = heatmap.filter((_, i) => i % heat.dims[3]! === PERSON_CLASS);
        return perImage(heatmap, edges.data as Float32Array, heat.dims);
      } finally {
        feed.dispose();
        heat.dispose();
        edges.dispose();
      }
    },
    dispose: () => void session.release(),
  };
}

function checkInputShape(height: number, width: number): void {
  for (const side of [height, width]) {
    if (side % 32 !== 0 || side < CENTERNET_MIN_SIDE || side > CENTERNET_MAX_SIDE) {
      throw new Error(
        `Expected input sides that are multiples of 32 between ${CENTERNET_MIN_SIDE} and ` +
          `${CENTERNET_MAX_SIDE} but received ${height}×${width}`,
      );
    }
  }
}

/** The batch's outputs cut per image: `shape` is the heatmap's [N, H/4, W/4, …]. */
function perImage(heatmap: Float32Array, distances: Float32Array, shape: readonly number[]): CenterNetOutput[] {
  const [images, gridHeight, gridWidth] = shape as [number, number, number];
  const cells = gridHeight * gridWidth;
  return Array.from({ length: images }, (_, i) => ({
    gridWidth,
    gridHeight,
    heatmap: heatmap.slice(i * cells, (i + 1) * cells),
    edges: distances.slice(i * cells * 4, (i + 1) * cells * 4),
  }));
}

/** `dir` itself, or its `centernet/` subdirectory when given the models root (MODELS_DIR). */
async function findModelDir(dir: string): Promise<string> {
  const candidates = [dir, path.join(dir, 'centernet')];
  for (const candidate of candidates) {
    try {
      await access(path.join(candidate, CENTERNET_FILE));
      return candidate;
    } catch {
      // try the next one
    }
  }
  throw new Error(
    `no ${CENTERNET_FILE} in ${candidates.join(' or ')}: ` +
      'run `node scripts/fetch-models.ts` or call ensureModels() first',
  );
}

/**
 * The graph is fully convolutional except for two things fixed at export: the input placeholder's
 * shape and the output sizes of three upsampling steps (constants sized for 512×512). The placeholder is
 * made [-1, -1, -1, 3] (free batch, height and width); the upsampling sizes are given per call (see run),
 * each as the input's height and width divided by the returned divisor (16, 8, 4).
 */
function freeInputShape(artifacts: io.ModelArtifacts): Map<string, number> {
  const topology = artifacts.modelTopology as {
    node: Array<{ name: string; op: string; attr?: { shape?: { shape: { dim: unknown } } } }>;
  };
  const dims = [-1, -1, -1, 3].map((n) => ({ size: String(n) }));
  const placeholder = topology.node.find((node) => node.op === 'Placeholder' && node.name === INPUT);
  if (!placeholder?.attr?.shape) throw new Error(`${CENTERNET_FILE} has no placeholder ${INPUT}`);
  placeholder.attr.shape.shape.dim = dims;
  // tfjs types `signature` as `{}`, which the rule wrongly takes for the asserted shape.
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
  const signature = artifacts.signature as { inputs?: Record<string, { tensorShape: { dim: unknown } }> } | undefined;
  const signatureInput = signature?.inputs?.[INPUT];
  if (signatureInput) signatureInput.tensorShape.dim = dims;

  const divisors = new Map<string, number>();
  for (const { spec, count, bytes } of weights(artifacts)) {
    if (!UPSAMPLE_SIZE.test(spec.name)) continue;
    if (spec.dtype !== 'int32' || count !== 2)
      throw new Error(`${CENTERNET_FILE}: unexpected ${spec.dtype}[${spec.shape}] for ${spec.name}`);
    const first = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getInt32(0, true);
    divisors.set(spec.name, CENTERNET_TRAINED_SIZE / first);
  }
  if (divisors.size !== 3 || [...divisors.values()].some((d) => !Number.isInteger(d)))
    throw new Error(`${CENTERNET_FILE}: expected 3 upsampling size constants, found ${[...divisors.values()]}`);
  return divisors;
}
