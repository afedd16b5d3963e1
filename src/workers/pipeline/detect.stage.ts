/**
 * Person detection stage: a COCO CenterNet (models/manifest.json) on onnxruntime-node where it loads, else on
 * TensorFlow.js, loaded once per worker thread, answering "is there a person in this picture, and where". The
 * model's inputs are prepared here, in plain JS, for either runtime.
 */
import {
  CENTERNET_STRIDE,
  loadCenterNet,
  type CenterNet,
  type CenterNetEngine,
  type CenterNetOutput,
  type ModelBatch,
} from '../detector/centernet.model.ts';
import { DEFAULT_MODELS_DIR } from '../detector/model-files.fetch.ts';
import { boxAt, heatmapPeaks, nonMaxSuppression, toImageBox, type ScoredBox } from '../detector/person-boxes.decode.ts';
import { loadOnnxRuntime, type OnnxRuntime } from '../detector/onnx-runtime.loader.ts';
import { loadTfRuntime } from '../detector/tfjs-backend.loader.ts';
import type { CloserSource, DetectorRuntime, FirstLook, PersonDetection, PersonDetector, RawImage } from './types.ts';

export interface PersonDetectorOptions {
  /**
   * `ensureModels().dir` (the directory with centernet.json/.bin) or the models root above it;
   * defaults to `<repo>/models`.
   */
  modelDir?: string;
  /**
   * Long side of the first look: the whole image, aspect ratio kept, padded to multiples of 32 (calibrated:
   * research/detector-eval.ts).
   */
  inputSize?: number;
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
 * A closer look at the boxes of an image whose first-look score is under `sure`: each of the first look's best
 * `maxBoxes` boxes is cut from the image at `sourceSize` px (the medium variant), as a square of `context` times
 * the box's longer side (at least `minShare` of the source's long side), and run through the model at
 * `size`×`size`, the crops as one batch. The crops' best box then decides instead of the first look: a small
 * person fills a crop and scores high, while what only looked like one at 320 px (sheep, statues, a mandrill)
 * scores low once seen closer (research/detector-eval.md). The image's score is the crops' best score.
 */
export interface CloserLook {
  sure: number;
  sourceSize: number;
  size: number;
  context: number;
  minShare: number;
  maxBoxes: number;
}

/**
 * The closer look HUMAN_SECOND_LOOK=boxes turns on (calibrated: research/detector-eval.md). `sure`: first-look
 * scores under 0.55 are decided by the closer look (0.35 until issue 32: a biplane seen from above scored 0.48 at the
 * first look, 0.23 closer, and was refused); chosen on the tuning part of the person-filter evaluation
 * (bench/person-filter.md: the most people refused outright, then the fewest people-free pictures held).
 */
export const BOX_CLOSER_LOOK: CloserLook = {
  sure: 0.55,
  sourceSize: 1024,
  size: 320,
  context: 1.5,
  minShare: 0.125,
  maxBoxes: 3,
};

/** research/detector-eval.md: 0.39× today's 384 px square letterbox's model time, the same held-out recall. */
export const DEFAULT_INPUT_SIZE = 320;
/** PersonDetectorOptions' defaults for turning heatmap peaks into boxes. */
export const BOX_DEFAULTS = { minScore: 0.05, iouThreshold: 0.5, maxBoxes: 20 };
/** Peaks decoded per image; more than any photo has people, fewer than would cost time. */
const MAX_PEAKS = 100;
/**
 * Frames per model call on TF.js. On wasm a batch costs less CPU per frame than single frames, but the wasm heap
 * grows with the batch and never shrinks, so 4 (figures: bench/README.md, "Media pipeline").
 */
export const MAX_BATCH = 4;
/**
 * Frames per model call on onnxruntime: one. Batches cost the same CPU per frame there, and its arena keeps the
 * largest batch's activations (4 frames: ~40 MB more per worker; bench/README.md, "Detector runtime").
 */
export const ONNX_MAX_BATCH = 1;

/** The model on the runtime `runtime` picks, its backend's name, and the frames it takes per call. */
export async function loadDetectorNet(
  runtime: DetectorRuntime,
  modelDir: string,
): Promise<{ net: CenterNet; backend: string; maxBatch: number }> {
  const ort = await pickOnnxRuntime(runtime);
  let engine: CenterNetEngine;
  let backend: string;
  if (ort) {
    engine = { runtime: 'onnx', ort };
    backend = 'onnxruntime';
  } else {
    const tfjs = await loadTfRuntime();
    engine = { runtime: 'tfjs', tf: tfjs.tf };
    backend = tfjs.backend;
  }
  return { net: await loadCenterNet(engine, modelDir), backend, maxBatch: ort ? ONNX_MAX_BATCH : MAX_BATCH };
}

/** Runs `net` on `batch` and decodes each input into candidate boxes (before suppression) in its image's pixels. */
async function runBatch(
  net: CenterNet,
  batch: ModelBatch,
  frames: readonly BoxMapping[],
  minScore: number,
): Promise<ScoredBox[][]> {
  const outputs: CenterNetOutput[] = await net.run(batch);
  return outputs.map((output, i) => {
    const grid = { width: output.gridWidth, height: output.gridHeight };
    return heatmapPeaks(output.heatmap, grid, minScore, MAX_PEAKS).map(({ cell, score }) =>
      toImageBox(boxAt(cell, score, output.edges, grid.width, CENTERNET_STRIDE), frames[i]!),
    );
  });
}

/** Runs `net` on same-shape inputs in one call: candidate boxes per input, as runBatch. */
export function runFrames(
  net: CenterNet,
  inputs: ReadonlyArray<{ rgb: RawImage; frame: Frame }>,
  minScore: number,
): Promise<ScoredBox[][]> {
  const { inputHeight, inputWidth } = inputs[0]!.frame;
  const batch = emptyBatch(inputs.length, inputHeight, inputWidth);
  inputs.forEach(({ rgb, frame }, i) => writeModelInput(rgb, frame, batch, i));
  return runBatch(
    net,
    batch,
    inputs.map((input) => input.frame),
    minScore,
  );
}

/** Candidate boxes suppressed (greedy IoU) and capped: the detection, its score the best box's. */
export function toDetection(candidates: ScoredBox[], iouThreshold: number, maxBoxes: number): PersonDetection {
  const boxes = nonMaxSuppression(candidates, iouThreshold, maxBoxes);
  return {
    score: boxes[0]?.score ?? 0,
    boxes: boxes.map(({ x1, y1, x2, y2, score }) => ({ x: x1, y: y1, width: x2 - x1, height: y2 - y1, score })),
  };
}

/** Loads the backend (onnxruntime-node, else tfjs-node or wasm, never cpu) and the model; call once per thread. */
export async function createPersonDetector(options: PersonDetectorOptions = {}): Promise<PersonDetector> {
  const {
    minScore = BOX_DEFAULTS.minScore,
    iouThreshold = BOX_DEFAULTS.iouThreshold,
    maxBoxes = BOX_DEFAULTS.maxBoxes,
  } = options;
  const modelDir = options.modelDir || DEFAULT_MODELS_DIR;
  const firstSize = options.inputSize ?? DEFAULT_INPUT_SIZE;
  const closer = options.closerLook ?? null;
  for (const side of [firstSize, ...(closer ? [closer.size] : [])]) checkInputSize(side);
  const { net, backend, maxBatch } = await loadDetectorNet(options.runtime ?? 'auto', modelDir);
  // Pay the first runs' set-up at start-up, not on an upload.
  await warmUp(net, firstSize);
  if (closer) await warmUp(net, closer.size);
  const runSameShape = (inputs: ReadonlyArray<{ rgb: RawImage; frame: Frame }>) => runFrames(net, inputs, minScore);
  const finish = (candidates: ScoredBox[]) => toDetection(candidates, iouThreshold, maxBoxes);

  /**
   * The closer look over the first looks of one image's frames (one frame for a still), or null where none applies
   * (no closer look configured, a first look is sure, or none found a box): the best `maxBoxes` boxes among all the
   * frames, each cut from its own frame's source, in batches of `maxBatch`. One budget of crops per image. Per
   * frame: the boxes its crops found (in its pixels), or null where no crop was cut from it.
   */
  async function closerLooks(
    frames: ReadonlyArray<{ width: number; height: number; boxes: ScoredBox[]; source: CloserSource }>,
  ): Promise<Array<ScoredBox[] | null> | null> {
    if (!closer || frames.every((f) => f.boxes.length === 0)) return null;
    if (frames.some((f) => f.boxes.some((box) => box.score >= closer.sure))) return null;
    const picked = frames
      .flatMap((f, i) => nonMaxSuppression(f.boxes, iouThreshold, closer.maxBoxes).map((box) => ({ i, box })))
      .sort((a, b) => b.box.score - a.box.score || a.i - b.i)
      .slice(0, closer.maxBoxes);
    const sources = new Map<number, RawImage>();
    for (const { i } of picked) {
      if (sources.has(i)) continue;
      const source = await frames[i]!.source();
      checkPixels(source);
      sources.set(i, source);
    }
    const crops = picked.map(({ i, box }) => ({ i, ...closeUpRegion(box, frames[i]!, sources.get(i)!, closer) }));
    const found: Array<ScoredBox[] | null> = frames.map(() => null);
    for (let at = 0; at < crops.length; at += maxBatch) {
      const chunk = crops.slice(at, at + maxBatch);
      const batch = emptyBatch(chunk.length, closer.size, closer.size);
      chunk.forEach((crop, k) => writeCrop(sources.get(crop.i)!, crop, batch, k));
      const results = await runBatch(
        net,
        batch,
        chunk.map((crop) => crop.frame),
        minScore,
      );
      results.forEach((boxes, k) => (found[chunk[k]!.i] ??= []).push(...boxes));
    }
    return found;
  }

  /** First look at every image (batched), then, for the images it is unsure of, the closer look at their boxes. */
  async function detectAll(images: readonly RawImage[], sources?: readonly CloserSource[]): Promise<PersonDetection[]> {
    for (const rgb of images) checkPixels(rgb);
    const firsts: ScoredBox[][] = [];
    // Frames of one animation share a shape: batch runs of equal shapes.
    for (let at = 0; at < images.length;) {
      const frame = fitFrame(images[at]!, firstSize);
      let end = at + 1;
      while (end < images.length && end - at < maxBatch && sameSize(images[end]!, images[at]!)) end++;
      firsts.push(...(await runSameShape(images.slice(at, end).map((rgb) => ({ rgb, frame })))));
      at = end;
    }
    const closerFound = sources
      ? await closerLooks(
          images.map((rgb, i) => ({ width: rgb.width, height: rgb.height, boxes: firsts[i]!, source: sources[i]! })),
        )
      : null;
    return firsts.map((first, i) => finish(closerFound?.[i] ?? first));
  }

  /** PersonDetector.lookCloser: the closer look over frames' first looks (their boxes back as corner boxes). */
  async function lookCloser(frames: ReadonlyArray<FirstLook>): Promise<Array<PersonDetection | null> | null> {
    const found = await closerLooks(
      frames.map(({ width, height, first, source }) => ({
        width,
        height,
        source,
        boxes: first.boxes.map(({ x, y, width: w, height: h, score }) => ({
          x1: x,
          y1: y,
          x2: x + w,
          y2: y + h,
          score,
        })),
      })),
    );
    return found && found.map((boxes) => (boxes ? finish(boxes) : null));
  }

  return {
    backend,
    model: `centernet-${firstSize}` + (closer ? `+boxes-${closer.size}` : ''),
    inputSpec: { size: firstSize, fit: 'contain', ...(closer ? { closerSize: closer.sourceSize } : {}) },
    maxBatch,
    ...(closer ? { lookCloser, sureAt: closer.sure } : {}),
    async detect(rgb, source) {
      return (await detectAll([rgb], source ? [source] : undefined))[0]!;
    },
    detectMany: detectAll,
    dispose: () => net.dispose(),
  };
}

/** A model input side: a multiple of 32 between 128 and 1024. */
export function checkInputSize(side: number): void {
  if (!Number.isInteger(side) || side % 32 !== 0 || side < 128 || side > 1024) {
    throw new Error(`Expected a multiple of 32 between 128 and 1024 for an input size but received ${side}`);
  }
}

/** One run at `size`×`size`: the first run on a backend sets up its kernels (a few times slower). */
export async function warmUp(net: CenterNet, size: number): Promise<void> {
  await net.run(emptyBatch(1, size, size));
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

/** An all-black batch (the padding) of `images` inputs of `height`×`width`. */
function emptyBatch(images: number, height: number, width: number): ModelBatch {
  return { data: new Float32Array(images * height * width * 3), images, height, width };
}

/** Channel `c` (0–2) of `rgb`'s pixel at (x, y): alpha dropped, grey repeated. */
const sample = (rgb: RawImage, x: number, y: number, c: number) =>
  rgb.data[(y * rgb.width + x) * rgb.channels + (rgb.channels === 1 ? 0 : c)]!;

/**
 * Bilinear sample of channel `c` at (`fx`, `fy`), TF.js's arithmetic (resizeBilinear and cropAndResize): the four
 * neighbours clamped to the image, blended across x, then across y.
 */
function bilinear(rgb: RawImage, fx: number, fy: number, c: number): number {
  const x0 = Math.max(0, Math.floor(fx));
  const y0 = Math.max(0, Math.floor(fy));
  const x1 = Math.min(rgb.width - 1, Math.ceil(fx));
  const y1 = Math.min(rgb.height - 1, Math.ceil(fy));
  const dx = fx - x0;
  const dy = fy - y0;
  const top = sample(rgb, x0, y0, c) + (sample(rgb, x1, y0, c) - sample(rgb, x0, y0, c)) * dx;
  const bottom = sample(rgb, x0, y1, c) + (sample(rgb, x1, y1, c) - sample(rgb, x0, y1, c)) * dx;
  return top + (bottom - top) * dy;
}

/**
 * Writes image `index` of `batch`: `rgb` scaled per `frame` (bilinear with half-pixel centres, as TF.js's
 * resizeBilinear, only when the pixels are not already at the frame's scale), cut to the frame's region and
 * placed at its padding offset; the rest stays black.
 */
export function writeModelInput(rgb: RawImage, frame: Frame, batch: ModelBatch, index: number): void {
  const { scaledWidth, scaledHeight, left, top, regionWidth, regionHeight, inputWidth, inputHeight } = frame;
  if (inputWidth !== batch.width || inputHeight !== batch.height) throw new Error('frame and batch shapes differ');
  const padX = Math.floor((inputWidth - regionWidth) / 2);
  const padY = Math.floor((inputHeight - regionHeight) / 2);
  const resized = scaledWidth !== rgb.width || scaledHeight !== rgb.height;
  const rx = rgb.width / scaledWidth;
  const ry = rgb.height / scaledHeight;
  const out = batch.data;
  for (let y = 0; y < regionHeight; y++) {
    const sy = top + y;
    let at = ((index * inputHeight + padY + y) * inputWidth + padX) * 3;
    for (let x = 0; x < regionWidth; x++) {
      const sx = left + x;
      for (let c = 0; c < 3; c++) {
        out[at++] = resized ? bilinear(rgb, (sx + 0.5) * rx - 0.5, (sy + 0.5) * ry - 0.5, c) : sample(rgb, sx, sy, c);
      }
    }
  }
}

/**
 * Writes image `index` of `batch` (its sides the crop's output size): the square `crop` of `source` resampled
 * bilinearly, its first and last output pixels on its first and last source pixels, as TF.js's cropAndResize.
 */
export function writeCrop(
  source: RawImage,
  crop: { left: number; top: number; side: number },
  batch: ModelBatch,
  index: number,
): void {
  const size = batch.width;
  const step = size > 1 ? (crop.side - 1) / (size - 1) : 0;
  const out = batch.data;
  let at = index * size * size * 3;
  for (let y = 0; y < size; y++) {
    const fy = crop.top + y * step;
    for (let x = 0; x < size; x++) {
      const fx = crop.left + x * step;
      for (let c = 0; c < 3; c++) out[at++] = bilinear(source, fx, fy, c);
    }
  }
}
