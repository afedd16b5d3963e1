/**
 * What person detection costs beside encoding, per image, in this process (one thread, as a worker runs it):
 * CPU ms of the detect stage as the pipeline runs it (detectPeople on the resampled variants: the model, its
 * inputs and its decoding) against CPU ms of encoding the three variants of the same decoded images (their
 * resampling included), in interleaved rounds, at 2 MP and 12 MP, on 12-frame GIFs (every distinct frame looked at,
 * every frame encoded) and on the people-free photos of the evaluation set scaled to 2 MP (where the first look finds
 * weak boxes and the closer look runs). Issue 17: detection ≤ 0.5×
 * encode; it was 0.9×.
 *
 * Detectors: the shipped one (a 320 px first look and the closer look at its boxes, HUMAN_SECOND_LOOK=boxes, on
 * the runtime HUMAN_RUNTIME=auto picks: onnxruntime-node here); its first look alone (HUMAN_SECOND_LOOK=off); the
 * shipped one on TF.js (HUMAN_RUNTIME=tfjs, the fallback where onnxruntime-node does not install); and the one
 * before issue 17 (a libvips resize of the working buffer, a 384 px square letterbox, on TF.js wasm).
 *
 *   npm run bench:detect-cost [-- --rounds 5]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import sharp from 'sharp';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { decode, type DecodedImage } from '../src/workers/pipeline/decode.stage.ts';
import { detectPeople } from '../src/workers/pipeline/detect-frames.ts';
import { BOX_CLOSER_LOOK, createPersonDetector } from '../src/workers/pipeline/detect.stage.ts';
import { encodeVariants, resampleVariants, type VariantPixels } from '../src/workers/pipeline/encode.stage.ts';
import type { PersonDetector, RawImage } from '../src/workers/pipeline/types.ts';
import { isMain, runAlone } from './support/cli.ts';
import { animations, jpegs } from './support/images.ts';
import { getLabelledPhotos } from '../test/support/photos.ts';
import { detectorModelDir, setupLikeTheApp } from './support/pipeline-subjects.ts';
import { figure, type Recorder } from './support/report.ts';
import { TARGETS } from './support/targets.ts';
import { cpuAndWall, interleave, ratios } from './support/stats.ts';

const PREVIOUS_SIZE = 384;

/**
 * The detector as it was before issue 17: the image prepared inside 384×384 and letterboxed into the square
 * (black padding, centred), the model run on 384×384. Same model and decoder; only the framing differs.
 */
function previousDetector(fitted: PersonDetector): PersonDetector {
  const square = (rgb: RawImage): RawImage => {
    const size = PREVIOUS_SIZE;
    const c = rgb.channels;
    const data = new Uint8Array(size * size * c);
    const left = (size - rgb.width) >> 1;
    const top = (size - rgb.height) >> 1;
    for (let y = 0; y < rgb.height; y++) {
      data.set(rgb.data.subarray(y * rgb.width * c, (y + 1) * rgb.width * c), ((top + y) * size + left) * c);
    }
    return { data, width: size, height: size, channels: c };
  };
  return {
    ...fitted,
    model: 'centernet-384-square',
    inputSpec: { size: PREVIOUS_SIZE, fit: 'contain' },
    detect: (rgb) => fitted.detect(square(rgb)),
    detectMany: (frames) => fitted.detectMany!(frames.map(square)),
  };
}

export async function detectCostBench(
  rec: Recorder,
  opts: { rounds: number; sizes: number[]; photos?: boolean },
): Promise<void> {
  await setupLikeTheApp();
  const modelDir = await detectorModelDir();
  const shipped = await createPersonDetector({ modelDir, closerLook: BOX_CLOSER_LOOK });
  const firstLook = await createPersonDetector({ modelDir });
  const onTfjs = await createPersonDetector({ modelDir, closerLook: BOX_CLOSER_LOOK, runtime: 'tfjs' });
  const fitted384 = await createPersonDetector({ modelDir, inputSize: PREVIOUS_SIZE, runtime: 'tfjs' });
  const previous = previousDetector(fitted384);
  const dir = await mkdtemp(path.join(tmpdir(), 'pixvote-bench-detect-cost-'));
  // The generated JPEGs, and the people-free photos of the evaluation set at their own sizes: real photos
  // give the first look weak boxes (a closer look runs) where generated ones rarely do.
  const sets: Array<{ label: string; files: Array<{ bytes: Uint8Array; format: 'jpeg' | 'png' | 'gif' }> }> = [];
  for (const mp of opts.sizes) {
    const files = (await jpegs(mp, mp >= 12 ? 3 : 6)).map((img) => ({
      bytes: new Uint8Array(img.bytes),
      format: 'jpeg' as const,
    }));
    sets.push({ label: `${mp} MP JPEG`, files });
  }
  // Animations: every distinct frame gets a first look, and the image one budget of closer-look crops.
  const gifs = (await animations(2)).distinct;
  sets.push({
    label: '480×360 GIF, 12 distinct frames',
    files: gifs.map((g) => ({ bytes: new Uint8Array(g.bytes), format: 'gif' as const })),
  });
  if (opts.photos) {
    // Scaled to 2 MP (aspect kept) and re-encoded as JPEG, so that encoding costs what a 2 MP upload's does.
    const free = (await getLabelledPhotos()).filter((p) => !p.people);
    const files = [];
    for (const p of free) {
      const { width = 1, height = 1 } = await sharp(p.path).metadata();
      const scale = Math.sqrt(2e6 / (width * height));
      const resized = sharp(p.path)
        .rotate()
        .resize(Math.round(width * scale), Math.round(height * scale))
        .jpeg({ quality: 90 });
      files.push({ bytes: new Uint8Array(await resized.toBuffer()), format: 'jpeg' as const });
    }
    sets.push({ label: `2 MP people-free photos (${free.length}, evaluation set)`, files });
  }
  try {
    for (const { label, files } of sets) {
      const images: DecodedImage[] = [];
      const resampled: VariantPixels[] = [];
      for (const img of files) {
        const decoded = await decode(img.bytes, { format: img.format });
        if (!decoded.ok) throw new Error(decoded.message);
        images.push(decoded.image);
        resampled.push(await resampleVariants(decoded.image));
      }
      const perImage = (fn: (image: DecodedImage, i: number) => Promise<unknown>) => async () => {
        const { cpuMs } = await cpuAndWall(async () => {
          for (const [i, image] of images.entries()) await fn(image, i);
        });
        return cpuMs / images.length;
      };
      const variants = (i: number) => ({ resampled: [resampled[i]!.thumb, resampled[i]!.medium] });
      const subjects = {
        shipped: perImage((image, i) => detectPeople(image, shipped, variants(i))),
        firstLook: perImage((image, i) => detectPeople(image, firstLook, variants(i))),
        onTfjs: perImage((image, i) => detectPeople(image, onTfjs, variants(i))),
        previous: perImage((image) => detectPeople(image, previous)),
        encode: perImage((image, i) =>
          encodeVariants(image, { stagingDir: dir, baseName: `cost-${sets.length}-${i}` }),
        ),
      };
      await interleave(1, subjects); // warm-up
      const s = await interleave(opts.rounds, subjects);
      const shippedName = `${shipped.model} on ${shipped.backend}`;
      rec.add(
        figure('detect-cost', `${label}: detect CPU, ${shippedName}`, 'ms', s.shipped),
        figure('detect-cost', `${label}: detect CPU, centernet-384-square on wasm (before)`, 'ms', s.previous),
        figure('detect-cost', `${label}: encode CPU (3 variants)`, 'ms', s.encode),
        figure('detect-cost', `${label}: detect ÷ encode CPU, ${shippedName}`, '×', ratios(s.shipped, s.encode), {
          target: TARGETS.detectVsEncode,
        }),
        figure(
          'detect-cost',
          `${label}: detect ÷ encode CPU, first look alone (HUMAN_SECOND_LOOK=off)`,
          '×',
          ratios(s.firstLook, s.encode),
        ),
        figure(
          'detect-cost',
          `${label}: detect ÷ encode CPU, ${onTfjs.model} on ${onTfjs.backend} (HUMAN_RUNTIME=tfjs)`,
          '×',
          ratios(s.onTfjs, s.encode),
        ),
        figure('detect-cost', `${label}: detect ÷ encode CPU, before`, '×', ratios(s.previous, s.encode)),
        figure('detect-cost', `${label}: detect CPU, shipped ÷ before`, '×', ratios(s.shipped, s.previous)),
      );
    }
  } finally {
    for (const d of [shipped, firstLook, onTfjs, fitted384]) d.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) {
  await runAlone(
    'detect-cost',
    {
      rounds: { type: 'string', default: '5' },
      sizes: { type: 'string', default: '2,12' },
      photos: { type: 'boolean', default: true },
    },
    (rec, v) =>
      detectCostBench(rec, {
        rounds: Number(v.rounds),
        sizes: String(v.sizes).split(',').map(Number),
        photos: Boolean(v.photos),
      }),
  );
}
