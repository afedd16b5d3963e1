import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { decode, derive } from '../../src/workers/pipeline/decode.stage.ts';
import { PHASH_INPUT_SIZE, phash } from '../../src/workers/pipeline/phash.stage.ts';
import { hammingHex as hammingDistance } from '../../src/store/similarity/hamming.ts';
import { sniff } from '../../src/workers/pipeline/sniff.stage.ts';
import * as fx from '../support/fixtures.ts';
import { getPhotos } from '../support/photos.ts';

const N = PHASH_INPUT_SIZE;

/** The hash exactly as the pipeline computes it: sniff, one decode, a 32×32 grey square derived from it. */
async function hashOf(bytes: Buffer): Promise<string> {
  const sniffed = sniff(bytes);
  if (!sniffed.ok) assert.fail(sniffed.message);
  const result = await decode(bytes, { format: sniffed.format });
  if (!result.ok) assert.fail(result.message);
  return phash(await derive(result.image, { width: N, height: N, fit: 'fill', channels: 1 }));
}

/** The textbook definition, coefficient by coefficient, to check the separable version against. */
function referenceHash(grey: Uint8Array): string {
  const coef: number[] = [];
  for (let v = 0; v < 8; v++) {
    for (let u = 0; u < 8; u++) {
      let sum = 0;
      for (let y = 0; y < N; y++) {
        for (let x = 0; x < N; x++) {
          sum +=
            grey[y * N + x]! *
            Math.cos(((2 * x + 1) * u * Math.PI) / (2 * N)) *
            Math.cos(((2 * y + 1) * v * Math.PI) / (2 * N));
        }
      }
      coef.push(Math.round(sum * 1e6) / 1e6);
    }
  }
  const median = coef.slice(1).sort((a, b) => a - b)[31]!;
  const bits = coef.map((c, i) => (i > 0 && c > median ? 1n : 0n));
  return bits
    .reduce<bigint>((acc, bit) => (acc << 1n) | bit, 0n)
    .toString(16)
    .padStart(16, '0');
}

/** The transformations a re-upload goes through, applied to original bytes of width×height. */
const EDITS: Record<string, (b: Buffer, w: number, h: number) => Promise<Buffer>> = {
  'resized to 50%': (b, w) =>
    sharp(b)
      .resize(Math.round(w / 2))
      .jpeg({ quality: 90 })
      .toBuffer(),
  're-encoded JPEG q50': (b) => sharp(b).jpeg({ quality: 50 }).toBuffer(),
  're-encoded WebP q75': (b) => sharp(b).webp({ quality: 75 }).toBuffer(),
  'brightness +10%': (b) => sharp(b).modulate({ brightness: 1.1 }).jpeg({ quality: 90 }).toBuffer(),
  'cropped 2% (1% a side)': (b, w, h) => crop(b, w, h, 0.01),
  'cropped 5% (2.5% a side)': (b, w, h) => crop(b, w, h, 0.025),
};
const crop = (b: Buffer, w: number, h: number, side: number) =>
  sharp(b)
    .extract({
      left: Math.round(w * side),
      top: Math.round(h * side),
      width: Math.round(w * (1 - 2 * side)),
      height: Math.round(h * (1 - 2 * side)),
    })
    .jpeg({ quality: 90 })
    .toBuffer();
/** Edits a near-duplicate search must catch at the default threshold. */
const SAME_IMAGE = ['resized to 50%', 're-encoded JPEG q50', 're-encoded WebP q75', 'brightness +10%'];

interface Table {
  edits: Record<string, number[]>;
  unrelated: number[];
}

async function distances(originals: Array<{ bytes: Buffer; group: string }>): Promise<Table> {
  const hashes = await Promise.all(originals.map(({ bytes }) => hashOf(bytes)));
  const edits: Table['edits'] = {};
  for (const [name, edit] of Object.entries(EDITS)) {
    edits[name] = await Promise.all(
      originals.map(async ({ bytes }, i) => {
        const { width, height } = await sharp(bytes).metadata();
        return hammingDistance(hashes[i]!, await hashOf(await edit(bytes, width, height)));
      }),
    );
  }
  const unrelated: number[] = [];
  for (let i = 0; i < originals.length; i++) {
    for (let j = i + 1; j < originals.length; j++) {
      if (originals[i]!.group !== originals[j]!.group) unrelated.push(hammingDistance(hashes[i]!, hashes[j]!));
    }
  }
  return { edits, unrelated };
}

const stats = (d: number[]) => {
  const s = [...d].sort((a, b) => a - b);
  return {
    min: s[0]!,
    median: s[s.length >> 1]!,
    max: s.at(-1)!,
    atMost4: s.filter((x) => x <= 4).length,
    n: s.length,
  };
};

function report(t: { diagnostic(message: string): void }, title: string, table: Table): void {
  t.diagnostic(`${title}: Hamming distance to the original (median / max, share ≤ 4)`);
  for (const [name, d] of Object.entries(table.edits)) {
    const s = stats(d);
    t.diagnostic(`  ${name.padEnd(26)} ${s.median} / ${s.max}  (${s.atMost4}/${s.n})`);
  }
  const u = stats(table.unrelated);
  t.diagnostic(
    `  ${'unrelated pairs'.padEnd(26)} min ${u.min}, median ${u.median}, max ${u.max}  (${u.atMost4}/${u.n} ≤ 4)`,
  );
}

describe('phash stage', () => {
  it('matches the textbook 2-D DCT definition', () => {
    for (let seed = 1; seed <= 5; seed++) {
      const grey = fx.photoPixels(N, N, seed).data.filter((_, i) => i % 3 === 0);
      const hash = phash({ data: grey, width: N, height: N, channels: 1 });
      assert.match(hash, /^[0-9a-f]{16}$/);
      assert.equal(hash, referenceHash(grey));
    }
  });

  it('hashes a flat image to zero and refuses anything but 32×32 grey', () => {
    assert.equal(
      phash({ data: new Uint8Array(N * N).fill(128), width: N, height: N, channels: 1 }),
      '0000000000000000',
    );
    assert.throws(() => phash({ data: new Uint8Array(64 * 64), width: 64, height: 64, channels: 1 }), TypeError);
    assert.throws(() => phash({ data: new Uint8Array(N * N * 3), width: N, height: N, channels: 3 }), TypeError);
  });

  it('measures Hamming distance between 16-hex-digit hashes', () => {
    assert.equal(hammingDistance('0000000000000000', 'ffffffffffffffff'), 64);
    assert.equal(hammingDistance('8000000000000001', '0000000000000000'), 2);
    assert.equal(hammingDistance('0123456789abcdef', '0123456789abcdef'), 0);
    assert.equal(
      hammingDistance('f0f0f0f0f0f0f0f0', '0f0f0f0f0f0f0f0f'),
      hammingDistance('0f0f0f0f0f0f0f0f', 'f0f0f0f0f0f0f0f0'),
    );
  });

  it(
    'keeps re-encodes, resizes and brightness changes of a synthetic scene within 4, ' + 'unrelated scenes far apart',
    async (t) => {
      const originals = await Promise.all(
        [1, 2, 3, 4, 5, 6].map(async (seed) => ({
          bytes: await fx.photoJpeg({ width: 1200, height: 900, seed, metadata: false }),
          group: String(seed),
        })),
      );
      const table = await distances(originals);
      report(t, 'synthetic scenes', table);
      for (const name of SAME_IMAGE) assert.ok(stats(table.edits[name]!).max <= 4, name);
      assert.ok(stats(table.unrelated).min >= 16);
    },
  );

  it('on real photos: the same picture stays close, different pictures stay far apart', async (t) => {
    let photos;
    try {
      photos = await getPhotos();
    } catch (err) {
      t.skip(`real photos unavailable: ${(err as Error).message}`);
      return;
    }
    // The tiny crops of one contact sheet are left out; crops of one source count as related.
    const usable = photos.filter((p) => !p.name.startsWith('small-') && p.name !== 'cat-motion-frame');
    const originals = await Promise.all(
      usable.map(async (p) => ({ bytes: await readFile(p.path), group: p.source.replace(/ \(crop .*\)$/, '') })),
    );
    const table = await distances(originals);
    report(t, `${usable.length} real photos`, table);
    for (const name of SAME_IMAGE) {
      const s = stats(table.edits[name]!);
      assert.ok(s.median <= 2 && s.max <= 8, `${name}: median ${s.median}, max ${s.max}`);
    }
    assert.ok(stats(table.unrelated).min >= 14);
  });
});
