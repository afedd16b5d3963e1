/**
 * The worker's processImage task: sniff → decode → phash → detect → encode → thumbhash.
 * Expected rejections are returned as `{ok: false, code, message}`; only bugs throw.
 */
import { rm } from 'node:fs/promises';
import type { MessagePort } from 'node:worker_threads';
import { decode, derive } from './decode.stage.ts';
import { detectPeople } from './detect-frames.ts';
import { encodeVariants, variantPath } from './encode.stage.ts';
import { PHASH_INPUT_SIZE, phash } from './phash.stage.ts';
import { sniff } from './sniff.stage.ts';
import { THUMBHASH_MAX_SIDE, thumbhash } from './thumbhash.stage.ts';
import { personRefusal } from '../../domain/person-policy.ts';
import type {
  DetectionInfo,
  PersonDetector,
  ProcessedImage,
  ProcessImageResult,
  ProcessImageTask,
  StageRejection,
  StoppedAfterHash,
  VariantName,
} from './types.ts';

export interface ProcessImageDeps {
  /** Required unless the task's humanPolicy is 'off'. */
  detector: PersonDetector | null;
}

type Timings = ProcessedImage['timings'];

async function timed<T>(timings: Timings, stage: keyof Timings, fn: () => T | Promise<T>): Promise<T> {
  const start = performance.now();
  try {
    return await fn();
  } finally {
    timings[stage] = Math.round((performance.now() - start) * 10) / 10;
  }
}

/** Asks the caller whether to go on now that the hash is known; a closed port means go on. */
function verdict(port: MessagePort, hash: string): Promise<{ stop: boolean }> {
  return new Promise((resolve) => {
    const onMessage = (m: { stop?: boolean }) => done({ stop: m?.stop === true });
    const onClose = () => done({ stop: false });
    const done = (v: { stop: boolean }) => {
      port.off('message', onMessage).off('close', onClose);
      resolve(v);
    };
    port.on('message', onMessage).on('close', onClose);
    port.postMessage({ phash: hash });
  });
}

/** The pool sets the cancel flag when the request was aborted; checked before each costly stage. */
function cancelled(task: ProcessImageTask, next: keyof Timings): StageRejection | null {
  if (!task.cancel || Atomics.load(task.cancel, 0) === 0) return null;
  return { ok: false, code: 'busy', message: `processing was cancelled before ${next}: the request was aborted`, cancelled: true };
}

async function run(task: ProcessImageTask, deps: ProcessImageDeps, timings: Timings): Promise<ProcessImageResult> {
  const bytes = new Uint8Array(task.bytes);
  const sniffed = await timed(timings, 'sniff', () => sniff(bytes));
  if (!sniffed.ok) return sniffed;
  let stop = cancelled(task, 'decode');
  if (stop) return stop;
  const decoded = await timed(timings, 'decode', () => decode(bytes, { format: sniffed.format }));
  if (!decoded.ok) return decoded;
  const image = decoded.image;

  const hash = await timed(timings, 'phash', async () =>
    phash(await derive(image, { width: PHASH_INPUT_SIZE, height: PHASH_INPUT_SIZE, fit: 'fill', channels: 1 })),
  );
  if (task.afterHash && (await verdict(task.afterHash, hash)).stop) {
    const stopped: StoppedAfterHash = { ok: false, code: 'conflict', message: 'stopped after the perceptual hash: a near duplicate', stopped: true, phash: hash, timings };
    return stopped;
  }

  let humanScore: number | null = null;
  let detection: DetectionInfo | undefined;
  if (task.humanPolicy !== 'off') {
    stop = cancelled(task, 'detect');
    if (stop) return stop;
    const { detector } = deps;
    if (!detector) throw new Error(`humanPolicy is '${task.humanPolicy}' but no person detector was provided`);
    // Under 'reject' the first frame at the threshold decides; 'flag' stores the highest score of all frames.
    const stopAt = task.humanPolicy === 'reject' ? task.humanThreshold : undefined;
    const found = await timed(timings, 'detect', () => detectPeople(image, detector, { stopAt }));
    humanScore = found.score;
    detection = found.info;
    const refusal = personRefusal(task.humanPolicy, task.humanThreshold, humanScore);
    if (refusal) return { ok: false, code: 'human_detected', message: refusal, detection };
  }

  stop = cancelled(task, 'encode');
  if (stop) return stop;
  const variants = await timed(timings, 'encode', () => encodeVariants(image, { stagingDir: task.stagingDir, baseName: task.baseName }));
  const placeholder = await timed(timings, 'thumbhash', async () =>
    thumbhash(await derive(image, { width: THUMBHASH_MAX_SIDE, height: THUMBHASH_MAX_SIDE, fit: 'inside', channels: 4 })),
  );
  return {
    ok: true,
    format: image.format,
    width: image.width,
    height: image.height,
    animated: image.animated,
    frames: image.frames,
    phash: hash,
    thumbhash: placeholder,
    humanScore,
    ...(detection ? { detection } : {}),
    variants,
    timings,
  };
}

const VARIANTS: readonly VariantName[] = ['thumb', 'medium', 'full'];

/**
 * Processes one uploaded image into staged WebP variants and the hashes the gateway stores.
 * On a rejection or a throw, every file this task may have staged is removed before returning.
 */
export async function processImage(task: ProcessImageTask, deps: ProcessImageDeps): Promise<ProcessImageResult> {
  const timings: Timings = {};
  let result: ProcessImageResult | undefined;
  try {
    result = await run(task, deps, timings);
    return result;
  } finally {
    if (!result?.ok) {
      // A cleanup failure must not mask the outcome; the caller removes the staging dir on failure anyway.
      await Promise.allSettled(VARIANTS.map((name) => rm(variantPath(task, name), { force: true })));
    }
  }
}
