/**
 * Person detection stage: a COCO CenterNet (models/manifest.json) on TensorFlow.js, loaded once per
 * worker thread, answering "is there a person in this picture, and where".
 */
import type { Rank, Tensor4D } from '@tensorflow/tfjs-core';
import { CENTERNET_STRIDE, loadCenterNet, type CenterNetOutput } from '../detector/centernet.model.ts';
import { DEFAULT_MODELS_DIR } from '../detector/model-files.fetch.ts';
import { boxAt, heatmapPeaks, nonMaxSuppression, toImageBox } from '../detector/person-boxes.decode.ts';
import { loadTfRuntime, type Tf } from '../detector/tfjs-backend.loader.ts';
import type { PersonDetection, PersonDetector, RawImage } from './types.ts';

export interface PersonDetectorOptions {
  /**
   * `ensureModels().dir` (the directory with centernet.json/.bin) or the models root above it;
   * defaults to `<repo>/models`.
   */
  modelDir?: string;
  /** Square model input, a multiple of 32. 384 is the calibrated speed/recall balance (bench/calibrate-detector.ts). */
  inputSize?: number;
  /** Heatmap peaks below this are not boxes at all; scores under it read as 0. */
  minScore?: number;
  /** Boxes overlapping a better one by more than this IoU are dropped. */
  iouThreshold?: number;
  maxBoxes?: number;
}

export const DEFAULT_INPUT_SIZE = 384;
/** Peaks decoded per image; more than any photo has people, fewer than would cost time. */
const MAX_PEAKS = 100;
/**
 * Frames per model call. On wasm a batch costs less CPU per frame than single frames, but the wasm heap
 * grows with the batch and never shrinks, so 4 (figures: bench/README.md, "Media pipeline").
 */
export const MAX_BATCH = 4;

/** Loads the backend (tfjs-node or wasm, never cpu) and the model; call once per thread. */
export async function createPersonDetector(options: PersonDetectorOptions = {}): Promise<PersonDetector> {
  const { minScore = 0.05, iouThreshold = 0.5, maxBoxes = 20 } = options;
  const modelDir = options.modelDir || DEFAULT_MODELS_DIR;
  const { tf, backend } = await loadTfRuntime();
  const net = await loadCenterNet(tf, modelDir, options.inputSize ?? DEFAULT_INPUT_SIZE);
  const size = net.inputSize;
  // The first run on a backend sets up its kernels (a few times slower); pay that at start-up, not on an upload.
  const blank = tf.zeros<Rank.R4>([1, size, size, 3]);
  await net.run(blank).finally(() => blank.dispose());

  /** One model call on up to MAX_BATCH images: each letterboxed into the square input, stacked as a batch. */
  async function runBatch(images: readonly RawImage[]): Promise<PersonDetection[]> {
    const frames = images.map((rgb) => letterbox(rgb, size));
    const input = tf.tidy(() => {
      const each = images.map((rgb, i) => toModelInput(tf, rgb, frames[i]!));
      return each.length === 1 ? each[0]! : tf.concat<Tensor4D>(each, 0);
    });
    let outputs: CenterNetOutput[];
    try {
      outputs = await net.run(input);
    } finally {
      input.dispose();
    }
    return outputs.map((output, i) => {
      const candidates = heatmapPeaks(output.heatmap, output.gridSize, minScore, MAX_PEAKS).map(({ cell, score }) =>
        toImageBox(boxAt(cell, score, output.edges, output.gridSize, CENTERNET_STRIDE), frames[i]!),
      );
      const boxes = nonMaxSuppression(candidates, iouThreshold, maxBoxes);
      return {
        score: boxes[0]?.score ?? 0,
        boxes: boxes.map(({ x1, y1, x2, y2, score }) => ({ x: x1, y: y1, width: x2 - x1, height: y2 - y1, score })),
      };
    });
  }

  return {
    backend,
    model: 'centernet',
    inputSpec: { size, fit: 'contain' },
    maxBatch: MAX_BATCH,
    async detect(rgb) {
      return (await runBatch([rgb]))[0]!;
    },
    async detectMany(images) {
      const results: PersonDetection[] = [];
      for (let at = 0; at < images.length; at += MAX_BATCH)
        results.push(...(await runBatch(images.slice(at, at + MAX_BATCH))));
      return results;
    },
    dispose: () => net.dispose(),
  };
}

/**
 * The pipeline's detect stage: `rgb` prepared per `detector.inputSpec`. Other sizes work, resized on
 * the backend, but pass prepared pixels: the wasm heap grows to the largest input and never shrinks.
 */
export async function detectStage(detector: PersonDetector, rgb: RawImage): Promise<PersonDetection> {
  return detector.detect(rgb);
}

/** Where the image lands in the square input: scaled to fit, centred on black, as the model was trained. */
interface Frame {
  size: number;
  scale: number;
  /** The image's size once scaled into the input. */
  scaledWidth: number;
  scaledHeight: number;
  padX: number;
  padY: number;
  /** The image's own size. */
  width: number;
  height: number;
}

function letterbox(rgb: RawImage, size: number): Frame {
  const { width, height, channels, data } = rgb;
  if (!(width > 0 && height > 0) || data.length !== width * height * channels) {
    throw new Error(
      `Expected ${width}×${height}×${channels} = ${width * height * channels} bytes of pixels ` +
        `but received ${data.length}`,
    );
  }
  const scale = size / Math.max(width, height);
  const scaledWidth = Math.max(1, Math.round(width * scale));
  const scaledHeight = Math.max(1, Math.round(height * scale));
  const padX = Math.floor((size - scaledWidth) / 2);
  const padY = Math.floor((size - scaledHeight) / 2);
  return { size, scale, scaledWidth, scaledHeight, padX, padY, width, height };
}

function toModelInput(tf: Tf, rgb: RawImage, frame: Frame): Tensor4D {
  const { size, scaledWidth, scaledHeight, padX, padY } = frame;
  return tf.tidy(() => {
    let pixels = tf.tensor3d(rgb.data, [rgb.height, rgb.width, rgb.channels], 'float32');
    if (rgb.channels === 4) pixels = tf.slice(pixels, [0, 0, 0], [-1, -1, 3]);
    if (rgb.channels === 1) pixels = tf.tile(pixels, [1, 1, 3]);
    if (scaledWidth !== rgb.width || scaledHeight !== rgb.height) {
      pixels = tf.image.resizeBilinear(pixels, [scaledHeight, scaledWidth], false, true);
    }
    const padded = tf.pad(pixels, [
      [padY, size - scaledHeight - padY],
      [padX, size - scaledWidth - padX],
      [0, 0],
    ]);
    return tf.expandDims<Tensor4D>(padded, 0);
  });
}
