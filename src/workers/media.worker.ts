/**
 * Piscina worker entry (thread side). The pool runs
 * `pool.run(task, { name: 'processImage', transferList: [task.bytes] })` with `workerData: { modelDir }`.
 */
import { workerData } from 'node:worker_threads';
import { setupSharp } from './sharp-setup.ts';
import { processImage as runPipeline } from './pipeline/process-image.ts';
import { libraryC2paReader, type C2paReader, type C2paSettings } from './pipeline/c2pa-reader.ts';
import type {
  DetectorRuntime,
  DetectorSettings,
  PersonDetector,
  ProcessImageResult,
  ProcessImageTask,
} from './pipeline/types.ts';

export interface MediaWorkerData {
  /** Directory of the person-detector model; read only when a task needs detection. */
  modelDir?: string;
  /** Load the detector when the thread starts (HUMAN_POLICY ≠ off), so no upload waits for it. */
  preloadDetector?: boolean;
  /** The detector's input size, closer look and runtime; its defaults when absent. */
  detector?: DetectorSettings;
  /** C2PA_READER and the trust anchors; absent: `auto`, no trust list. */
  c2pa?: C2paSettings;
}

const ready = setupSharp();
let detector: Promise<PersonDetector> | undefined;
let backend: string | null = null;
let model: string | null = null;

/** Loads the detector on first need, once per thread; a failed load is retried by the next task. */
function loadDetector(): Promise<PersonDetector> {
  detector ??= (async () => {
    const { modelDir, detector: settings = {} } = (workerData ?? {}) as MediaWorkerData;
    // Imported by URL so that this file loads, and 'off' tasks run, without the detector module.
    const url = new URL(
      `./pipeline/detect.stage${import.meta.url.slice(import.meta.url.lastIndexOf('.'))}`,
      import.meta.url,
    ).href;
    let create: unknown;
    let boxLook: unknown;
    try {
      ({ createPersonDetector: create, BOX_CLOSER_LOOK: boxLook } = (await import(url)) as {
        createPersonDetector?: unknown;
        BOX_CLOSER_LOOK?: unknown;
      });
    } catch (err) {
      throw new Error(`person detection is needed but ${url} could not be loaded: ${(err as Error).message}`, {
        cause: err,
      });
    }
    if (typeof create !== 'function')
      throw new Error(`person detection is needed but ${url} exports no createPersonDetector`);
    try {
      const loaded = await (
        create as (opts: {
          modelDir?: string;
          inputSize?: number;
          closerLook?: unknown;
          runtime?: DetectorRuntime;
        }) => Promise<PersonDetector>
      )({
        modelDir,
        ...(settings.inputSize ? { inputSize: settings.inputSize } : {}),
        ...(settings.closerLook ? { closerLook: boxLook } : {}),
        ...(settings.runtime ? { runtime: settings.runtime } : {}),
      });
      backend = loaded.backend;
      model = loaded.model;
      return loaded;
    } catch (err) {
      throw new Error(
        `person detector could not be created (modelDir ${modelDir ?? 'default'}): ${(err as Error).message}`,
        { cause: err },
      );
    }
  })();
  detector.catch(() => {
    detector = undefined;
  });
  return detector;
}

const c2paSettings = (workerData as MediaWorkerData | undefined)?.c2pa;
/**
 * Validates the manifests the provenance stage finds; the library is loaded on the first one (plain images never load
 * it). Where it does not load, every manifest is "present, not verified", said once per thread.
 */
const c2pa: C2paReader | null =
  c2paSettings?.reader === 'off'
    ? null
    : libraryC2paReader({
        trustAnchors: c2paSettings?.trustAnchors ?? null,
        onUnavailable: (err) =>
          process.emitWarning(
            `C2PA manifests are recorded "present, not verified": @contentauth/c2pa-node did not load (${err.message})`,
            { code: 'PIXVOTE_C2PA_READER' },
          ),
      });

/** The processImage task (pipeline/process-image.ts), plus when the thread started it, for queue-wait metrics. */
export async function processImage(task: ProcessImageTask): Promise<ProcessImageResult & { startedAt: number }> {
  const startedAt = performance.timeOrigin + performance.now();
  await ready;
  const result = await runPipeline(task, {
    detector: task.humanPolicy === 'off' ? null : await loadDetector(),
    c2pa,
  });
  return { ...result, startedAt };
}

if ((workerData as MediaWorkerData | undefined)?.preloadDetector) loadDetector().catch(() => {});

/** Readiness probe: answers once sharp (and a preloaded detector) is ready; names the detector and its backend. */
export async function ping(): Promise<{ detectorBackend: string | null; detectorModel: string | null }> {
  await ready;
  if ((workerData as MediaWorkerData | undefined)?.preloadDetector) await loadDetector();
  return { detectorBackend: backend, detectorModel: model };
}

export default processImage;
