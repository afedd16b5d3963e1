import type { MessagePort } from 'node:worker_threads';
/**
 * Shapes shared by the pipeline stages, the worker entry and the pool.
 * Everything here crosses a worker-thread boundary, so it must survive structured clone:
 * plain objects, typed arrays, no classes.
 */
import type { ErrorCode } from '../../domain/errors.ts';
import type { DetectionInfo, ImageTask, ProcessedImage } from '../../domain/uploads/processed-image.ts';

// The shapes the domain declares for what it asks and gets back (domain/uploads/processed-image.ts).
export { VARIANT_MAX_SIDE } from '../../domain/uploads/processed-image.ts';
export type {
  DetectionInfo,
  EncodedVariant,
  ImageTask,
  ProcessedImage,
  VariantName,
} from '../../domain/uploads/processed-image.ts';

/** Raw interleaved pixels, row-major, 8 bits per channel. */
export interface RawImage {
  data: Uint8Array;
  width: number;
  height: number;
  channels: 1 | 3 | 4;
}

import type { HumanPolicy } from '../../domain/person-policy.ts';
export type { HumanPolicy };

/** How the detector wants its input prepared from the decoded image. */
export interface DetectorInputSpec {
  /** Side of the square model input, in pixels. */
  size: number;
  /** 'fill' = stretch to size×size; 'contain' = keep aspect, fit inside size×size (the detector pads). */
  fit: 'fill' | 'contain';
  /**
   * Long side of the larger copy of the image the detector may want for a closer look (the `source` argument of
   * `detect`); absent when it never looks closer.
   */
  closerSize?: number;
}

/** The image a detector looks at, at `inputSpec.closerSize` px on its long side; read only when it looks closer. */
export type CloserSource = () => Promise<RawImage>;

export interface PersonDetection {
  /** Highest person score in the image, 0–1 (0 when no person box survived). */
  score: number;
  /** Person boxes after non-max suppression, in input-image pixel coordinates. */
  boxes: Array<{ x: number; y: number; width: number; height: number; score: number }>;
}

/** Where the detector's model runs (HUMAN_RUNTIME): `auto` is onnxruntime-node where it loads, else TF.js. */
export type DetectorRuntime = 'auto' | 'onnx' | 'tfjs';

/** How a worker thread's detector is set up (HUMAN_INPUT_SIZE, HUMAN_SECOND_LOOK, HUMAN_RUNTIME). */
export interface DetectorSettings {
  /** Long side of the first look; the detector's default when absent. */
  inputSize?: number;
  /** HUMAN_SECOND_LOOK=boxes: a closer look (BOX_CLOSER_LOOK) at the boxes of an unsure first look. */
  closerLook?: boolean;
  /** Default `auto`. */
  runtime?: DetectorRuntime;
}

/** A person detector loaded once per worker thread. */
export interface PersonDetector {
  /**
   * Where the model runs: 'onnxruntime' (onnxruntime-node), 'tensorflow' (tfjs-node) or 'wasm' (tfjs-backend-wasm).
   * Never the pure-JS cpu backend.
   */
  readonly backend: string;
  readonly model: string;
  readonly inputSpec: DetectorInputSpec;
  /**
   * Runs the model on RGB pixels prepared per `inputSpec`; `source`, when given, yields the same image at
   * `inputSpec.closerSize` px, read only if the detector looks closer.
   */
  detect(rgb: RawImage, source?: CloserSource): Promise<PersonDetection>;
  /**
   * Where the model takes a batch: runs it once on up to `maxBatch` frames (more are split), one result per
   * frame, in order. Cheaper per frame than `detect` one by one.
   */
  detectMany?(frames: readonly RawImage[], sources?: readonly CloserSource[]): Promise<PersonDetection[]>;
  /** Frames per `detectMany` call. */
  readonly maxBatch?: number;
  /**
   * The closer look, where the detector has one: given the first looks of an image's frames (each detected without
   * a source), it looks closer at the best boxes among them all — one budget of crops per image, so an animation
   * costs no more closer looks than a still — and returns each frame's decided detection, or null for a frame it
   * cut no crop from (its first look stands). Null overall when no closer look applies: a first look is sure
   * (scored `sureAt` or more) or none found a box.
   */
  lookCloser?(frames: ReadonlyArray<FirstLook>): Promise<Array<PersonDetection | null> | null>;
  /** With `lookCloser`: the first-look score from which the first look decides alone. */
  readonly sureAt?: number;
  dispose(): void;
}

/** A frame's first look, for `PersonDetector.lookCloser`: its size, what the first look found, and its source. */
export interface FirstLook {
  width: number;
  height: number;
  first: PersonDetection;
  source: CloserSource;
}

/** Input of the worker's processImage task: the domain's ImageTask, and how the pool steers it. */
export interface ProcessImageTask extends ImageTask {
  /** Optional cancel flag (Int32Array over a SharedArrayBuffer): the pool sets [0] to 1; checked between stages. */
  cancel?: Int32Array;
  /**
   * Optional: once the perceptual hash is known, the worker posts `{ phash }` here and waits for
   * `{ stop: boolean }` before detection and encoding (the costly stages); stop ends the task there with
   * nothing staged (`StoppedAfterHash`). Used to refuse a near duplicate without encoding it.
   */
  afterHash?: MessagePort;
}

export interface StageRejection {
  ok: false;
  code: ErrorCode;
  message: string;
  /** Set when the task stopped because its request was aborted (the client went away). */
  cancelled?: true;
  /** On `human_detected`: what the detect stage did. */
  detection?: DetectionInfo;
}

/**
 * The task ended after the perceptual hash because the afterHash port said stop (its caller found a near
 * duplicate: the code says so should it ever reach a client).
 */
export interface StoppedAfterHash extends StageRejection {
  code: 'conflict';
  stopped: true;
  phash: string;
  timings: ProcessedImage['timings'];
}

export type ProcessImageResult = ProcessedImage | StageRejection;
