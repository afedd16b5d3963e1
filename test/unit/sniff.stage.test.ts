import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeFormat, sniff } from '../../src/workers/pipeline/sniff.stage.ts';
import * as fx from '../support/fixtures.ts';

describe('sniff stage', () => {
  it('accepts JPEG, PNG, GIF and WebP by their bytes', async () => {
    const cases = [
      ['jpeg', await fx.photoJpeg({ width: 64, height: 48 })],
      ['png', await fx.pngImage(64, 48)],
      ['gif', await fx.animatedGif({ width: 16, height: 16 })],
      ['webp', await fx.animatedWebp({ width: 16, height: 16 })],
    ] as const;
    for (const [format, bytes] of cases) assert.deepEqual(sniff(bytes), { ok: true, format });
  });

  it('refuses every other format as unsupported_format, naming what it found', async () => {
    for (const { name, bytes } of await fx.refusedFormats()) {
      const result = sniff(bytes);
      assert.equal(result.ok, false, name);
      assert.deepEqual(result, {
        ok: false,
        code: 'unsupported_format',
        message: `image is ${name}; accepted formats are JPEG, PNG, GIF and WebP`,
      });
    }
  });

  it('refuses bytes that are no image at all without guessing a name', () => {
    for (const bytes of [fx.nonImageBytes(), new Uint8Array(0), new Uint8Array([0xff, 0xd8])]) {
      assert.deepEqual(sniff(bytes), {
        ok: false,
        code: 'unsupported_format',
        message: 'file is not a recognised image; accepted formats are JPEG, PNG, GIF and WebP',
      });
    }
  });

  it('recognises SVG after an XML prolog or comment, HEIC by its ftyp brand, and names no video or sound', () => {
    assert.equal(describeFormat(Buffer.from('<!-- drawn by hand -->\n<svg viewBox="0 0 1 1"></svg>')), 'SVG');
    assert.equal(describeFormat(Buffer.from('\0\0\0\x18ftypheic\0\0\0\0mif1heic', 'latin1')), 'HEIC');
    assert.equal(describeFormat(Buffer.from('\0\0\0\x18ftypisom\0\0\0\0', 'latin1')), null);
    assert.equal(describeFormat(Buffer.from('RIFF\0\0\0\0WAVEfmt ', 'latin1')), null);
  });
});
