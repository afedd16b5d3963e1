/**
 * A look in tiles at higher resolution where the first look is unsure: evaluated in detector-eval.md, not shipped
 * (on the evaluation set the score bands of small people and of people-free photos overlap, so it ran on too many
 * images to fit the budget). Built here from the shipped detector's parts (src/workers/pipeline/detect.stage.ts).
 */
import {
  BOX_DEFAULTS,
  checkInputSize,
  DEFAULT_INPUT_SIZE,
  fitFrame,
  loadDetectorNet,
  runFrames,
  toDetection,
  warmUp,
  type Frame,
} from '../src/workers/pipeline/detect.stage.ts';
import { DEFAULT_MODELS_DIR } from '../src/workers/detector/model-files.fetch.ts';
import type { ScoredBox } from '../src/workers/detector/person-boxes.decode.ts';
import type { DetectorRuntime, PersonDetection, RawImage } from '../src/workers/pipeline/types.ts';

/**
 * A look in tiles at an image whose first-look score is in [from, to): the image at `size` px on its
 * long side, cut into `tile`×`tile` tiles overlapping by at least `overlap` of a tile (one tile, the whole
 * image, when `size` ≤ `tile`), the tiles run as one batch. Small people (a quarter of the frame) are
 * 40 px tall in a 256 px first look and 80–130 px in a tile: big enough for the model.
 */
export interface TiledLook {
  from: number;
  to: number;
  size: number;
  tile: number;
  overlap?: number;
}

/** The tiled look evaluated in detector-eval.md. */
export const TILED_LOOK: TiledLook = { from: 0.1, to: 0.45, size: 640, tile: 384, overlap: 0.2 };

/** A first look (as the shipped detector's, without a closer look) then, where it is unsure, the tiled look. */
export interface TiledLookDetector {
  backend: string;
  /** The long side to prepare images at: the larger of the first look's and the tiled look's. */
  preparedSize: number;
  detect(rgb: RawImage): Promise<PersonDetection>;
  dispose(): void;
}

export async function createTiledLookDetector(options: {
  modelDir?: string;
  inputSize?: number;
  tiledLook: TiledLook;
  runtime?: DetectorRuntime;
}): Promise<TiledLookDetector> {
  const { minScore, iouThreshold, maxBoxes } = BOX_DEFAULTS;
  const firstSize = options.inputSize ?? DEFAULT_INPUT_SIZE;
  const look = options.tiledLook;
  for (const side of [firstSize, look.size, look.tile]) checkInputSize(side);
  const { net, backend, maxBatch } = await loadDetectorNet(
    options.runtime ?? 'auto',
    options.modelDir || DEFAULT_MODELS_DIR,
  );
  await warmUp(net, firstSize);
  await warmUp(net, look.tile);

  /** The tiled look at one image: its tiles (crops of it at `look.size`), in batches of `maxBatch`. */
  async function tiledLook(rgb: RawImage): Promise<ScoredBox[]> {
    const scale = Math.min(1, look.size / Math.max(rgb.width, rgb.height));
    const tiles = tileGrid(
      Math.max(1, Math.round(rgb.width * scale)),
      Math.max(1, Math.round(rgb.height * scale)),
      look.tile,
      look.overlap ?? 0.2,
    );
    const found: ScoredBox[] = [];
    for (let at = 0; at < tiles.length; at += maxBatch) {
      const chunk = tiles.slice(at, at + maxBatch).map((tile) => ({ rgb, frame: tileFrame(rgb, scale, tile) }));
      for (const boxes of await runFrames(net, chunk, minScore)) found.push(...boxes);
    }
    return found;
  }

  return {
    backend,
    preparedSize: Math.max(firstSize, look.size),
    async detect(rgb) {
      const [first] = await runFrames(net, [{ rgb, frame: fitFrame(rgb, firstSize) }], minScore);
      const score = first!.reduce((best, box) => Math.max(best, box.score), 0);
      const candidates = needsTiledLook(score, look) ? [...first!, ...(await tiledLook(rgb))] : first!;
      return toDetection(candidates, iouThreshold, maxBoxes);
    },
    dispose: () => net.dispose(),
  };
}

/** Whether a first-look `score` is unsure enough for `look` (in [from, to)). */
export function needsTiledLook(score: number, look: TiledLook | null): boolean {
  return look !== null && score >= look.from && score < look.to;
}

export interface Tile {
  left: number;
  top: number;
  width: number;
  height: number;
}

/**
 * Tiles of at most `tile`×`tile` covering a `width`×`height` image, all of one size (so they run as one
 * batch), spread evenly with neighbours overlapping by at least `overlap` of a tile (a person cut by one
 * tile's edge is whole in the next, up to that size). A side no longer than `tile` is one tile.
 */
export function tileGrid(width: number, height: number, tile: number, overlap: number): Tile[] {
  const along = (length: number): { size: number; starts: number[] } => {
    if (length <= tile) return { size: length, starts: [0] };
    const step = tile * (1 - overlap);
    const count = Math.ceil((length - tile) / step) + 1;
    const starts = Array.from({ length: count }, (_, i) => Math.round((i * (length - tile)) / (count - 1)));
    return { size: tile, starts };
  };
  const xs = along(width);
  const ys = along(height);
  return ys.starts.flatMap((top) => xs.starts.map((left) => ({ left, top, width: xs.size, height: ys.size })));
}

const up32 = (n: number) => Math.max(64, Math.ceil(n / 32) * 32);

/** `tile` of the image scaled by `scale`, as a model input (its sides padded up to multiples of 32). */
export function tileFrame(image: { width: number; height: number }, scale: number, tile: Tile): Frame {
  const inputWidth = up32(tile.width);
  const inputHeight = up32(tile.height);
  return {
    scale,
    scaledWidth: Math.max(1, Math.round(image.width * scale)),
    scaledHeight: Math.max(1, Math.round(image.height * scale)),
    left: tile.left,
    top: tile.top,
    regionWidth: tile.width,
    regionHeight: tile.height,
    inputWidth,
    inputHeight,
    padX: Math.floor((inputWidth - tile.width) / 2) - tile.left,
    padY: Math.floor((inputHeight - tile.height) / 2) - tile.top,
    width: image.width,
    height: image.height,
  };
}
