import type { ModelBatch } from '../../src/workers/detector/centernet.model.ts';
import type { RawImage } from '../../src/workers/pipeline/types.ts';

/**
 * RGB images as one model batch, each at the top left, padded with black to `size` (default: the largest sides
 * rounded up to multiples of 32).
 */
export function paddedBatch(images: readonly RawImage[], size?: { height: number; width: number }): ModelBatch {
  const height = size?.height ?? 32 * Math.ceil(Math.max(...images.map((i) => i.height)) / 32);
  const width = size?.width ?? 32 * Math.ceil(Math.max(...images.map((i) => i.width)) / 32);
  const data = new Float32Array(images.length * height * width * 3);
  images.forEach((rgb, n) => {
    for (let y = 0; y < rgb.height; y++)
      for (let x = 0; x < rgb.width; x++)
        for (let c = 0; c < 3; c++)
          data[((n * height + y) * width + x) * 3 + c] = rgb.data[(y * rgb.width + x) * rgb.channels + c]!;
  });
  return { data, images: images.length, height, width };
}
