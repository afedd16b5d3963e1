/**
 * The CenterNet graph model of models/manifest.json, loaded once for inputs of any shape and run
 * for its two raw outputs: the person channel of the class heatmap and the box-edge distances.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { GraphModel } from '@tensorflow/tfjs-converter';
import type { Tensor, Tensor4D } from '@tensorflow/tfjs-core';
import {
  CENTERNET_ONNX_FILE,
  EDGES,
  findModelDir,
  HEATMAP,
  PERSON_CLASS,
  readCenterNetGraph,
} from './centernet.graph.ts';
import type { OnnxRuntime as Ort } from './onnx-runtime.loader.ts';
import type { Tf } from './tfjs-backend.loader.ts';

/** Output grid cell in input pixels. */
export const CENTERNET_STRIDE = 4;

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

/** Where the model runs: TF.js on its backend, or onnxruntime-node (the graph converted once, to a file). */
export type CenterNetRuntime = CenterNetEngine['runtime'];

/** The model on its runtime: TF.js (`tf`, any backend) or onnxruntime-node (`ort`, the graph converted to ONNX). */
export type CenterNetEngine = { runtime: 'tfjs'; tf: Tf } | { runtime: 'onnx'; ort: Ort };

/**
 * Loads the model from `modelDir` (or its `centernet/` subdirectory), for inputs of any multiple-of-32 shape. On
 * onnxruntime-node it runs the ONNX file converted once by ensureModels (centernet.onnx.ts, verified there by
 * sha256), and TF.js is not loaded at all; on TF.js it runs the graph made shape-free (centernet.graph.ts).
 */
export async function loadCenterNet(
  engine: CenterNetEngine,
  modelDir: string,
  opts: {
    /** TF.js: keep all 80 class channels (tests compare the cut-down head against them). */ allClasses?: boolean;
  } = {},
): Promise<CenterNet> {
  if (engine.runtime === 'onnx') {
    if (opts.allClasses) throw new Error('the converted model has the person channel only: see convertCenterNet');
    const dir = await findModelDir(modelDir, CENTERNET_ONNX_FILE);
    return onnxCenterNet(engine.ort, await readFile(path.join(dir, CENTERNET_ONNX_FILE)));
  }
  const { artifacts, upsampleDivisors } = await readCenterNetGraph(modelDir, opts);
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
 * A converted graph (centernet.onnx.ts) on onnxruntime-node: one thread per session, as the pool runs one worker
 * per core. Its arena keeps the largest activations so far for the next run; the memory-pattern planner is off (it
 * keeps buffers planned per input shape: more memory for no measured gain).
 */
export async function onnxCenterNet(ort: Ort, model: Uint8Array): Promise<CenterNet> {
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
