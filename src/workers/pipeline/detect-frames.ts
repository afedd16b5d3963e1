/**
 * Which frames of an image the person detector checks, and checking them: every frame of an animation
 * (up to the decode frame limit), except that a frame that looks the same as one already checked is not
 * checked again. The distinct frames go through the model in batches where the detector takes them.
 */
import { derive, type DecodedImage } from './decode.stage.ts';
import type { StackedPixels } from './encode.stage.ts';
import type { DetectionInfo, DetectorInputSpec, PersonDetection, PersonDetector, RawImage } from './types.ts';
import { MAX_PERSON_BOXES, type PersonBox } from '../../domain/person-policy.ts';

/** Cells per side of a frame's signature (fewer when the frame is smaller). */
export const SIGNATURE_GRID = 32;
/**
 * Two frames look the same when no cell of their signatures differs by more than this in any of R, G, B
 * (0–255). A cell of a 480×360 frame is 15×11 pixels: a figure the model could find changes its cells by
 * far more, while GIF re-dithering of an unchanged picture moves them by well under 1.
 */
export const SAME_FRAME_TOLERANCE = 2;

/** A frame's signature: the mean R, G, B of each cell of a grid laid over it, alpha flattened on white. */
export type FrameSignature = Float32Array;

/**
 * The signature of every frame of the decoded working buffer (frames stacked vertically), in one pass over
 * the pixels: exact cell means, no resampling, so a frame's cells see no pixel of its neighbours.
 */
export function frameSignatures(image: Pick<DecodedImage, 'raw' | 'pageHeight'>): FrameSignature[] {
  const { data, width, channels } = image.raw;
  const pageHeight = image.pageHeight;
  const frames = Math.round(image.raw.height / pageHeight);
  const cols = Math.min(SIGNATURE_GRID, width);
  const rows = Math.min(SIGNATURE_GRID, pageHeight);
  const cellOfX = new Uint16Array(width);
  for (let x = 0; x < width; x++) cellOfX[x] = Math.floor((x * cols) / width);
  const pixelsIn = new Float64Array(cols * rows);
  for (let y = 0; y < pageHeight; y++) {
    const row = Math.floor((y * rows) / pageHeight) * cols;
    for (let x = 0; x < width; x++) pixelsIn[row + cellOfX[x]!]!++;
  }
  const out: FrameSignature[] = [];
  const sums = new Float64Array(cols * rows * 3);
  for (let f = 0; f < frames; f++) {
    sums.fill(0);
    for (let y = 0; y < pageHeight; y++) {
      const rowCell = Math.floor((y * rows) / pageHeight) * cols;
      let at = (f * pageHeight + y) * width * channels;
      for (let x = 0; x < width; x++, at += channels) {
        const cell = (rowCell + cellOfX[x]!) * 3;
        if (channels === 4) {
          const a = data[at + 3]! / 255;
          const white = 255 * (1 - a);
          sums[cell]! += data[at]! * a + white;
          sums[cell + 1]! += data[at + 1]! * a + white;
          sums[cell + 2]! += data[at + 2]! * a + white;
        } else {
          sums[cell]! += data[at]!;
          sums[cell + 1]! += data[at + 1]!;
          sums[cell + 2]! += data[at + 2]!;
        }
      }
    }
    const signature = new Float32Array(sums.length);
    for (let i = 0; i < sums.length; i++) signature[i] = sums[i]! / pixelsIn[Math.floor(i / 3)]!;
    out.push(signature);
  }
  return out;
}

function sameFrame(a: FrameSignature, b: FrameSignature, tolerance: number): boolean {
  for (let i = 0; i < a.length; i++) if (Math.abs(a[i]! - b[i]!) > tolerance) return false;
  return true;
}

/**
 * The frames to check, in order: the first, and every later frame that differs from each frame chosen so far
 * (compared with the chosen frames, not the one just before, so a slow change still gets checked once it
 * has added up; and a loop that returns to an earlier picture is not checked twice).
 */
export function distinctFrames(signatures: readonly FrameSignature[], tolerance = SAME_FRAME_TOLERANCE): number[] {
  const chosen: number[] = [];
  for (const [i, signature] of signatures.entries()) {
    // Most repeats repeat the frame chosen last: look there first.
    let seen = false;
    for (let c = chosen.length - 1; c >= 0 && !seen; c--)
      seen = sameFrame(signature, signatures[chosen[c]!]!, tolerance);
    if (!seen) chosen.push(i);
  }
  return chosen;
}

export interface DetectPeopleOptions {
  /** Stop once a frame scores at least this (the rest cannot change a refusal); default: check every frame. */
  stopAt?: number;
  /**
   * The image already resampled from the working buffer (the variants' pixels), every frame stacked. One whose
   * long side is the detector's input size is read as it is; otherwise the input is resampled from the smallest
   * one at least that large (the working buffer when none is), and frames are compared on the pixels read.
   */
  resampled?: readonly StackedPixels[];
}

/** Stacked pixels as the working buffer is shaped (`raw.height` all frames, `pageHeight` one). */
function asDecoded(image: DecodedImage, stack: StackedPixels): DecodedImage {
  return { ...image, raw: { ...stack, height: stack.height * stack.frames }, pageHeight: stack.height };
}

/**
 * Where frames at `size` px on their long side are read from: resampled pixels of that size as they are, else
 * resampled from the smallest larger ones (the working buffer when none is). `pixels` is what is read from, for
 * comparing frames.
 */
function framesAt(
  image: DecodedImage,
  resampled: readonly StackedPixels[],
  size: number,
  opts: { fit: DetectorInputSpec['fit']; enlarge: boolean },
): { pixels: DecodedImage; read: (frame: number) => Promise<RawImage> } {
  const side = (p: StackedPixels) => Math.max(p.width, p.height);
  const usable = resampled.filter((p) => p.frames === image.frames).sort((a, b) => side(a) - side(b));
  const exact = opts.fit === 'contain' ? usable.find((p) => side(p) === size) : undefined;
  if (exact) return { pixels: asDecoded(image, exact), read: async (frame) => frameRgb(exact, frame) };
  const larger = usable.find((p) => side(p) >= size);
  const pixels = larger ? asDecoded(image, larger) : image;
  const fit = opts.fit === 'fill' ? 'fill' : 'inside';
  return {
    pixels,
    read: (frame) => derive(pixels, { width: size, height: size, fit, channels: 3, frame, enlarge: opts.enlarge }),
  };
}

/** One frame of stacked pixels as RGB, alpha flattened on white (as `derive` does). */
export function frameRgb(stack: StackedPixels, frame: number): RawImage {
  const { width, height, channels, data } = stack;
  const at = frame * width * height * channels;
  const pixels = data.subarray(at, at + width * height * channels);
  if (channels === 3) return { data: pixels, width, height, channels: 3 };
  const rgb = new Uint8Array(width * height * 3);
  for (let i = 0, j = 0; j < rgb.length; i += 4, j += 3) {
    const a = pixels[i + 3]! / 255;
    const white = 255 * (1 - a);
    rgb[j] = Math.round(pixels[i]! * a + white);
    rgb[j + 1] = Math.round(pixels[i + 1]! * a + white);
    rgb[j + 2] = Math.round(pixels[i + 2]! * a + white);
  }
  return { data: rgb, width, height, channels: 3 };
}

/**
 * The detection of the image's best frame, with its best boxes (at most MAX_PERSON_BOXES) as fractions of the frame
 * read (which keeps the image's proportions, so they fit every variant).
 */
export type PeopleInImage = PersonDetection & { info: DetectionInfo; normalizedBoxes: PersonBox[] };

/** Boxes in the pixels of a `width`×`height` input as fractions of it, clamped to it, best first. */
export function normalizeBoxes(boxes: PersonDetection['boxes'], width: number, height: number): PersonBox[] {
  const clamp = (v: number) => Math.min(1, Math.max(0, v));
  const round = (v: number) => Math.round(v * 10_000) / 10_000;
  return [...boxes]
    .sort((a, b) => b.score - a.score)
    .slice(0, MAX_PERSON_BOXES)
    .map((b) => {
      const x = clamp(b.x / width);
      const y = clamp(b.y / height);
      return {
        x: round(x),
        y: round(y),
        width: round(clamp((b.x + b.width) / width) - x),
        height: round(clamp((b.y + b.height) / height) - y),
        score: round(b.score),
      };
    });
}

/**
 * Runs the detector's first look on every distinct frame, prepared per its inputSpec, in batches of its maxBatch
 * (one frame at a time for a detector without detectMany); then, where it has one, its closer look over all the
 * frames' first looks at once (one budget of crops per image: bench/README.md, "Media pipeline"). The highest
 * score wins.
 */
export async function detectPeople(
  image: DecodedImage,
  detector: PersonDetector,
  opts: DetectPeopleOptions = {},
): Promise<PeopleInImage> {
  const { size, fit, closerSize } = detector.inputSpec;
  const resampled = opts.resampled ?? [];
  const input = framesAt(image, resampled, size, { fit, enlarge: true });
  // The closer look's source: never enlarged (an image smaller than closerSize is read at its own size).
  const closer = closerSize ? framesAt(image, resampled, closerSize, { fit: 'contain', enlarge: false }) : null;
  const frames = image.animated ? distinctFrames(frameSignatures(input.pixels)) : [0];
  const batch = detector.detectMany ? Math.max(1, detector.maxBatch ?? 1) : 1;
  let best: PersonDetection = { score: 0, boxes: [] };
  const info: DetectionInfo = {
    frames: image.frames,
    distinctFrames: frames.length,
    inferences: 0,
    modelCalls: 0,
    bestFrame: frames[0]!,
  };
  const looks: Array<{ frame: number; width: number; height: number; result: PersonDetection }> = [];
  // A score decides early only where no closer look could lower it.
  const stopAt = opts.stopAt === undefined ? undefined : Math.max(opts.stopAt, detector.sureAt ?? 0);
  let stopped = false;
  for (let at = 0; at < frames.length && !stopped; at += batch) {
    const chunk = frames.slice(at, at + batch);
    const inputs: RawImage[] = [];
    // One libvips call at a time: a worker keeps to its core.
    for (const frame of chunk) inputs.push(await input.read(frame));
    // With a closer look, the first looks come first (no sources), and the closer look sees them all after.
    const sources = closer && !detector.lookCloser ? chunk.map((frame) => () => closer.read(frame)) : undefined;
    const found =
      detector.detectMany && inputs.length > 1
        ? await detector.detectMany(inputs, sources)
        : [await detector.detect(inputs[0]!, sources?.[0])];
    info.inferences += inputs.length;
    info.modelCalls++;
    found.forEach((result, i) => {
      looks.push({ frame: chunk[i]!, width: inputs[i]!.width, height: inputs[i]!.height, result });
      if (stopAt !== undefined && result.score >= stopAt) stopped = true;
    });
  }
  if (closer && detector.lookCloser && !stopped) {
    const decided = await detector.lookCloser(
      looks.map(({ frame, width, height, result }) => ({
        width,
        height,
        first: result,
        source: () => closer.read(frame),
      })),
    );
    decided?.forEach((result, i) => {
      if (result) looks[i]!.result = result;
    });
  }
  let bestSize = { width: 1, height: 1 };
  for (const { frame, width, height, result } of looks) {
    if (result.score > best.score) {
      best = result;
      bestSize = { width, height };
      info.bestFrame = frame;
    }
  }
  return { ...best, info, normalizedBoxes: normalizeBoxes(best.boxes, bestSize.width, bestSize.height) };
}
