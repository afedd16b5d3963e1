/**
 * What the upload service asks of image processing and what it gets back, declared here so that the domain
 * depends on nothing outward: src/workers implements the ImageProcessor port (ports.ts) with these shapes,
 * and src/store names its stored files after the variants.
 * Everything here crosses a worker-thread boundary, so it must survive structured clone: plain objects,
 * typed arrays, no classes.
 */
import type { ImageFormat } from '../image-format.ts';
import type { HumanPolicy, PersonBox } from '../person-policy.ts';
import type { Provenance } from './provenance.ts';
import type { AiPolicy } from './ai-label.ts';

export type VariantName = 'thumb' | 'medium' | 'full';

/** The longest side of each stored variant, in pixels. */
export const VARIANT_MAX_SIDE: Readonly<Record<VariantName, number>> = Object.freeze({
  thumb: 320,
  medium: 1024,
  full: 2048,
});

/** What the detect stage did with an image: its answer, and how much model work that took. */
export interface DetectionInfo {
  /** Frames of the image (1 for a still). */
  frames: number;
  /** Frames that differed enough from every frame already checked to be checked themselves. */
  distinctFrames: number;
  /** Frames that went through the model (fewer than distinctFrames when it stopped at a person). */
  inferences: number;
  /** Calls into the model; a batch of frames is one call. */
  modelCalls: number;
  /** The frame with the highest score. */
  bestFrame: number;
}

export interface EncodedVariant {
  name: VariantName;
  width: number;
  height: number;
  bytes: number;
  /** Absolute path of the staged file (inside the task's staging directory). */
  path: string;
}

/** An image to process, as the domain asks for it. */
export interface ImageTask {
  /** The original bytes; transferred (moved) to the worker, not copied. */
  bytes: ArrayBuffer;
  /** Directory the worker writes variants into; created by the caller, removed by the caller on failure. */
  stagingDir: string;
  /** Base name for staged files, e.g. the upload id; variants become `${baseName}.${variant}.webp`. */
  baseName: string;
  humanPolicy: HumanPolicy;
  /** HUMAN_THRESHOLD: the sure score, refused under `reject` (person-policy.ts). */
  humanThreshold: number;
  /** HUMAN_REVIEW_THRESHOLD; absent: equal to humanThreshold (no gray zone). */
  humanReviewThreshold?: number;
  /** AI_POLICY; `reject` refuses a generated-says marker before anything is decoded (ai-label.ts aiRefusal). */
  aiPolicy?: AiPolicy;
}

export interface ProcessedImage {
  ok: true;
  format: ImageFormat;
  /** Displayed dimensions of the original (EXIF orientation applied). */
  width: number;
  height: number;
  animated: boolean;
  frames: number;
  /** 64-bit perceptual hash, 16 lowercase hex characters. */
  phash: string;
  /** PDQ, Meta's 256-bit perceptual hash (the blocklist's shared hashes), 64 lowercase hex characters. */
  pdq: string;
  /** PDQ's quality, 0–100: a hash below 50 is too featureless to match. */
  pdqQuality: number;
  /** ThumbHash, base64. */
  thumbhash: string;
  /** Highest person score, or null when humanPolicy is 'off'. */
  humanScore: number | null;
  /**
   * The detector's best boxes (at most MAX_PERSON_BOXES, best first) on the frame that scored highest, as fractions of
   * the image's width and height; present when detection ran.
   */
  humanBoxes?: PersonBox[];
  /** Present when detection ran. */
  detection?: DetectionInfo;
  variants: EncodedVariant[];
  /** C2PA and IPTC markers read from the original bytes (provenance.ts). */
  provenance: Provenance;
  /** Milliseconds spent per stage, for metrics. */
  timings: Partial<
    Record<'sniff' | 'provenance' | 'decode' | 'phash' | 'pdq' | 'resample' | 'detect' | 'encode' | 'thumbhash', number>
  >;
}
