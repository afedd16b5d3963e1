import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { thumbHashToApproximateAspectRatio, thumbHashToAverageRGBA, thumbHashToRGBA } from 'thumbhash';
import { decode, derive, type DecodedImage } from '../../src/workers/pipeline/decode.stage.ts';
import { firstFrame, resampleVariants } from '../../src/workers/pipeline/encode.stage.ts';
import {
  shrinkToRgba,
  THUMBHASH_MAX_SIDE,
  thumbhash,
  thumbhashOf,
} from '../../src/workers/pipeline/thumbhash.stage.ts';
import { setupSharp } from '../../src/workers/sharp-setup.ts';
import * as fx from '../support/fixtures.ts';

describe('thumbhash stage', () => {
  let dir: string;
  before(async () => {
    await setupSharp();
    dir = await mkdtemp(path.join(tmpdir(), 'pixvote-thumbhash-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const decoded = async (bytes: Buffer, format: 'jpeg' | 'png' | 'gif'): Promise<DecodedImage> => {
    const result = await decode(bytes, { format });
    if (!result.ok) assert.fail(result.message);
    return result.image;
  };

  /** The placeholder as the pipeline makes it: from the pixels of the thumb variant. */
  async function placeholderOf(image: DecodedImage): Promise<string> {
    const hash = thumbhashOf(firstFrame((await resampleVariants(image)).thumb));
    assert.match(hash, /^[A-Za-z0-9+/]+={0,2}$/);
    return hash;
  }

  /** How it was made before: a fresh ≤ 100 px resize of the whole working buffer by sharp. */
  const fromWorkingBuffer = async (image: DecodedImage): Promise<string> =>
    thumbhash(
      await derive(image, { width: THUMBHASH_MAX_SIDE, height: THUMBHASH_MAX_SIDE, fit: 'inside', channels: 4 }),
    );

  /** Mean and largest difference (0–255) between the placeholders two hashes render to. */
  function rendered(a: string, b: string): { mean: number; max: number } {
    const x = thumbHashToRGBA(Buffer.from(a, 'base64'));
    const y = thumbHashToRGBA(Buffer.from(b, 'base64'));
    assert.deepEqual([x.w, x.h], [y.w, y.h], 'the same placeholder size (aspect ratio)');
    let sum = 0;
    let max = 0;
    for (let i = 0; i < x.rgba.length; i++) {
      const d = Math.abs(x.rgba[i]! - y.rgba[i]!);
      sum += d;
      max = Math.max(max, d);
    }
    return { mean: sum / x.rgba.length, max };
  }

  it('encodes the aspect ratio and average colour of the image in a few base64 bytes', async () => {
    const pixels = fx.photoPixels(800, 400, 9);
    const jpeg = await fx.photoJpeg({ width: 800, height: 400, seed: 9, metadata: false });
    const hash = Buffer.from(await placeholderOf(await decoded(jpeg, 'jpeg')), 'base64');
    assert.ok(hash.length <= 25);
    // ThumbHash keeps the aspect ratio only roughly (1.75 here for 2).
    assert.ok(Math.abs(thumbHashToApproximateAspectRatio(hash) - 2) < 0.3);
    const mean = [0, 1, 2].map(
      (c) => pixels.data.reduce((sum, v, i) => (i % 3 === c ? sum + v : sum), 0) / (800 * 400) / 255,
    );
    const avg = thumbHashToAverageRGBA(hash);
    assert.ok(
      Math.abs(avg.r - mean[0]!) < 0.08 && Math.abs(avg.g - mean[1]!) < 0.08 && Math.abs(avg.b - mean[2]!) < 0.08,
    );
    assert.equal(avg.a, 1);
  });

  it('keeps transparency', async () => {
    const hash = await placeholderOf(await decoded(await fx.pngWithAlpha(300, 300), 'png'));
    assert.ok(thumbHashToAverageRGBA(Buffer.from(hash, 'base64')).a < 0.9);
  });

  it('from the thumb variant, renders the same-looking placeholder as from the whole working buffer', async () => {
    const cases: Array<[string, DecodedImage]> = [
      ['4000×3000 photo', await decoded(await fx.photoJpeg({ width: 4000, height: 3000, seed: 4 }), 'jpeg')],
      ['portrait photo', await decoded(await fx.photoJpeg({ width: 900, height: 1600, seed: 5 }), 'jpeg')],
      ['PNG with alpha', await decoded(await fx.pngWithAlpha(640, 480), 'png')],
      ['image smaller than the hash input', await decoded(await fx.pngImage(80, 60), 'png')],
      ['animation (first frame)', await decoded(await fx.animatedGif({ width: 600, height: 400, frames: 3 }), 'gif')],
    ];
    for (const [name, image] of cases) {
      const hash = await placeholderOf(image);
      // The reference: every pixel of the working buffer's first frame averaged into ≤ 100×100.
      const { width, channels, data } = image.raw;
      const exact = thumbhash(shrinkToRgba({ data, width, height: image.pageHeight, channels }, THUMBHASH_MAX_SIDE));
      const vsExact = rendered(hash, exact);
      // Measured from the 32 px input: photos identical; mean ≤ 2.2 of 255 and at most 34 at a nearly
      // transparent edge (PNG, GIF) or on an 80×60 image; another photo's placeholder differs by tens.
      assert.ok(vsExact.mean <= 3 && vsExact.max <= 40, `${name}: ${JSON.stringify(vsExact)}`);
      // And, on opaque images, from what the stage did before: sharp resizing the whole working buffer
      // (measured ≤ 2.1 / 14). Not where the image is nearly transparent: there sharp's 8-bit premultiplied
      // resize strays from the exact mean (5.9 on the PNG, where the thumb's placeholder is 2.1 from it).
      if (image.raw.channels === 3) {
        const before = rendered(hash, await fromWorkingBuffer(image));
        assert.ok(before.mean <= 3 && before.max <= 16, `${name} vs before: ${JSON.stringify(before)}`);
      }
    }
    const other = rendered(
      await placeholderOf(cases[0]![1]),
      await placeholderOf(await decoded(await fx.photoJpeg({ width: 4000, height: 3000, seed: 6 }), 'jpeg')),
    );
    assert.ok(other.mean > 8, `another photo's placeholder differs far more (mean ${other.mean.toFixed(2)})`);
  });

  it('shrinks RGB to RGBA by averaging the source pixels each output pixel covers', () => {
    // 4×2 RGB: the left 2×2 block red-ish, the right one blue-ish.
    const data = Uint8Array.from([
      ...[200, 0, 0, 100, 0, 0, 0, 0, 200, 0, 0, 100],
      ...[100, 0, 0, 200, 20, 0, 0, 0, 100, 0, 20, 200],
    ]);
    const out = shrinkToRgba({ data, width: 4, height: 2, channels: 3 }, 2);
    assert.deepEqual([out.width, out.height, out.channels], [2, 1, 4]);
    assert.deepEqual([...out.data], [150, 5, 0, 255, 0, 5, 150, 255]);
  });

  it('weights colours by alpha, so transparent pixels do not bleed into the average', () => {
    // A transparent white pixel beside an opaque red one, and a fully transparent pair.
    const data = Uint8Array.from([255, 255, 255, 0, 200, 0, 0, 255, 9, 9, 9, 0, 9, 9, 9, 0]);
    const out = shrinkToRgba({ data, width: 4, height: 1, channels: 4 }, 2);
    assert.deepEqual([...out.data], [200, 0, 0, 128, 0, 0, 0, 0]);
  });

  it('never enlarges and keeps the aspect ratio inside the box', () => {
    const rgb = (width: number, height: number) => ({
      data: new Uint8Array(width * height * 3),
      width,
      height,
      channels: 3 as const,
    });
    const size = (r: { width: number; height: number }) => [r.width, r.height];
    assert.deepEqual(size(shrinkToRgba(rgb(80, 60), 100)), [80, 60]);
    assert.deepEqual(size(shrinkToRgba(rgb(320, 213), 100)), [100, 67]);
    assert.deepEqual(size(shrinkToRgba(rgb(320, 2), 100)), [100, 1]);
    assert.throws(() => shrinkToRgba({ ...rgb(4, 4), channels: 1 }, 2), TypeError);
  });

  it('refuses anything but RGBA of at most 100×100', () => {
    assert.throws(
      () => thumbhash({ data: new Uint8Array(101 * 10 * 4), width: 101, height: 10, channels: 4 }),
      TypeError,
    );
    assert.throws(
      () => thumbhash({ data: new Uint8Array(10 * 10 * 3), width: 10, height: 10, channels: 3 }),
      TypeError,
    );
  });
});
