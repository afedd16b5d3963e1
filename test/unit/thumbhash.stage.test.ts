import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { thumbHashToApproximateAspectRatio, thumbHashToAverageRGBA } from 'thumbhash';
import { decode, derive } from '../../src/workers/pipeline/decode.stage.ts';
import { THUMBHASH_MAX_SIDE, thumbhash } from '../../src/workers/pipeline/thumbhash.stage.ts';
import { setupSharp } from '../../src/workers/sharp-setup.ts';
import * as fx from '../support/fixtures.ts';

/** The placeholder as the pipeline makes it: one decode, a ≤ 100 px RGBA image derived from it. */
async function placeholderOf(bytes: Buffer, format: 'jpeg' | 'png'): Promise<Uint8Array> {
  const result = await decode(bytes, { format });
  if (!result.ok) assert.fail(result.message);
  const rgba = await derive(result.image, {
    width: THUMBHASH_MAX_SIDE,
    height: THUMBHASH_MAX_SIDE,
    fit: 'inside',
    channels: 4,
  });
  const hash = thumbhash(rgba);
  assert.match(hash, /^[A-Za-z0-9+/]+={0,2}$/);
  return Buffer.from(hash, 'base64');
}

describe('thumbhash stage', () => {
  before(() => setupSharp());

  it('encodes the aspect ratio and average colour of the image in a few base64 bytes', async () => {
    const pixels = fx.photoPixels(800, 400, 9);
    const jpeg = await fx.photoJpeg({ width: 800, height: 400, seed: 9, metadata: false });
    const hash = await placeholderOf(jpeg, 'jpeg');
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
    const avg = thumbHashToAverageRGBA(await placeholderOf(await fx.pngWithAlpha(300, 300), 'png'));
    assert.ok(avg.a < 0.9);
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
