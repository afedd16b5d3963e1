/**
 * Child process for the pipeline benchmark's memory figure: starts a MediaPool of N workers with the person
 * detector loaded as the app does by default (the closer look on; HUMAN_SECOND_LOOK=off and HUMAN_RUNTIME as for
 * the app) (N = 0: the same process without a pool), runs every image through it N × 2 times, then
 * prints its resident memory as JSON. Worker threads share the process, so memory per worker is the
 * difference to N = 0, divided by N.
 *
 *   node bench/support/worker-rss.probe.ts <workers> <modelDir> <image files…>
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { DetectorRuntime } from '../../src/workers/pipeline/types.ts';
import { MediaPool } from '../../src/workers/pool.ts';
import { setupSharpProcess } from '../../src/workers/sharp-setup.ts';
import { ownBuffer } from './images.ts';

const [workersArg, modelDir, ...files] = process.argv.slice(2);
const workers = Number(workersArg);
await setupSharpProcess();
const images = await Promise.all(files.map((f) => readFile(f)));
const stagingDir = await mkdtemp(path.join(tmpdir(), 'pixvote-rss-'));
if (workers > 0) {
  const { HUMAN_SECOND_LOOK: look, HUMAN_RUNTIME: runtime } = process.env;
  const pool = await MediaPool.start({
    workers,
    maxQueue: 1000,
    modelDir: modelDir!,
    preloadDetector: true,
    detector: { closerLook: look !== 'off', ...(runtime ? { runtime: runtime as DetectorRuntime } : {}) },
  });
  await pool.ping();
  let n = 0;
  for (let pass = 0; pass < 2; pass++) {
    await Promise.all(
      images.flatMap((bytes) =>
        Array.from({ length: workers }, () =>
          pool.process({
            bytes: ownBuffer(bytes),
            stagingDir,
            baseName: `rss-${n++}`,
            humanPolicy: 'flag',
            humanThreshold: 1,
          }),
        ),
      ),
    );
  }
  console.log(JSON.stringify(measure()));
  await pool.close();
} else {
  console.log(JSON.stringify(measure()));
}
await rm(stagingDir, { recursive: true, force: true });

function measure() {
  return { rssMb: process.memoryUsage.rss() / 2 ** 20, peakMb: process.resourceUsage().maxRSS / 1024 };
}
