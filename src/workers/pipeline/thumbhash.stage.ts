/**
 * ThumbHash stage: a ~25-byte placeholder the client renders while the thumbnail loads.
 */
import { rgbaToThumbHash } from 'thumbhash';
import type { RawImage } from './types.ts';

/** ThumbHash reads at most 100×100 pixels; `derive` produces that from the working buffer. */
export const THUMBHASH_MAX_SIDE = 100;

/** Encodes a ≤ 100×100 RGBA image (not premultiplied) as a base64 ThumbHash. */
export function thumbhash(rgba: RawImage): string {
  const { width, height, channels, data } = rgba;
  if (
    channels !== 4 ||
    width > THUMBHASH_MAX_SIDE ||
    height > THUMBHASH_MAX_SIDE ||
    data.length !== width * height * 4
  ) {
    throw new TypeError(
      `thumbhash expects RGBA of at most ${THUMBHASH_MAX_SIDE}×${THUMBHASH_MAX_SIDE} ` +
        `but received ${width}×${height}×${channels}`,
    );
  }
  return Buffer.from(rgbaToThumbHash(width, height, data)).toString('base64');
}
