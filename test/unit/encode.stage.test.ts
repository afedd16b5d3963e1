import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { decode } from '../../src/workers/pipeline/decode.stage.ts';
import type { DecodedImage } from '../../src/workers/pipeline/decode.stage.ts';
import { encodeVariants, firstFrame, fitInside, resampleVariants } from '../../src/workers/pipeline/encode.stage.ts';
import { setupSharp } from '../../src/workers/sharp-setup.ts';
import * as fx from '../support/fixtures.ts';

async function decoded(bytes: Buffer, format: 'jpeg' | 'png' | 'gif' | 'webp'): Promise<DecodedImage> {
  const result = await decode(bytes, { format });
  if (!result.ok) assert.fail(result.message);
  return result.image;
}

describe('encode stage', () => {
  let dir: string;
  before(async () => {
    await setupSharp();
    dir = await mkdtemp(path.join(tmpdir(), 'pixvote-encode-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it(
    'writes thumb, medium and full WebP variants of an oriented camera photo, ' + 'with no EXIF, GPS, XMP or ICC left',
    async () => {
      const jpeg = await fx.photoJpeg({ width: 3000, height: 2000, orientation: 6 });
      const input = await sharp(jpeg).metadata();
      assert.ok(input.exif && input.xmp && input.icc, 'the fixture carries EXIF (with GPS), XMP and ICC');

      const image = await decoded(jpeg, 'jpeg');
      const resampled = await resampleVariants(image);
      const { variants } = await encodeVariants(image, { stagingDir: dir, baseName: 'photo' }, resampled);
      // The thumb's resampled pixels (what the ThumbHash reads) are the working buffer's RGB.
      const thumbPixels = firstFrame(resampled.thumb);
      assert.deepEqual([thumbPixels.width, thumbPixels.height, thumbPixels.channels], [213, 320, 3]);
      const thumb = await sharp(variants[0]!.path).raw().toBuffer();
      const diff = thumb.reduce((sum, v, i) => sum + Math.abs(v - thumbPixels.data[i]!), 0) / thumb.length;
      assert.ok(diff < 8, `the staged thumb is those pixels, WebP-encoded (mean difference ${diff.toFixed(2)})`);
      assert.deepEqual(
        variants.map((v) => [v.name, v.width, v.height, path.basename(v.path)]),
        [
          ['thumb', 213, 320, 'photo.thumb.webp'],
          ['medium', 683, 1024, 'photo.medium.webp'],
          ['full', 1365, 2048, 'photo.full.webp'],
        ],
      );
      for (const v of variants) {
        const bytes = await readFile(v.path);
        assert.equal(bytes.length, v.bytes);
        assert.deepEqual(fx.riffChunks(bytes), ['VP8 '], `${v.name}: a bare lossy WebP, no EXIF/XMP/ICCP chunk`);
        const meta = await sharp(bytes).metadata();
        assert.deepEqual([meta.format, meta.width, meta.height], ['webp', v.width, v.height]);
        assert.equal(meta.exif ?? meta.xmp ?? meta.icc ?? meta.orientation, undefined);
        assert.ok(!bytes.includes('GPS') && !bytes.includes('PixvoteCam'));
      }
    },
  );

  it('never enlarges: a 200×150 PNG gives three 200×150 variants, encoded once', async () => {
    const { variants } = await encodeVariants(await decoded(await fx.pngImage(200, 150), 'png'), {
      stagingDir: dir,
      baseName: 'small',
    });
    assert.deepEqual(
      variants.map((v) => [v.width, v.height]),
      [
        [200, 150],
        [200, 150],
        [200, 150],
      ],
    );
    const files = await Promise.all(variants.map((v) => readFile(v.path)));
    assert.ok(files.every((f) => f.equals(files[0]!)));
  });

  it('keeps alpha', async () => {
    const {
      variants: [thumb],
    } = await encodeVariants(await decoded(await fx.pngWithAlpha(400, 300), 'png'), {
      stagingDir: dir,
      baseName: 'alpha',
    });
    assert.equal((await sharp(thumb!.path).metadata()).hasAlpha, true);
    assert.ok(fx.riffChunks(await readFile(thumb!.path)).includes('ALPH'));
  });

  it('keeps an animated GIF animated at every size, with its frame delays and loop', async () => {
    const image = await decoded(await fx.animatedGif({ width: 1200, height: 800, frames: 3 }), 'gif');
    const resampled = await resampleVariants(image);
    const { variants } = await encodeVariants(image, { stagingDir: dir, baseName: 'anim' }, resampled);
    // The ThumbHash reads the thumb's first frame only.
    const thumbPixels = firstFrame(resampled.thumb);
    assert.deepEqual([thumbPixels.width, thumbPixels.height, thumbPixels.channels], [320, 213, 4]);
    assert.equal(thumbPixels.data.length, 320 * 213 * 4);
    assert.deepEqual(
      variants.map((v) => [v.width, v.height]),
      [
        [320, 213],
        [1024, 683],
        [1200, 800],
      ],
    );
    for (const v of variants) {
      const meta = await sharp(v.path, { pages: -1 }).metadata();
      assert.deepEqual([meta.pages, meta.width, meta.pageHeight, meta.loop], [3, v.width, v.height, 0], v.name);
      assert.deepEqual(meta.delay, [100, 110, 120]);
      assert.ok(fx.riffChunks(await readFile(v.path)).includes('ANIM'));
    }
    const staged = (await readdir(dir)).filter((n) => n.startsWith('anim.'));
    assert.deepEqual(staged.sort(), ['anim.full.webp', 'anim.medium.webp', 'anim.thumb.webp']);
  });

  it('fits a variant inside its box, rounding to the nearest pixel and never enlarging', () => {
    assert.deepEqual(fitInside(3000, 2000, 320), { width: 320, height: 213 });
    assert.deepEqual(fitInside(2000, 3000, 1024), { width: 683, height: 1024 });
    assert.deepEqual(fitInside(5000, 1, 320), { width: 320, height: 1 });
    assert.deepEqual(fitInside(100, 50, 320), { width: 100, height: 50 });
  });
});
