/**
 * The person filter's false rejects on people-free pictures it makes itself (issue 32): `images` pictures of the
 * generated kinds of bench/support/people-free-generator.ts (the same generator as research/person-filter-eval.ts;
 * deterministic for a seed), each scored as a worker scores an upload (decode, then detectPeople with the shipped
 * detector: the 320 px first look, the closer look at its boxes), counted as refused at or above the calibrated
 * sure score (CALIBRATED_BOXES_THRESHOLD) and as held at or above the review score (CALIBRATED_REVIEW_THRESHOLD).
 * bench:ci guards the count of refused pictures (a rate, not a time: exact for the seed).
 *
 *   npm run bench:person-filter [-- --images 300 --seed 7]
 */
import { parseArgs } from 'node:util';
import { CALIBRATED_BOXES_THRESHOLD, CALIBRATED_REVIEW_THRESHOLD } from '../src/domain/person-policy.ts';
import { ensureModels } from '../src/workers/detector/model-files.fetch.ts';
import { decode } from '../src/workers/pipeline/decode.stage.ts';
import { detectPeople } from '../src/workers/pipeline/detect-frames.ts';
import { BOX_CLOSER_LOOK, createPersonDetector } from '../src/workers/pipeline/detect.stage.ts';
import { isMain } from './support/cli.ts';
import { generatePeopleFree, GENERATED_KINDS, type GeneratedKind } from './support/people-free-generator.ts';
import { figure, Recorder, type Recorder as RecorderType } from './support/report.ts';
import { TARGETS } from './support/targets.ts';

export interface PersonFilterResult {
  images: number;
  refused: number;
  held: number;
  perKind: Record<GeneratedKind, { n: number; refused: number; held: number; max: number }>;
  seconds: number;
}

/** Scores `images` generated pictures (kinds in turn); seed 2 by default, the evaluation's being 1. */
export async function personFilterBench(
  rec: RecorderType,
  opts: { images?: number; seed?: number } = {},
): Promise<PersonFilterResult> {
  const images = opts.images ?? 300;
  const seed = opts.seed ?? 2;
  const started = Date.now();
  const { dir: modelDir } = await ensureModels();
  const detector = await createPersonDetector({ modelDir, closerLook: BOX_CLOSER_LOOK });
  const perKind = Object.fromEntries(
    GENERATED_KINDS.map((k) => [k, { n: 0, refused: 0, held: 0, max: 0 }]),
  ) as PersonFilterResult['perKind'];
  let refused = 0;
  let held = 0;
  try {
    const make = (i: number) =>
      generatePeopleFree(GENERATED_KINDS[i % GENERATED_KINDS.length]!, Math.floor(i / GENERATED_KINDS.length), seed);
    // The next picture is drawn (libvips, its own threads) while the detector looks at this one.
    let next = make(0);
    for (let i = 0; i < images; i++) {
      const g = await next;
      if (i + 1 < images) next = make(i + 1);
      const kind = g.kind;
      const decoded = await decode(g.bytes, { format: g.format });
      if (!decoded.ok) throw new Error(`${g.id}: ${decoded.message}`);
      const { score } = await detectPeople(decoded.image, detector);
      const row = perKind[kind];
      row.n++;
      row.max = Math.max(row.max, score);
      if (score >= CALIBRATED_BOXES_THRESHOLD) {
        row.refused++;
        refused++;
        rec.note(`refused ${g.id} (${g.format}, ${g.width}×${g.height}): score ${score.toFixed(3)}`);
      } else if (score >= CALIBRATED_REVIEW_THRESHOLD) {
        row.held++;
        held++;
      }
    }
  } finally {
    detector.dispose();
  }
  const seconds = (Date.now() - started) / 1000;
  rec.add(
    figure('person-filter', `people-free pictures refused, of ${images} generated (seed ${seed})`, '', refused, {
      target: TARGETS.personFilterFalseRejects,
      note: `${((100 * refused) / images).toFixed(2)} % refused, ${((100 * held) / images).toFixed(2)} % held`,
    }),
  );
  rec.note(
    `person filter: ${refused} of ${images} refused (score ≥ ${CALIBRATED_BOXES_THRESHOLD}), ${held} held ` +
      `(≥ ${CALIBRATED_REVIEW_THRESHOLD}); per kind ` +
      GENERATED_KINDS.map(
        (k) => `${k} ${perKind[k].refused}+${perKind[k].held}/${perKind[k].n} (max ${perKind[k].max.toFixed(3)})`,
      ).join(', ') +
      `; ${seconds.toFixed(0)} s`,
  );
  return { images, refused, held, perKind, seconds };
}

if (isMain(import.meta.url)) {
  const { values } = parseArgs({
    options: { images: { type: 'string', default: '300' }, seed: { type: 'string', default: '2' } },
  });
  const rec = new Recorder('person-filter');
  await personFilterBench(rec, { images: Number(values.images), seed: Number(values.seed) });
}
