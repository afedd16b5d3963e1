/** The tiled look evaluated in research/detector-eval.md, not shipped (research/tiled-look.ts). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import sharp from 'sharp';
import { createTiledLookDetector, needsTiledLook, TILED_LOOK, tileFrame, tileGrid } from '../../research/tiled-look.ts';
import { ensureModels } from '../../src/workers/detector/model-files.fetch.ts';
import { toImageBox } from '../../src/workers/detector/person-boxes.decode.ts';
import { createPersonDetector } from '../../src/workers/pipeline/detect.stage.ts';
import type { RawImage } from '../../src/workers/pipeline/types.ts';
import { getPhotos } from '../support/photos.ts';

const box = (x1: number, y1: number, x2: number, y2: number, score = 1) => ({ x1, y1, x2, y2, score });

/** The pipeline's preparation for a 'contain' spec: RGB fitted inside size×size. */
async function prepared(file: string, size: number): Promise<RawImage> {
  const { data, info } = await sharp(file)
    .rotate()
    .resize(size, size, { fit: 'inside' })
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: 3 };
}

describe('second look in tiles', () => {
  test('a second look runs for first-look scores in [from, to) only', () => {
    const look = { from: 0.1, to: 0.45, size: 640, tile: 384 };
    assert.deepEqual(
      [0, 0.09, 0.1, 0.3, 0.449, 0.45, 0.9].map((s) => needsTiledLook(s, look)),
      [false, false, true, true, true, false, false],
    );
    assert.equal(needsTiledLook(0.3, null), false);
  });

  test('tiles cover the image, all of one size, overlapping by at least the asked share', () => {
    const tiles = tileGrid(640, 427, 384, 0.2);
    assert.deepEqual(tiles, [
      { left: 0, top: 0, width: 384, height: 384 },
      { left: 256, top: 0, width: 384, height: 384 },
      { left: 0, top: 43, width: 384, height: 384 },
      { left: 256, top: 43, width: 384, height: 384 },
    ]);
    for (const w of [385, 500, 700, 1000]) {
      const xs = tileGrid(w, 100, 384, 0.2).map((t) => t.left);
      assert.equal(xs[0], 0);
      assert.equal(xs.at(-1)! + 384, w, `${w}: the last tile ends at the edge`);
      for (let i = 1; i < xs.length; i++) assert.ok(xs[i - 1]! + 384 - xs[i]! >= 0.2 * 384, `${w}: overlap`);
    }
    assert.deepEqual(tileGrid(300, 200, 384, 0.2), [{ left: 0, top: 0, width: 300, height: 200 }]);
  });

  test('a box found in a tile maps back to the image', () => {
    // A 1280×854 image seen at 640 px (scale 0.5); the tile at (256, 43) of the scaled image.
    const frame = tileFrame({ width: 1280, height: 854 }, 0.5, { left: 256, top: 43, width: 384, height: 384 });
    assert.deepEqual([frame.inputWidth, frame.inputHeight], [384, 384]);
    assert.deepEqual(toImageBox(box(10, 20, 110, 220, 0.7), frame), box(532, 126, 732, 526, 0.7));
  });

  test('a second look in tiles finds the small boatman the first look misses, boxes inside the image', async () => {
    const photo = (await getPhotos()).find((p) => p.name === 'canyon-boatman')!;
    const { dir: modelDir } = await ensureModels();
    const tiled = await createTiledLookDetector({ modelDir, tiledLook: { ...TILED_LOOK, from: 0, to: 1 } });
    const firstLook = await createPersonDetector({ modelDir });
    try {
      const size = tiled.preparedSize;
      assert.equal(size, TILED_LOOK.size);
      const { data, info } = await sharp(photo.path)
        .resize(size, size, { fit: 'inside' })
        .removeAlpha()
        .raw()
        .toBuffer({ resolveWithObject: true });
      const found = await tiled.detect({ data, width: info.width, height: info.height, channels: 3 });
      const first = (await firstLook.detect(await prepared(photo.path, firstLook.inputSpec.size))).score;
      assert.ok(found.score > first, `two looks ${found.score} vs first look ${first}`);
      for (const b of found.boxes) {
        assert.ok(b.x >= 0 && b.y >= 0 && b.x + b.width <= info.width && b.y + b.height <= info.height);
      }
    } finally {
      tiled.dispose();
      firstLook.dispose();
    }
  });
});
