/**
 * Provenance through the real worker pool (MediaPool: Piscina threads, the worker entry, the settings it is
 * started with): marked files in, the ProcessedImage's provenance out. Several threads load the C2PA library at
 * once; C2PA_READER=off and the trust anchors reach the threads.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MediaPool, type PoolOptions } from '../../src/workers/pool.ts';
import type { ProcessedImage } from '../../src/domain/uploads/processed-image.ts';
import * as fx from '../support/fixtures.ts';
import * as pf from '../support/provenance-fixtures.ts';

const lib = await pf.c2paLibrary();
const skip = lib ? false : '@contentauth/c2pa-node is not installed (optional dependency)';

describe('provenance in the media worker pool', () => {
  let stagingDir: string;
  let n = 0;
  const pools: MediaPool[] = [];

  before(async () => {
    stagingDir = await mkdtemp(path.join(tmpdir(), 'pixvote-prov-'));
  });
  after(async () => {
    await Promise.all(pools.map((p) => p.close()));
    await rm(stagingDir, { recursive: true, force: true });
  });

  const start = async (opts: Partial<PoolOptions> = {}) => {
    const pool = await MediaPool.start({
      workers: 2,
      maxQueue: 16,
      modelDir: path.join(stagingDir, 'no-model'),
      preloadDetector: false,
      ...opts,
    });
    pools.push(pool);
    return pool;
  };
  const run = async (pool: MediaPool, bytes: Uint8Array): Promise<ProcessedImage> => {
    const r = await pool.process({
      bytes: fx.toArrayBuffer(bytes),
      stagingDir,
      baseName: `p-${++n}`,
      humanPolicy: 'off',
      humanThreshold: 0.5,
    });
    assert.ok(r, 'processed');
    assert.equal(typeof r.timings.provenance, 'number', 'the provenance stage is timed');
    return r;
  };

  it('reads XMP source types and gives no marker for plain images, in every format', async () => {
    const pool = await start();
    const formats = ['jpeg', 'png', 'webp', 'gif'] as const;
    const [marked, plain] = await Promise.all([
      Promise.all(formats.map(async (f) => run(pool, await pf.imageWithXmpSourceType(f, 'trainedAlgorithmicMedia')))),
      Promise.all(formats.map(async (f) => run(pool, await pf.plainImage(f)))),
    ]);
    for (const r of marked)
      assert.deepEqual(r.provenance, { ai_generated: true, source_type: 'trainedAlgorithmicMedia', c2pa: null });
    for (const r of plain) assert.deepEqual(r.provenance, { ai_generated: null, source_type: null, c2pa: null });
  });

  it('validates C2PA manifests in every thread at once: generated, captured, tampered', { skip }, async () => {
    const pool = await start();
    const [ai, captured, tampered, png] = await Promise.all([
      pf.c2paSignedJpeg({ sourceType: 'trainedAlgorithmicMedia' }).then((b) => run(pool, b)),
      pf.c2paSignedJpeg({ sourceType: 'digitalCapture' }).then((b) => run(pool, b)),
      pf.tamperedC2paJpeg().then((b) => run(pool, b)),
      pf.c2paSignedImage('png', { sourceType: 'algorithmicMedia' }).then((b) => run(pool, b)),
    ]);
    assert.equal(ai.provenance.ai_generated, true);
    assert.deepEqual(
      [ai.provenance.c2pa?.valid, ai.provenance.c2pa?.signer, ai.provenance.c2pa?.generator],
      [true, pf.TEST_SIGNER, 'pixvote-tests/1.0'],
    );
    assert.deepEqual(ai.provenance.c2pa?.actions, [
      { action: 'c2pa.created', digital_source_type: 'trainedAlgorithmicMedia', software_agent: null, when: null },
    ]);
    assert.equal(captured.provenance.ai_generated, false);
    assert.equal(captured.provenance.c2pa?.valid, true);
    assert.equal(tampered.provenance.c2pa?.valid, false);
    assert.deepEqual(tampered.provenance.c2pa?.validation_errors, ['assertion.dataHash.mismatch']);
    assert.deepEqual([png.provenance.ai_generated, png.provenance.c2pa?.valid], [true, true]);
  });

  it('C2PA_READER=off: a manifest is "present, not verified"; trust anchors reach the threads', { skip }, async () => {
    const signed = await pf.c2paSignedJpeg({ sourceType: 'trainedAlgorithmicMedia' });
    const off = await start({ workers: 1, c2pa: { reader: 'off', trustAnchors: null } });
    assert.deepEqual((await run(off, signed)).provenance, {
      ai_generated: null,
      source_type: null,
      c2pa: { present: true, valid: null, generator: null, signer: null, actions: [] },
    });
    const anchored = await start({
      workers: 1,
      c2pa: { reader: 'auto', trustAnchors: await readFile(pf.TEST_TRUST_ANCHORS, 'utf8') },
    });
    const r = await run(anchored, signed);
    assert.deepEqual([r.provenance.c2pa?.valid, r.provenance.c2pa?.trusted], [true, true]);
  });
});
