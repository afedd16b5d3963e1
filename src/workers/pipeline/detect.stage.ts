/**
 * Person detection stage: a COCO CenterNet (models/manifest.json) on onnxruntime-node where it loads, else on
 * TensorFlow.js, loaded once per worker thread, answering "is there a person in this picture, and where".
 * TensorFlow.js prepares the model's input tensors either way.
 */
import type { Rank, Tensor3D, Tensor4D } from '@tensorflow/tfjs-core';
import { CENTERNET_STRIDE, loadCenterNet, type CenterNetOutput } from '../detector/centernet.model.ts';
import { DEFAULT_MODELS_DIR } from '../detector/model-files.fetch.ts';
import { boxAt, heatmapPeaks, nonMaxSuppression, toImageBox, type ScoredBox } from '../detector/person-boxes.decode.ts';
import { loadOnnxRuntime, type OnnxRuntime } from '../detector/onnx-runtime.loader.ts';
import { loadTfRuntime, type Tf } from '../detector/tfjs-backend.loader.ts';
import type { CloserSource, DetectorRuntime, PersonDetection, PersonDetector, RawImage } from './types.ts';

export interface PersonDetectorOptions {
  /**
   * `ensureModels().dir` (the directory with centernet.json/.bin) or the models root above it;
   * defaults to `<repo>/models`.
   */
  modelDir?: string;
  /**
   * Long side of the first look: the whole image, aspect ratio kept, padded to multiples of 32 (calibrated:
   * bench/detector-eval.ts).
   */
  inputSize?: number;
  /** A look in tiles at higher resolution, where the first one is unsure; default none (evaluated, not shipped). */
  tiledLook?: TiledLook | null;
  /** A closer look at each box the first look found, where it is unsure; default none. */
  closerLook?: CloserLook | null;
  /**
   * Where the model runs: `onnx` (onnxruntime-node, 3–4× less CPU than TF.js on wasm: bench/README.md), `tfjs`,
   * or `auto` (default): onnx where onnxruntime-node loads, else tfjs.
   */
  runtime?: DetectorRuntime;
  /** Heatmap peaks below this are not boxes at all; scores under it read as 0. */
  minScore?: number;
  /** Boxes overlapping a better one by more than this IoU are dropped. */
  iouThreshold?: number;
  maxBoxes?: number;
}

/**
 * A look in tiles at an image whose first-look score is in [from, to): the image at `size` px on its
 * long side, cut into `tile`×`tile` tiles overlapping by at least `overlap` of a tile (one tile, the whole
 * image, when `size` ≤ `tile`), the tiles run as one batch. Small people (a quarter of the frame) are
 * 40 px tall in a 256 px first look and 80–130 px in a tile: big enough for the model.
 */
export interface TiledLook {
  from: number;
  to: number;
  size: number;
  tile: number;
  overlap?: number;
}

/**
 * A closer look at the boxes of an image whose first-look score is under `sure`: each of the first look's best
 * `maxBoxes` boxes is cut from the image at `sourceSize` px (the medium variant), as a square of `context` times
 * the box's longer side (at least `minShare` of the source's long side), and run through the model at
 * `size`×`size`, the crops as one batch. The crops' best box then decides instead of the first look: a small
 * person fills a crop and scores high, while what only looked like one at 320 px (sheep, statues, a mandrill)
 * scores low once seen closer (bench/detector-eval.md). The image's score is the crops' best score.
 */
export interface CloserLook {
  sure: number;
  sourceSize: number;
  size: number;
  context: number;
  minShare: number;
  maxBoxes: number;
}

/** The closer look HUMAN_SECOND_LOOK=boxes turns on (calibrated: bench/detector-eval.md). */
export const BOX_CLOSER_LOOK: CloserLook = {
  sure: 0.35,
  sourceSize: 1024,
  size: 320,
  context: 1.5,
  minShare: 0.125,
  maxBoxes: 3,
};

/** bench/detector-eval.md: 0.39× today's 384 px square letterbox's model time, the same held-out recall. */
export const DEFAULT_INPUT_SIZE = 320;
/**
 * A tiled look evaluated in bench/detector-eval.md; off by default: on the evaluation set the score bands of
 * small people and of people-free photos overlap, so it ran on too many images to fit the budget.
 */
export const TILED_LOOK: TiledLook = { from: 0.1, to: 0.45, size: 640, tile: 384, overlap: 0.2 };
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
  const firstSize = options.inputSize ?? DEFAULT_INPUT_SIZE;
  const tiled = options.tiledLook ?? null;
  const closer = options.closerLook ?? null;
  for (const side of [firstSize, ...(tiled ? [tiled.size, tiled.tile] : []), ...(closer ? [closer.size] : [])]) {
    if (!Number.isInteger(side) || side % 32 !== 0 || side < 128 || side > 1024) {
      throw new Error(`Expected a multiple of 32 between 128 and 1024 for an input size but received ${side}`);
    }
  }
  const { tf, backend: tfBackend } = await loadTfRuntime();
  const ort = await pickOnnxRuntime(options.runtime ?? 'auto');
  const net = await loadCenterNet(tf, modelDir, { runtime: ort ? 'onnx' : 'tfjs' }, ort);
  const backend = ort ? 'onnxruntime' : tfBackend;
  // The first run on a backend sets up its kernels (a few times slower); pay that at start-up, not on an upload.
  const warmUp = async (height: number, width: number) => {
    const blank = tf.zeros<Rank.R4>([1, height, width, 3]);
    await net.run(blank).finally(() => blank.dispose());
  };
  await warmUp(firstSize, firstSize);
  if (tiled) await warmUp(tiled.tile, tiled.tile);
  if (closer) await warmUp(closer.size, closer.size);
  const preparedSize = Math.max(firstSize, tiled?.size ?? 0);

  /** Runs the model on `batch` (disposed after) and decodes each input into boxes in its image's pixels. */
  async function runBatch(batch: Tensor4D, frames: readonly BoxMapping[]): Promise<ScoredBox[][]> {
    let outputs: CenterNetOutput[];
    try {
      outputs = await net.run(batch);
    } finally {
      batch.dispose();
    }
    return outputs.map((output, i) => {
      const grid = { width: output.gridWidth, height: output.gridHeight };
      return heatmapPeaks(output.heatmap, grid, minScore, MAX_PEAKS).map(({ cell, score }) =>
        toImageBox(boxAt(cell, score, output.edges, grid.width, CENTERNET_STRIDE), frames[i]!),
      );
    });
  }

  /** Runs the model on same-shape inputs in one call. */
  function runSameShape(inputs: ReadonlyArray<{ rgb: RawImage; frame: Frame }>): Promise<ScoredBox[][]> {
    const batch = tf.tidy(() => {
      const each = inputs.map(({ rgb, frame }) => toModelInput(tf, rgb, frame));
      return each.length === 1 ? each[0]! : tf.concat<Tensor4D>(each, 0);
    });
    return runBatch(
      batch,
      inputs.map((input) => input.frame),
    );
  }

  const finish = (candidates: ScoredBox[]): PersonDetection => {
    const boxes = nonMaxSuppression(candidates, iouThreshold, maxBoxes);
    return {
      score: boxes[0]?.score ?? 0,
      boxes: boxes.map(({ x1, y1, x2, y2, score }) => ({ x: x1, y: y1, width: x2 - x1, height: y2 - y1, score })),
    };
  };

  /** The tiled look at one image: its tiles (crops of it at `tiled.size`), as one batch. */
  async function tiledLook(rgb: RawImage, look: TiledLook): Promise<ScoredBox[]> {
    const scale = Math.min(1, look.size / Math.max(rgb.width, rgb.height));
    const tiles = tileGrid(
      Math.max(1, Math.round(rgb.width * scale)),
      Math.max(1, Math.round(rgb.height * scale)),
      look.tile,
      look.overlap ?? 0.2,
    );
    const found: ScoredBox[] = [];
    for (let at = 0; at < tiles.length; at += MAX_BATCH) {
      const chunk = tiles.slice(at, at + MAX_BATCH).map((tile) => ({ rgb, frame: tileFrame(rgb, scale, tile) }));
      for (const boxes of await runSameShape(chunk)) found.push(...boxes);
    }
    return found;
  }

  /**
   * The closer look at `boxes` (in `rgb`'s pixels, best first) of one image, cut from `source` (the same image,
   * larger), as one batch; their boxes come back in `rgb`'s pixels.
   */
  async function closerLook(rgb: RawImage, source: RawImage, boxes: ScoredBox[], look: CloserLook) {
    checkPixels(source);
    const crops = boxes.slice(0, look.maxBoxes).map((box) => closeUpRegion(box, rgb, source, look));
    const batch = tf.tidy(() => {
      const { height, width } = source;
      const normalised = crops.map(({ left, top, side }) => [
        top / (height - 1 || 1),
        left / (width - 1 || 1),
        (top + side - 1) / (height - 1 || 1),
        (left + side - 1) / (width - 1 || 1),
      ]);
      return tf.image.cropAndResize(
        tf.expandDims<Tensor4D>(rgbTensor(tf, source), 0),
        tf.tensor2d(normalised, [crops.length, 4], 'float32'),
        tf.zeros([crops.length], 'int32'),
        [look.size, look.size],
      );
    });
    return (
      await runBatch(
        batch,
        crops.map((crop) => crop.frame),
      )
    ).flat();
  }

  /**
   * First look at every image (batched), then, for each one it is unsure of, the closer look at its boxes (given
   * a source) or the tiled look.
   */
  async function detectAll(images: readonly RawImage[], sources?: readonly CloserSource[]): Promise<PersonDetection[]> {
    for (const rgb of images) checkPixels(rgb);
    const firsts: ScoredBox[][] = [];
    // Frames of one animation share a shape: batch runs of equal shapes.
    for (let at = 0; at < images.length;) {
      const frame = fitFrame(images[at]!, firstSize);
      let end = at + 1;
      while (end < images.length && end - at < MAX_BATCH && sameSize(images[end]!, images[at]!)) end++;
      firsts.push(...(await runSameShape(images.slice(at, end).map((rgb) => ({ rgb, frame })))));
      at = end;
    }
    const results: PersonDetection[] = [];
    for (const [i, rgb] of images.entries()) {
      const first = firsts[i]!;
      const score = first.reduce((best, box) => Math.max(best, box.score), 0);
      const source = sources?.[i];
      if (closer && source && first.length > 0 && score < closer.sure) {
        const boxes = nonMaxSuppression(first, iouThreshold, closer.maxBoxes);
        results.push(finish(await closerLook(rgb, await source(), boxes, closer)));
        continue;
      }
      results.push(finish(needsTiledLook(score, tiled) ? [...first, ...(await tiledLook(rgb, tiled!))] : first));
    }
    return results;
  }

  return {
    backend,
    model:
      `centernet-${firstSize}` +
      (tiled ? `+tiles-${tiled.size}/${tiled.tile}` : '') +
      (closer ? `+boxes-${closer.size}` : ''),
    inputSpec: { size: preparedSize, fit: 'contain', ...(closer ? { closerSize: closer.sourceSize } : {}) },
    maxBatch: MAX_BATCH,
    async detect(rgb, source) {
      return (await detectAll([rgb], source ? [source] : undefined))[0]!;
    },
    detectMany: detectAll,
    dispose: () => net.dispose(),
  };
}

/** onnxruntime-node for `onnx` (or throws why not), for `auto` where it loads; none for `tfjs`. */
async function pickOnnxRuntime(runtime: DetectorRuntime): Promise<OnnxRuntime | undefined> {
  if (runtime === 'tfjs') return undefined;
  try {
    return await loadOnnxRuntime();
  } catch (err) {
    if (runtime === 'onnx') {
      throw new Error(`HUMAN_RUNTIME=onnx but onnxruntime-node could not be loaded: ${(err as Error).message}`, {
        cause: err,
      });
    }
    return undefined;
  }
}

/**
 * The pipeline's detect stage: `rgb` prepared per `detector.inputSpec`. Other sizes work, resized on
 * the backend, but pass prepared pixels: the wasm heap grows to the largest input and never shrinks.
 */
export async function detectStage(detector: PersonDetector, rgb: RawImage): Promise<PersonDetection> {
  return detector.detect(rgb);
}

/**
 * The square region of `source` a closer look at `box` (in `rgb`'s pixels) reads, and the frame that maps the
 * model's boxes in that crop back to `rgb`'s pixels.
 */
export function closeUpRegion(
  box: { x1: number; y1: number; x2: number; y2: number },
  rgb: { width: number; height: number },
  source: { width: number; height: number },
  look: Pick<CloserLook, 'size' | 'context' | 'minShare'>,
): { left: number; top: number; side: number; frame: BoxMapping } {
  const f = source.width / rgb.width;
  const wanted = Math.max(
    Math.max(box.x2 - box.x1, box.y2 - box.y1) * f * look.context,
    Math.max(source.width, source.height) * look.minShare,
  );
  const side = Math.max(1, Math.round(Math.min(wanted, source.width, source.height)));
  const cx = ((box.x1 + box.x2) / 2) * f;
  const cy = ((box.y1 + box.y2) / 2) * f;
  const left = Math.round(Math.min(Math.max(0, cx - side / 2), source.width - side));
  const top = Math.round(Math.min(Math.max(0, cy - side / 2), source.height - side));
  // In rgb's pixels: the crop starts at (left, top) / f and is side / f across; the model sees it at look.size.
  const scale = (look.size * f) / side;
  return {
    left,
    top,
    side,
    frame: { scale, padX: -(left / f) * scale, padY: -(top / f) * scale, width: rgb.width, height: rgb.height },
  };
}

/** Whether a first-look `score` is unsure enough for `look` (in [from, to)). */
export function needsTiledLook(score: number, look: TiledLook | null): boolean {
  return look !== null && score >= look.from && score < look.to;
}

/** How a box in the model input maps back to the image's pixels (`toImageBox`). */
type BoxMapping = Pick<Frame, 'scale' | 'padX' | 'padY' | 'width' | 'height'>;

/**
 * Where a region of the image lands in the model input: scaled by `scale`, then cut at (`left`, `top`) (in
 * scaled pixels) to `width`×`height`, padded with black (centred) to `inputWidth`×`inputHeight`.
 */
export interface Frame {
  scale: number;
  /** Scaled image size. */
  scaledWidth: number;
  scaledHeight: number;
  /** The region of the scaled image the input shows. */
  left: number;
  top: number;
  regionWidth: number;
  regionHeight: number;
  inputWidth: number;
  inputHeight: number;
  padX: number;
  padY: number;
  /** The image's own size. */
  width: number;
  height: number;
}

function checkPixels(rgb: RawImage): void {
  const { width, height, channels, data } = rgb;
  if (!(width > 0 && height > 0) || data.length !== width * height * channels) {
    throw new Error(
      `Expected ${width}×${height}×${channels} = ${width * height * channels} bytes of pixels ` +
        `but received ${data.length}`,
    );
  }
}

const sameSize = (a: RawImage, b: RawImage) => a.width === b.width && a.height === b.height;
const up32 = (n: number) => Math.max(64, Math.ceil(n / 32) * 32);

/** The whole image fitted inside `size`×`size`, aspect kept, padded only up to multiples of 32. */
export function fitFrame(image: { width: number; height: number }, size: number): Frame {
  const { width, height } = image;
  const scale = size / Math.max(width, height);
  const scaledWidth = Math.max(1, Math.round(width * scale));
  const scaledHeight = Math.max(1, Math.round(height * scale));
  const inputWidth = up32(scaledWidth);
  const inputHeight = up32(scaledHeight);
  return {
    scale,
    scaledWidth,
    scaledHeight,
    left: 0,
    top: 0,
    regionWidth: scaledWidth,
    regionHeight: scaledHeight,
    inputWidth,
    inputHeight,
    padX: Math.floor((inputWidth - scaledWidth) / 2),
    padY: Math.floor((inputHeight - scaledHeight) / 2),
    width,
    height,
  };
}

export interface Tile {
  left: number;
  top: number;
  width: number;
  height: number;
}

/**
 * Tiles of at most `tile`×`tile` covering a `width`×`height` image, all of one size (so they run as one
 * batch), spread evenly with neighbours overlapping by at least `overlap` of a tile (a person cut by one
 * tile's edge is whole in the next, up to that size). A side no longer than `tile` is one tile.
 */
export function tileGrid(width: number, height: number, tile: number, overlap: number): Tile[] {
  const along = (length: number): { size: number; starts: number[] } => {
    if (length <= tile) return { size: length, starts: [0] };
    const step = tile * (1 - overlap);
    const count = Math.ceil((length - tile) / step) + 1;
    const starts = Array.from({ length: count }, (_, i) => Math.round((i * (length - tile)) / (count - 1)));
    return { size: tile, starts };
  };
  const xs = along(width);
  const ys = along(height);
  return ys.starts.flatMap((top) => xs.starts.map((left) => ({ left, top, width: xs.size, height: ys.size })));
}

/** `tile` of the image scaled by `scale`, as a model input (its sides padded up to multiples of 32). */
export function tileFrame(image: { width: number; height: number }, scale: number, tile: Tile): Frame {
  const inputWidth = up32(tile.width);
  const inputHeight = up32(tile.height);
  return {
    scale,
    scaledWidth: Math.max(1, Math.round(image.width * scale)),
    scaledHeight: Math.max(1, Math.round(image.height * scale)),
    left: tile.left,
    top: tile.top,
    regionWidth: tile.width,
    regionHeight: tile.height,
    inputWidth,
    inputHeight,
    padX: Math.floor((inputWidth - tile.width) / 2) - tile.left,
    padY: Math.floor((inputHeight - tile.height) / 2) - tile.top,
    width: image.width,
    height: image.height,
  };
}

/** The pixels as a float32 [height, width, 3] tensor (alpha dropped, grey repeated). */
function rgbTensor(tf: Tf, rgb: RawImage): Tensor3D {
  const pixels = tf.tensor3d(rgb.data, [rgb.height, rgb.width, rgb.channels], 'float32');
  if (rgb.channels === 4) return tf.slice(pixels, [0, 0, 0], [-1, -1, 3]);
  if (rgb.channels === 1) return tf.tile(pixels, [1, 1, 3]);
  return pixels;
}

function toModelInput(tf: Tf, rgb: RawImage, frame: Frame): Tensor4D {
  const { scaledWidth, scaledHeight, left, top, regionWidth, regionHeight, inputWidth, inputHeight } = frame;
  return tf.tidy(() => {
    let pixels = rgbTensor(tf, rgb);
    if (scaledWidth !== rgb.width || scaledHeight !== rgb.height) {
      pixels = tf.image.resizeBilinear(pixels, [scaledHeight, scaledWidth], false, true);
    }
    if (left !== 0 || top !== 0 || regionWidth !== scaledWidth || regionHeight !== scaledHeight) {
      pixels = tf.slice(pixels, [top, left, 0], [regionHeight, regionWidth, 3]);
    }
    const padX = Math.floor((inputWidth - regionWidth) / 2);
    const padY = Math.floor((inputHeight - regionHeight) / 2);
    const padded = tf.pad(pixels, [
      [padY, inputHeight - regionHeight - padY],
      [padX, inputWidth - regionWidth - padX],
      [0, 0],
    ]);
    return tf.expandDims<Tensor4D>(padded, 0);
  });
}
