/**
 * From CenterNet's raw outputs to person boxes: heatmap peaks, box edges, greedy IoU suppression.
 * Pure functions on plain arrays, so they are tested without a model.
 */

/** Corners in pixels: (x1, y1) top-left, (x2, y2) bottom-right. */
export interface ScoredBox {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
  score: number;
}

/**
 * Cells of a heatmap of `grid` cells (a number: square) that are the maximum of their 3×3 neighbourhood
 * (CenterNet's max-pool suppression: one peak per object) and score at least `minScore`, best first, at
 * most `limit`.
 */
export function heatmapPeaks(
  heatmap: ArrayLike<number>,
  grid: number | { width: number; height: number },
  minScore: number,
  limit: number,
): Array<{ cell: number; score: number }> {
  const { width, height } = typeof grid === 'number' ? { width: grid, height: grid } : grid;
  const peaks: Array<{ cell: number; score: number }> = [];
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const score = heatmap[y * width + x]!;
      if (score < minScore || !isLocalMax(heatmap, width, height, x, y, score)) continue;
      peaks.push({ cell: y * width + x, score });
    }
  }
  return peaks.sort((a, b) => b.score - a.score).slice(0, limit);
}

function isLocalMax(
  heatmap: ArrayLike<number>,
  width: number,
  height: number,
  x: number,
  y: number,
  score: number,
): boolean {
  for (let ny = Math.max(0, y - 1); ny <= Math.min(height - 1, y + 1); ny++) {
    for (let nx = Math.max(0, x - 1); nx <= Math.min(width - 1, x + 1); nx++) {
      if (heatmap[ny * width + nx]! > score) return false;
    }
  }
  return true;
}

/**
 * The box of heatmap cell `cell` on a grid `gridWidth` cells wide: `edges` holds, per cell, the distances
 * from (stride·x, stride·y) to the left, top, right and bottom edges.
 */
export function boxAt(
  cell: number,
  score: number,
  edges: ArrayLike<number>,
  gridWidth: number,
  stride: number,
): ScoredBox {
  const cx = (cell % gridWidth) * stride;
  const cy = Math.floor(cell / gridWidth) * stride;
  const at = cell * 4;
  return { x1: cx - edges[at]!, y1: cy - edges[at + 1]!, x2: cx + edges[at + 2]!, y2: cy + edges[at + 3]!, score };
}

export function intersectionOverUnion(a: ScoredBox, b: ScoredBox): number {
  const width = Math.min(a.x2, b.x2) - Math.max(a.x1, b.x1);
  const height = Math.min(a.y2, b.y2) - Math.max(a.y1, b.y1);
  if (width <= 0 || height <= 0) return 0;
  const intersection = width * height;
  const union = area(a) + area(b) - intersection;
  return union > 0 ? intersection / union : 0;
}

function area(box: ScoredBox): number {
  return Math.max(0, box.x2 - box.x1) * Math.max(0, box.y2 - box.y1);
}

/** Greedy non-max suppression: keeps the best box, drops those overlapping it by more than `iouThreshold`, repeats. */
export function nonMaxSuppression<T extends ScoredBox>(
  boxes: readonly T[],
  iouThreshold: number,
  limit = Infinity,
): T[] {
  const kept: T[] = [];
  for (const box of [...boxes].sort((a, b) => b.score - a.score)) {
    if (kept.length >= limit) break;
    if (kept.every((other) => intersectionOverUnion(box, other) <= iouThreshold)) kept.push(box);
  }
  return kept;
}

/** Maps a box from the padded, resized model input back to the original image, clipped to it. */
export function toImageBox(
  box: ScoredBox,
  frame: { scale: number; padX: number; padY: number; width: number; height: number },
): ScoredBox {
  const clip = (value: number, max: number) => Math.min(max, Math.max(0, value));
  return {
    x1: clip((box.x1 - frame.padX) / frame.scale, frame.width),
    y1: clip((box.y1 - frame.padY) / frame.scale, frame.height),
    x2: clip((box.x2 - frame.padX) / frame.scale, frame.width),
    y2: clip((box.y2 - frame.padY) / frame.scale, frame.height),
    score: box.score,
  };
}
