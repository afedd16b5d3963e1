import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import type { ImageFormat } from '../../src/domain/image-format.ts';
import { DECODE_LIMITS, decode, derive, isSrgbProfile } from '../../src/workers/pipeline/decode.stage.ts';
import type { DecodedImage } from '../../src/workers/pipeline/decode.stage.ts';
import { setupSharp } from '../../src/workers/sharp-setup.ts';
import type { StageRejection } from '../../src/workers/pipeline/types.ts';
import * as fx from '../support/fixtures.ts';

async function decoded(bytes: Uint8Array, format: ImageFormat = 'jpeg'): Promise<DecodedImage> {
  const result = await decode(bytes, { format });
  if (!result.ok) assert.fail(result.message);
  return result.image;
}

async function rejected(bytes: Uint8Array): Promise<StageRejection> {
  const result = await decode(bytes, { format: 'png' });
  if (result.ok) assert.fail('expected a rejection');
  return result;
}

const pixelAt = (img: DecodedImage, x: number, y: number) => {
  const i = (y * img.raw.width + x) * img.raw.channels;
  return [...img.raw.data.subarray(i, i + img.raw.channels)];
};

describe('decode stage', () => {
  before(() => setupSharp());

  it('applies EXIF orientation 6: a 640×480 camera JPEG is displayed and decoded as 480×640', async () => {
    const img = await decoded(await fx.photoJpeg({ width: 640, height: 480, orientation: 6 }));
    assert.deepEqual([img.width, img.height], [480, 640]);
    assert.deepEqual([img.raw.width, img.raw.height, img.raw.channels], [480, 640, 3]);
    assert.equal(img.animated, false);
  });

  it(
    'shrinks the working buffer to 2048 on the long side, ' + 'keeping the original size as the displayed size',
    async () => {
      const img = await decoded(await fx.photoJpeg({ width: 3000, height: 2000, metadata: false }));
      assert.deepEqual([img.width, img.height], [3000, 2000]);
      assert.deepEqual([img.raw.width, img.raw.height], [2048, 1365]);
    },
  );

  it('never enlarges, and keeps alpha when there is some', async () => {
    const img = await decoded(await fx.pngWithAlpha(120, 90), 'png');
    assert.deepEqual([img.raw.width, img.raw.height, img.raw.channels], [120, 90, 4]);
    assert.equal(pixelAt(img, 0, 0)[3], 0);
  });

  it('gives greyscale, CMYK and 16-bit input three 8-bit sRGB channels', async () => {
    const png = await fx.pngImage(64, 48);
    const inputs = {
      grey: await sharp(png).greyscale().jpeg().toBuffer(),
      cmyk: await sharp(png).toColourspace('cmyk').jpeg().toBuffer(),
      rgb16: await sharp(png).toColourspace('rgb16').png().toBuffer(),
    };
    for (const [name, bytes] of Object.entries(inputs)) {
      const img = await decoded(bytes);
      assert.deepEqual([img.raw.channels, img.raw.data.length], [3, 64 * 48 * 3], name);
    }
  });

  it('converts Display P3 images (8- and 16-bit) to sRGB, and reads sRGB-tagged ones as they are', async () => {
    const red = {
      data: new Uint8Array(64 * 48 * 3).map((_, i) => [200, 60, 50][i % 3]!),
      width: 64,
      height: 48,
      channels: 3,
    } as const;
    const tagged = (icc: string) => sharp(red.data, { raw: red }).withIccProfile(icc);
    const inputs = {
      'P3 JPEG': await tagged('p3').jpeg({ quality: 95 }).toBuffer(),
      'sRGB JPEG': await tagged('srgb').jpeg({ quality: 95 }).toBuffer(),
      '16-bit P3 PNG': await tagged('p3').toColourspace('rgb16').png().toBuffer(),
      '16-bit sRGB PNG': await tagged('srgb').toColourspace('rgb16').png().toBuffer(),
    };
    for (const [name, bytes] of Object.entries(inputs)) {
      const [r, g, b] = pixelAt(await decoded(bytes), 32, 24);
      assert.ok(Math.abs(r! - 200) <= 4 && Math.abs(g! - 60) <= 4 && Math.abs(b! - 50) <= 4, `${name}: ${r},${g},${b}`);
    }
  });

  it('keeps every frame of an animated GIF and WebP, with delays and loop', async () => {
    for (const [format, bytes] of [
      ['gif', await fx.animatedGif()],
      ['webp', await fx.animatedWebp()],
    ] as const) {
      const img = await decoded(bytes, format);
      assert.equal(img.animated, true, format);
      assert.equal(img.frames, 3);
      assert.deepEqual([img.width, img.height, img.pageHeight], [240, 160, 160]);
      assert.deepEqual([img.raw.width, img.raw.height], [240, 480]);
      assert.deepEqual(img.delay, [100, 110, 120]);
      assert.equal(img.loop, 0);
    }
  });

  it('rejects a PNG whose header claims 100000×100000 from the header alone, without allocating it', async () => {
    const rss = process.memoryUsage().rss;
    const result = await rejected(fx.hugeHeaderPng());
    assert.deepEqual(result, {
      ok: false,
      code: 'invalid_image',
      message: 'image is 100000×100000 = 10000 MP; the limit is 50 MP',
    });
    assert.ok(process.memoryUsage().rss - rss < 100e6, 'RSS grew by 100 MB or more');
  });

  it('counts every frame against the pixel limit: 20 frames on a 2000×2000 GIF canvas are 80 MP', async () => {
    const rss = process.memoryUsage().rss;
    const result = await rejected(fx.gifCanvasBomb(2000, 2000, 20));
    assert.equal(result.message, 'animation is 2000×2000 × 20 frames = 80 MP; the limit is 50 MP');
    assert.ok(process.memoryUsage().rss - rss < 100e6, 'RSS grew by 100 MB or more');
  });

  it('shrinks the frames of a long animation so its working buffer stays within 16 MP', async () => {
    const img = await decoded(fx.gifCanvasBomb(2000, 2000, 5), 'gif');
    assert.equal(img.frames, 5);
    assert.ok(img.raw.width * img.raw.height <= DECODE_LIMITS.maxAnimationPixels);
    assert.deepEqual([img.width, img.height, img.raw.width, img.pageHeight], [2000, 2000, 1788, 1788]);
  });

  it('accepts 200 frames and rejects 201', async () => {
    assert.equal((await decoded(await fx.manyFramesGif(200), 'gif')).frames, 200);
    assert.deepEqual(await rejected(await fx.manyFramesGif(201)), {
      ok: false,
      code: 'invalid_image',
      message: 'animation has 201 frames; the limit is 200',
    });
  });

  it('rejects truncated and corrupt data as invalid_image', async () => {
    assert.match(
      (await rejected(await fx.truncatedJpeg())).message,
      /^image data is corrupt or truncated: .*premature end/i,
    );
    assert.match((await rejected(await fx.corruptPng())).message, /^image data is corrupt or truncated: /);
    assert.match((await rejected(Buffer.from('GIF89a\x10\x00', 'latin1'))).message, /^image header is unreadable: /);
  });

  it('derives a 32×32 grey square, a ≤ 100 px RGBA thumbnail and any frame from the working buffer', async () => {
    const img = await decoded(await fx.animatedGif({ width: 240, height: 160 }), 'gif');
    const grey = await derive(img, { width: 32, height: 32, fit: 'fill', channels: 1 });
    assert.deepEqual([grey.width, grey.height, grey.channels, grey.data.length], [32, 32, 1, 1024]);
    const rgba = await derive(img, { width: 100, height: 100, fit: 'inside', channels: 4 });
    assert.deepEqual([rgba.width, rgba.height, rgba.data.length], [100, 67, 100 * 67 * 4]);
    const first = await derive(img, { width: 24, height: 16, fit: 'fill', channels: 3, frame: 0 });
    const third = await derive(img, { width: 24, height: 16, fit: 'fill', channels: 3, frame: 2 });
    assert.notDeepEqual(first.data, third.data);
  });

  it('recognises an sRGB ICC profile by its description', async () => {
    const tagged = async (icc: string) =>
      (
        await sharp(
          await sharp(await fx.pngImage(8, 8))
            .withIccProfile(icc)
            .jpeg()
            .toBuffer(),
        ).metadata()
      ).icc!;
    assert.equal(isSrgbProfile(await tagged('srgb')), true);
    assert.equal(isSrgbProfile(await tagged('p3')), false);
    assert.equal(isSrgbProfile(new Uint8Array(64)), false);
  });
});
