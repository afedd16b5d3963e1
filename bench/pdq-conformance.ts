/**
 * PDQ conformance (issue 31 part 4): our PDQ (src/workers/pipeline/pdq.stage.ts), computed as the pipeline does
 * (sniff, one decode, RGB shrunk to fit 512 px), against the reference hashes and qualities of facebook/
 * ThreatExchange. Prints one Markdown row per image: size, Hamming distance to the reference hash, quality beside
 * the reference's (— where the reference lists none), and the stage's time (derive + hash, best of 5).
 *
 * By default the six images committed in test/fixtures/pdq/. With `--threatexchange GIT_DIR` (a clone of
 * facebook/ThreatExchange, e.g. what the `fetch` of github:facebook/ThreatExchange gives), also every other image
 * with a reference in pdq/python (pdq_test.py, README.md), read from that repository's HEAD.
 *
 *   npm run bench:pdq-conformance [-- --threatexchange GIT_DIR]
 */
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { decode, derive } from '../src/workers/pipeline/decode.stage.ts';
import { PDQ_MAX_INPUT_SIDE, pdq } from '../src/workers/pipeline/pdq.stage.ts';
import { sniff } from '../src/workers/pipeline/sniff.stage.ts';

interface Reference {
  file: string;
  from: string;
  hash: string;
  quality: number | null;
}

const FIXTURES = new URL('../test/fixtures/pdq/', import.meta.url);

/** Images with a reference beyond the committed ones (in the repository, not committed here: size, people). */
const MORE: Array<Omit<Reference, 'file'>> = [
  [
    'pdq/data/reg-test-input/labelme-subset/q0003.jpg',
    '54a977c221d14c1c43ba5e6e21d4a13989a3553f1462611cbb85fda7be83b677',
  ],
  [
    'pdq/data/reg-test-input/labelme-subset/q0004.jpg',
    '992d44af36d69e6ca6b812585928bac11def254ef5398c6d07466c9abcc65b92',
  ],
  [
    'pdq/data/reg-test-input/labelme-subset/q0291.jpg',
    'a0fe94f1e5cc1cc8dd855948498dc9243f7ca27336f036d7f212b74bc103c9a7',
  ],
  [
    'pdq/data/reg-test-input/labelme-subset/q0746.jpg',
    '1049d96239e24d4dca2c55512b8bdb77425f4dbcf575a0a95555aaab5554aaaa',
  ],
  ['pdq/data/misc-images/small.jpg', '0007001f003f003f007f00ff00ff00ff01ff01ff01ff03ff03ff03ff03ff03ff'],
  [
    'pdq/data/reg-test-input/dih/bridge-1-original.jpg',
    'd8f8f0cce0f4a84f0e370a22028f67f0b36e2ed596623e1d33e6b39c4e9c9b22',
  ],
  ['pdq/data/bridge-mods/shrink-a-lot.jpg', 'd0f8f1ccc0f4a84d0a370a3a228f67f0b36e2ed5b6623e1d33e6339c4e9c9b22', 100],
  ['pdq/data/bridge-mods/square-128x128.jpg', 'd8f8f1eec0f4a84f0e37022a078f63f0b36e2ed596621e1d33e6239c4e9c9b22', 100],
  ['pdq/data/bridge-mods/square-512x512.jpg', 'd8f8f0cec0f4a84f0637022a278f67f0b36e2ed596621e1d33e6339c4e9c9b22', 100],
  ['pdq/data/bridge-mods/blur-a-lot.jpg', 'd8f8f0cce0f4e84f0637022a028f67f0b36e2ed596623e1d33e6b39c4e9c9b22', 100],
  ['pdq/data/bridge-mods/high-contrast.jpg', 'd8f8f0cce0f4e84d06370a32068f67f0b36e2ed596623e1d33e6339c4e9c9b22', 100],
].map(([from, hash, quality]) => ({
  from: from as string,
  hash: hash as string,
  quality: (quality as number) ?? null,
}));

function hamming(a: string, b: string): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) {
    for (let x = parseInt(a[i]!, 16) ^ parseInt(b[i]!, 16); x; x >>= 1) d += x & 1;
  }
  return d;
}

async function row(name: string, bytes: Uint8Array, ref: Omit<Reference, 'file'>): Promise<string> {
  const sniffed = sniff(bytes);
  if (!sniffed.ok) throw new Error(`${name}: ${sniffed.message}`);
  const decoded = await decode(bytes, { format: sniffed.format });
  if (!decoded.ok) throw new Error(`${name}: ${decoded.message}`);
  const side = PDQ_MAX_INPUT_SIDE;
  let best = Infinity;
  let got = { hash: '', quality: 0 };
  for (let i = 0; i < 5; i++) {
    const start = performance.now();
    got = pdq(await derive(decoded.image, { width: side, height: side, fit: 'inside', channels: 3 }));
    best = Math.min(best, performance.now() - start);
  }
  const { width, height } = decoded.image;
  const quality = `${got.quality} / ${ref.quality ?? '—'}`;
  return `| ${name} | ${width}×${height} | ${hamming(got.hash, ref.hash)} | ${quality} | ${best.toFixed(1)} |`;
}

const { values } = parseArgs({ options: { threatexchange: { type: 'string' } } });
const { source, images } = JSON.parse(await readFile(new URL('reference.json', FIXTURES), 'utf8')) as {
  source: string;
  images: Reference[];
};
console.log(`Reference: ${source}\n`);
console.log('| image | size | distance (bits) | quality (ours / reference) | derive + hash (ms) |');
console.log('| --- | --- | --- | --- | --- |');
for (const ref of images) console.log(await row(ref.file, await readFile(new URL(ref.file, FIXTURES)), ref));
const gitDir = values.threatexchange;
if (gitDir) {
  const committed = new Set(images.map((i) => i.from));
  for (const ref of MORE.filter((m) => !committed.has(m.from))) {
    const bytes = execFileSync('git', ['--git-dir', gitDir, 'show', `HEAD:${ref.from}`], { maxBuffer: 64 << 20 });
    console.log(await row(`${ref.from.split('/').at(-1)} (repository)`, bytes, ref));
  }
}
