/**
 * The worker's processImage task: sniff → provenance → decode → phash → pdq → resample → detect → encode → thumbhash,
 * run from one table of stages of one shape (STAGES), each timed and, when costly, preceded by the cancel check, by one
 * runner.
 * Expected rejections are returned as `{ok: false, code, message}`; only bugs throw.
 */
import { rm } from 'node:fs/promises';
import type { MessagePort } from 'node:worker_threads';
import { decode, derive, type DecodedImage } from './decode.stage.ts';
import { detectPeople } from './detect-frames.ts';
import { encodeVariants, firstFrame, resampleVariants, variantPath, type VariantPixels } from './encode.stage.ts';
import { PDQ_MAX_INPUT_SIDE, pdq, type PdqHash } from './pdq.stage.ts';
import { PHASH_INPUT_SIZE, phash } from './phash.stage.ts';
import { readProvenance } from './provenance.stage.ts';
import type { C2paReader } from './c2pa-reader.ts';
import { sniff } from './sniff.stage.ts';
import { thumbhashOf } from './thumbhash.stage.ts';
import { personVerdict, type PersonBox } from '../../domain/person-policy.ts';
import type { Provenance } from '../../domain/uploads/provenance.ts';
import { aiRefusal } from '../../domain/uploads/ai-label.ts';
import type { ImageFormat } from '../../domain/image-format.ts';
import type {
  DetectionInfo,
  EncodedVariant,
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
  /**
   * Validates the C2PA manifests the provenance stage finds (c2pa-reader.ts); null or absent: a manifest is
   * reported "present, not verified" (C2PA_READER=off, or the library is not installed).
   */
  c2pa?: C2paReader | null;
}

type Timings = ProcessedImage['timings'];
type StageName = keyof Timings;

/** What the stages build, one field at a time: each reads what earlier stages wrote and adds its own. */
interface Draft {
  readonly bytes: Uint8Array;
  format?: ImageFormat;
  provenance?: Provenance;
  image?: DecodedImage;
  phash?: string;
  pdq?: PdqHash;
  humanScore: number | null;
  humanBoxes?: PersonBox[];
  detection?: DetectionInfo;
  /** Every variant's pixels, resampled before detection (which reads the thumb) and encoding. */
  resampled?: VariantPixels;
  variants?: EncodedVariant[];
  thumbhash?: string;
}

interface StageInput {
  draft: Readonly<Draft>;
  task: ProcessImageTask;
  deps: ProcessImageDeps;
}

/**
 * The one shape of a pipeline stage: it takes the task and what earlier stages found, and gives what it adds
 * (or why the image is refused). The runner times it (under `name`, the metrics' stage label), checks the
 * cancel flag before a costly one, and skips it when `runs` says so. A new stage is a file of its own and one
 * entry in STAGES.
 */
interface Stage {
  name: StageName;
  /** Checked against the cancel flag first (the costly stages: there is no point starting them for nobody). */
  costly?: boolean;
  runs?(task: ProcessImageTask): boolean;
  run(input: StageInput): Promise<Partial<Draft> | StageRejection> | Partial<Draft> | StageRejection;
}

/** A stage's own result: what it adds, or its rejection as it is. */
const added = <K extends keyof Draft>(
  key: K,
  r: ({ ok: true } & Record<K, Draft[K]>) | StageRejection,
): Partial<Draft> | StageRejection => (r.ok ? { [key]: r[key] } : r);

const STAGES: readonly Stage[] = [
  { name: 'sniff', run: ({ draft }) => added('format', sniff(draft.bytes)) },
  // From the original bytes, before anything decodes them: the variants are re-encoded without metadata.
  {
    name: 'provenance',
    run: async ({ draft, task, deps }) => {
      const provenance = await readProvenance(draft.bytes, draft.format!, deps.c2pa ?? null);
      const refusal = task.aiPolicy === 'reject' ? aiRefusal(provenance) : null;
      return refusal ? { ok: false, code: 'ai_generated', message: refusal } : { provenance };
    },
  },
  {
    name: 'decode',
    costly: true,
    run: async ({ draft }) => added('image', await decode(draft.bytes, { format: draft.format! })),
  },
  {
    name: 'phash',
    run: async ({ draft }) => ({
      phash: phash(
        await derive(draft.image!, { width: PHASH_INPUT_SIZE, height: PHASH_INPUT_SIZE, fit: 'fill', channels: 1 }),
      ),
    }),
  },
  // Before the verdict (the blocklist's PDQ entries need it). From RGB shrunk to fit 512 px as the reference
  // hashes (pdq.stage.ts), the first frame of an animation; alpha flattened on white, where the reference's PIL
  // convert('RGB') keeps the colour under transparent pixels: a transparent image may hash differently.
  {
    name: 'pdq',
    run: async ({ draft }) => ({
      pdq: pdq(
        await derive(draft.image!, {
          width: PDQ_MAX_INPUT_SIDE,
          height: PDQ_MAX_INPUT_SIDE,
          fit: 'inside',
          channels: 3,
        }),
      ),
    }),
  },
  { name: 'resample', run: async ({ draft }) => ({ resampled: await resampleVariants(draft.image!) }) },
  {
    name: 'detect',
    costly: true,
    runs: (task) => task.humanPolicy !== 'off',
    run: async ({ draft, task, deps }) => {
      const { detector } = deps;
      if (!detector) throw new Error(`humanPolicy is '${task.humanPolicy}' but no person detector was provided`);
      // Under 'reject' the first frame at the threshold decides; 'flag' stores the highest score of all frames.
      const stopAt = task.humanPolicy === 'reject' ? task.humanThreshold : undefined;
      const { thumb, medium } = draft.resampled!;
      const found = await detectPeople(draft.image!, detector, { stopAt, resampled: [thumb, medium] });
      const verdict = personVerdict(
        task.humanPolicy,
        { sure: task.humanThreshold, review: task.humanReviewThreshold ?? task.humanThreshold },
        found.score,
      );
      if (verdict.decision === 'refuse')
        return { ok: false, code: 'human_detected', message: verdict.message, detection: found.info };
      return { humanScore: found.score, humanBoxes: found.normalizedBoxes, detection: found.info };
    },
  },
  {
    name: 'encode',
    costly: true,
    run: ({ draft, task }) =>
      encodeVariants(draft.image!, { stagingDir: task.stagingDir, baseName: task.baseName }, draft.resampled),
  },
  // From the thumb's pixels (≤ 320 px, already resampled): no resize of the working buffer.
  { name: 'thumbhash', run: ({ draft }) => ({ thumbhash: thumbhashOf(firstFrame(draft.resampled!.thumb)) }) },
];

async function timed<T>(timings: Timings, stage: StageName, fn: () => T | Promise<T>): Promise<T> {
  const start = performance.now();
  try {
    return await fn();
  } finally {
    timings[stage] = Math.round((performance.now() - start) * 10) / 10;
  }
}

/**
 * Asks the caller whether to go on now that the hash is known; a closed port means go on (to the cancel check).
 * The pool closes its end when the request is aborted, after setting `cancel`. That close can reach this thread
 * before anyone listens for it, while an earlier stage ran: the event is then lost, and a question posted to a
 * closed port is never answered, which held the worker forever. So the flag is read once the listeners are on.
 */
export function verdict(
  port: MessagePort,
  hash: string,
  cancel?: Int32Array,
  pdq?: { hash: string; quality: number },
): Promise<{ stop: boolean }> {
  return new Promise((resolve) => {
    const onMessage = (m: { stop?: boolean }) => done({ stop: m?.stop === true });
    const onClose = () => done({ stop: false });
    const done = (v: { stop: boolean }) => {
      port.off('message', onMessage).off('close', onClose);
      resolve(v);
    };
    port.on('message', onMessage).on('close', onClose);
    if (cancel && Atomics.load(cancel, 0) !== 0) return done({ stop: false });
    port.postMessage(pdq ? { phash: hash, pdq } : { phash: hash });
  });
}

/** The pool sets the cancel flag when the request was aborted; checked before each costly stage. */
function cancelled(task: ProcessImageTask, next: StageName): StageRejection | null {
  if (!task.cancel || Atomics.load(task.cancel, 0) === 0) return null;
  return {
    ok: false,
    code: 'busy',
    message: `processing was cancelled before ${next}: the request was aborted`,
    cancelled: true,
  };
}

async function run(task: ProcessImageTask, deps: ProcessImageDeps, timings: Timings): Promise<ProcessImageResult> {
  const draft: Draft = { bytes: new Uint8Array(task.bytes), humanScore: null };
  for (const stage of STAGES) {
    if (stage.runs && !stage.runs(task)) continue;
    const stop = stage.costly ? cancelled(task, stage.name) : null;
    if (stop) return stop;
    const out = await timed(timings, stage.name, () => stage.run({ draft, task, deps }));
    if ('ok' in out && out.ok === false) return out;
    Object.assign(draft, out);
    // Once the hashes are known the caller may stop the task (blocklisted, a near duplicate), before detection and
    // encoding.
    if (
      stage.name === 'pdq' &&
      task.afterHash &&
      (await verdict(task.afterHash, draft.phash!, task.cancel, draft.pdq)).stop
    ) {
      const stopped: StoppedAfterHash = {
        ok: false,
        code: 'conflict',
        message: 'stopped after the perceptual hash: a near duplicate',
        stopped: true,
        phash: draft.phash!,
        timings,
      };
      return stopped;
    }
  }
  const image = draft.image!;
  return {
    ok: true,
    format: image.format,
    width: image.width,
    height: image.height,
    animated: image.animated,
    frames: image.frames,
    phash: draft.phash!,
    pdq: draft.pdq!.hash,
    pdqQuality: draft.pdq!.quality,
    thumbhash: draft.thumbhash!,
    humanScore: draft.humanScore,
    ...(draft.humanBoxes ? { humanBoxes: draft.humanBoxes } : {}),
    ...(draft.detection ? { detection: draft.detection } : {}),
    variants: draft.variants!,
    provenance: draft.provenance!,
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
