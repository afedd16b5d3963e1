/**
 * What reading provenance costs (issue 50: ≤ 5 % of the pipeline's CPU at 2 MP): CPU ms of the provenance stage
 * (readProvenance: the container scan, and for a signed image the C2PA library's validation) against CPU ms of the
 * whole processImage on the same images (the stage included), in this process, one image at a time as a worker
 * runs them, in interleaved rounds (the stage: the mean of 10 runs per image). Three kinds of 2 MP JPEG: plain (no
 * metadata: the scan alone), with an XMP DigitalSourceType, and C2PA-signed (the test certificate's manifest,
 * validated by @contentauth/c2pa-node when it is installed). The pipeline runs with person detection as the app
 * does (HUMAN_POLICY=flag here: every image is looked at) and without it (HUMAN_POLICY=off, the smallest pipeline,
 * where the share is largest).
 *
 *   npm run bench:provenance [-- --rounds 5 --images 4]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { processImage, type ProcessImageDeps } from '../src/workers/pipeline/process-image.ts';
import { readProvenance } from '../src/workers/pipeline/provenance.stage.ts';
import { libraryC2paReader } from '../src/workers/pipeline/c2pa-reader.ts';
import type { HumanPolicy, ProcessImageTask } from '../src/workers/pipeline/types.ts';
import { isMain, runAlone } from './support/cli.ts';
import { ownBuffer } from './support/images.ts';
import { appDetector, POLICY, setupLikeTheApp } from './support/pipeline-subjects.ts';
import { figure, type Recorder } from './support/report.ts';
import { TARGETS } from './support/targets.ts';
import { cpuAndWall, interleave, ratios } from './support/stats.ts';
import { sizeOf } from '../test/support/fixtures.ts';
import * as pf from '../test/support/provenance-fixtures.ts';

const REPEAT = 10;

export interface ProvenanceOptions {
  rounds: number;
  images: number;
}

export async function provenanceBench(rec: Recorder, opts: ProvenanceOptions): Promise<void> {
  await setupLikeTheApp();
  const dir = await mkdtemp(path.join(tmpdir(), 'pixvote-bench-provenance-'));
  const size = sizeOf(2);
  const lib = await pf.c2paLibrary();
  if (!lib) rec.note('signed images skipped: @contentauth/c2pa-node is not installed (optional dependency)');
  const kinds: Record<string, Buffer[]> = {
    plain: await Promise.all(Array.from({ length: opts.images }, () => pf.plainImage('jpeg', size))),
    xmp: await Promise.all(
      Array.from({ length: opts.images }, () => pf.jpegWithXmpSourceType('trainedAlgorithmicMedia', { size })),
    ),
  };
  if (lib)
    kinds.signed = await Promise.all(
      Array.from({ length: opts.images }, () => pf.c2paSignedJpeg({ sourceType: 'trainedAlgorithmicMedia', size })),
    );
  const detector = await appDetector();
  const c2pa = libraryC2paReader();
  const deps: ProcessImageDeps = { detector, c2pa };
  let n = 0;
  // CPU is counted for the whole process: what a pipeline leaves running when it returns (libvips' threads, V8's
  // collector) lands on whatever is measured next. The stage is the mean of REPEAT runs per image so that this
  // spill-over, a few ms at most, is not counted as the stage's (it showed as 10 ms "stage" samples otherwise).
  const perImage =
    (images: Buffer[], fn: (bytes: Buffer) => Promise<unknown>, repeat = 1) =>
    async () => {
      let cpu = 0;
      for (const bytes of images)
        cpu +=
          (
            await cpuAndWall(async () => {
              for (let k = 0; k < repeat; k++) await fn(bytes);
            })
          ).cpuMs / repeat;
      return cpu / images.length;
    };
  const pipeline = (policy: HumanPolicy) => async (bytes: Buffer) => {
    const task: ProcessImageTask = {
      bytes: ownBuffer(bytes),
      stagingDir: dir,
      baseName: `p${++n}`,
      humanPolicy: policy,
      humanThreshold: 0.99,
    };
    const r = await processImage(task, deps);
    if (!r.ok) throw new Error(`${r.code}: ${r.message}`);
    return r;
  };
  try {
    for (const [kind, images] of Object.entries(kinds)) {
      const check = await readProvenance(images[0]!, 'jpeg', c2pa);
      if (kind !== 'plain' && check.ai_generated !== true) throw new Error(`${kind}: no marker read`);
      const subjects = {
        stage: perImage(images, (b) => readProvenance(b, 'jpeg', c2pa), REPEAT),
        withDetection: perImage(images, pipeline(POLICY)),
        withoutDetection: perImage(images, pipeline('off')),
      };
      await interleave(1, subjects); // warm-up (the library loads on the first manifest)
      const s = await interleave(opts.rounds, subjects);
      const label = `2 MP JPEG, ${kind}`;
      const share = (pipeline: 'with' | 'without', samples: number[]) =>
        figure(
          'provenance',
          `${label}: provenance ÷ pipeline CPU, ${pipeline} detection`,
          '×',
          ratios(s.stage, samples),
          {
            target: TARGETS.provenanceVsPipeline,
          },
        );
      rec.add(
        figure('provenance', `${label}: provenance stage CPU`, 'ms', s.stage),
        figure('provenance', `${label}: whole pipeline CPU, with detection`, 'ms', s.withDetection),
        figure('provenance', `${label}: whole pipeline CPU, without detection`, 'ms', s.withoutDetection),
        share('with', s.withDetection),
        share('without', s.withoutDetection),
      );
    }
  } finally {
    detector.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) {
  await runAlone(
    'provenance',
    { rounds: { type: 'string', default: '5' }, images: { type: 'string', default: '4' } },
    (rec, v) => provenanceBench(rec, { rounds: Number(v.rounds), images: Number(v.images) }),
  );
}
