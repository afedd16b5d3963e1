/** The people-free pictures shared by research/person-filter-eval.ts and bench:ci's person-filter check (issue 32). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import sharp from 'sharp';
import { setupSharpProcess } from '../../src/workers/sharp-setup.ts';
import {
  generatePeopleFree,
  GENERATED_KINDS,
  hash32,
  seededRandom,
  SHAPE_SIZES,
} from '../../bench/support/people-free-generator.ts';

test('a picture is a pure function of kind, index and seed', async () => {
  for (const kind of GENERATED_KINDS) {
    const [a, b] = await Promise.all([generatePeopleFree(kind, 3, 1), generatePeopleFree(kind, 3, 1)]);
    assert.equal(a.id, `${kind}-1-3`);
    assert.ok(a.bytes.equals(b.bytes), `${kind} differs between two calls`);
    const other = await generatePeopleFree(kind, 3, 2);
    assert.ok(!a.bytes.equals(other.bytes), `${kind} ignores the seed`);
  }
});

test('the bytes are the format and size they say; animations have frames', async () => {
  for (const kind of GENERATED_KINDS) {
    const g = await generatePeopleFree(kind, 1, 1);
    const meta = await sharp(g.bytes, { pages: -1 }).metadata();
    assert.equal(meta.format, g.format, kind);
    assert.equal(meta.width, g.width, kind);
    assert.equal(meta.pageHeight ?? meta.height, g.height, kind);
    if (kind === 'animated') assert.ok((meta.pages ?? 1) >= 3, `${meta.pages} frames`);
  }
});

test("the shapes cycle through the issue's three sizes", async () => {
  const sizes = await Promise.all([0, 1, 2].map(async (i) => (await generatePeopleFree('shapes', i, 1)).width));
  assert.deepEqual(
    sizes,
    SHAPE_SIZES.map(([w]) => w),
  );
});

test('seededRandom and hash32 are deterministic', () => {
  const a = seededRandom(hash32('x'));
  const b = seededRandom(hash32('x'));
  for (let i = 0; i < 5; i++) assert.equal(a(), b());
  assert.notEqual(hash32('x'), hash32('y'));
});

test("the pictures are drawn in a process whose worker pool blocked sharp's SVG loader (bench:ci's)", async () => {
  await setupSharpProcess();
  for (const kind of GENERATED_KINDS) {
    const g = await generatePeopleFree(kind, 5, 2);
    assert.ok(g.bytes.length > 0 && g.width > 0, kind);
  }
});
