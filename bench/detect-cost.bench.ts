/**
 * What person detection costs beside encoding, per image, in this process (one thread, as a worker runs it):
 * CPU ms of the detect stage as the pipeline runs it (detectPeople on the encoder's thumb pixels: the model and
 * its decoding) with the shipped detector, and with the previous one (a libvips resize of the working buffer,
 * then a 384 px square letterbox), against CPU ms of encoding the three variants of the same decoded images
 * (their resampling included), in interleaved rounds, at 2 MP and 12 MP (issue 17: detection ≤ 0.5× encode; it
 * was 0.9×). "from the working buffer" is the shipped model with its own resize, as before the detector read
 * the thumb. HUMAN_SECOND_LOOK=boxes is measured too, on the generated JPEGs and on the people-free photos of the
 * evaluation set (where the first look finds weak boxes and the closer look runs).
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
import { jpegs } from './support/images.ts';
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
  const shipped = await createPersonDetector({ modelDir });
  const fitted384 = await createPersonDetector({ modelDir, inputSize: PREVIOUS_SIZE, tiledLook: null });
  const boxes = await createPersonDetector({ modelDir, closerLook: BOX_CLOSER_LOOK });
  const previous = previousDetector(fitted384);
  const dir = await mkdtemp(path.join(tmpdir(), 'pixvote-bench-detect-cost-'));
  // The generated JPEGs, and the people-free photos of the evaluation set at their own sizes: real photos
  // give the first look weak boxes (a closer look runs) where generated ones rarely do.
  const sets: Array<{ label: string; files: Array<{ bytes: Uint8Array; format: 'jpeg' | 'png' }> }> = [];
  for (const mp of opts.sizes) {
    const files = (await jpegs(mp, mp >= 12 ? 3 : 6)).map((img) => ({
      bytes: new Uint8Array(img.bytes),
      format: 'jpeg' as const,
    }));
    sets.push({ label: `${mp} MP JPEG`, files });
  }
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
      const subjects = {
        shipped: perImage((image, i) => detectPeople(image, shipped, { resampled: [resampled[i]!.thumb] })),
        ownResize: perImage((image) => detectPeople(image, shipped)),
        boxes: perImage((image, i) =>
          detectPeople(image, boxes, { resampled: [resampled[i]!.thumb, resampled[i]!.medium] }),
        ),
        fit384: perImage((image, i) =>
          detectPeople(image, fitted384, { resampled: [resampled[i]!.thumb, resampled[i]!.medium] }),
        ),
        previous: perImage((image) => detectPeople(image, previous)),
        encode: perImage((image, i) =>
          encodeVariants(image, { stagingDir: dir, baseName: `cost-${sets.length}-${i}` }),
        ),
      };
      await interleave(1, subjects); // warm-up
      const s = await interleave(opts.rounds, subjects);
      rec.add(
        figure('detect-cost', `${label}: detect CPU, ${shipped.model}`, 'ms', s.shipped),
        figure('detect-cost', `${label}: detect CPU, ${shipped.model} from the working buffer`, 'ms', s.ownResize),
        figure('detect-cost', `${label}: detect CPU, centernet-384-square (before)`, 'ms', s.previous),
        figure('detect-cost', `${label}: encode CPU (3 variants)`, 'ms', s.encode),
        figure('detect-cost', `${label}: detect ÷ encode CPU, ${shipped.model}`, '×', ratios(s.shipped, s.encode), {
          target: TARGETS.detectVsEncode,
        }),
        figure('detect-cost', `${label}: detect ÷ encode CPU, before`, '×', ratios(s.previous, s.encode)),
        figure(
          'detect-cost',
          `${label}: detect ÷ encode CPU, HUMAN_INPUT_SIZE=384 (from the medium variant)`,
          '×',
          ratios(s.fit384, s.encode),
        ),
        figure('detect-cost', `${label}: detect CPU, shipped ÷ before`, '×', ratios(s.shipped, s.previous)),
        figure(
          'detect-cost',
          `${label}: detect ÷ encode CPU, HUMAN_SECOND_LOOK=boxes (${boxes.model})`,
          '×',
          ratios(s.boxes, s.encode),
        ),
      );
    }
  } finally {
    shipped.dispose();
    fitted384.dispose();
    boxes.dispose();
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
