/**
 * sharp configuration for the media workers.
 *
 * libvips is loaded once per process and shared by every thread, so each setting here is process-wide and
 * idempotent: every worker thread calls `setupSharp` when it starts, and the pool calls
 * `setupSharpProcess` once on the main thread before it starts any worker.
 */

/** libvips loader classes the service accepts; each name covers its File, Buffer and Source variants. */
export const ALLOWED_LOADERS: readonly string[] = Object.freeze([
  'VipsForeignLoadJpeg',
  'VipsForeignLoadPng',
  'VipsForeignLoadNsgif',
  'VipsForeignLoadWebp',
]);

/**
 * Every other loader family libvips 8.18 can be built with (unknown names are ignored). UltraHDR JPEGs
 * still load: with uhdrload blocked, jpegload reads their SDR image and the gain map is dropped.
 */
export const REFUSED_LOADERS: readonly string[] = Object.freeze([
  'VipsForeignLoadAnalyze',
  'VipsForeignLoadCsv',
  'VipsForeignLoadDcRaw',
  'VipsForeignLoadDcraw',
  'VipsForeignLoadFits',
  'VipsForeignLoadHeif',
  'VipsForeignLoadJp2k',
  'VipsForeignLoadJxl',
  'VipsForeignLoadMagick',
  'VipsForeignLoadMagick7',
  'VipsForeignLoadMat',
  'VipsForeignLoadMatrix',
  'VipsForeignLoadNifti',
  'VipsForeignLoadOpenexr',
  'VipsForeignLoadOpenslide',
  'VipsForeignLoadPdf',
  'VipsForeignLoadPpm',
  'VipsForeignLoadRad',
  'VipsForeignLoadRaw',
  'VipsForeignLoadSvg',
  'VipsForeignLoadTiff',
  'VipsForeignLoadUhdr',
  'VipsForeignLoadVips',
]);

// libvips reads VIPS_BLOCK_UNTRUSTED from the C environment once, when sharp first loads in the process.
// Only the main thread's process.env writes through to that environment (a worker's is a private copy), so
// this counts when the pool imports this module before anything loads sharp; in a worker it is a no-op.
process.env.VIPS_BLOCK_UNTRUSTED ??= '1';

let threadReady: Promise<void> | undefined;
let processReady: Promise<void> | undefined;

/**
 * Per-thread setup, run once when a worker thread starts: one libvips thread per image (the pool already
 * runs one worker per core), no operation cache (every upload is a different image, so it would only hold
 * memory), and every loader but JPEG, PNG, GIF and WebP blocked, so bytes that got past the magic-byte sniff
 * still cannot reach the SVG, TIFF, HEIF, PDF or libvips-native parsers.
 *
 * It blocks by deny-list on purpose: blocking the `VipsForeignLoad` base class and unblocking the four would
 * leave every loader blocked for a moment, failing a decode already running on another thread.
 */
export function setupSharp(): Promise<void> {
  threadReady ??= import('sharp').then(({ default: sharp }) => {
    sharp.concurrency(1);
    sharp.cache(false);
    sharp.block({ operation: [...REFUSED_LOADERS] });
  });
  return threadReady;
}

/**
 * Process-wide setup for the pool side, on the main thread before any worker starts (nothing decodes yet, so
 * it is safe to block the whole `VipsForeignLoad` class and unblock the four): an allow-list that also covers
 * loader families a future libvips adds. Importing this module first also makes VIPS_BLOCK_UNTRUSTED count.
 */
export function setupSharpProcess(): Promise<void> {
  processReady ??= setupSharp()
    .then(() => import('sharp'))
    .then(({ default: sharp }) => {
      sharp.block({ operation: ['VipsForeignLoad'] });
      sharp.unblock({ operation: [...ALLOWED_LOADERS] });
    });
  return processReady;
}
