import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MediaPool } from '../../src/workers/pool.ts';
import { AppError } from '../../src/domain/errors.ts';
import * as fx from '../support/fixtures.ts';
import { ensureModels } from '../../src/workers/detector/model-files.fetch.ts';

test(
  'MediaPool: a request aborted while its worker waits on the afterHash hook ends at once as 503 busy, ' +
    'staging nothing',
  async () => {
    const stagingDir = await mkdtemp(path.join(tmpdir(), 'pixvote-pool-'));
    const pool = await MediaPool.start({
      workers: 1,
      maxQueue: 4,
      modelDir: path.join(stagingDir, 'no-model'),
      preloadDetector: false,
    });
    try {
      const jpeg = await fx.photoJpeg({ width: 800, height: 600 });
      const aborted = new AbortController();
      let asked = 0;
      const outcome = pool
        .process(
          { bytes: fx.toArrayBuffer(jpeg), stagingDir, baseName: 'aborted', humanPolicy: 'off', humanThreshold: 0.5 },
          aborted.signal,
          {
            // A lookup that never answers (a database stalled): only the abort can end the task.
            afterHash: () => {
              asked++;
              setImmediate(() => aborted.abort());
              return new Promise<boolean>(() => {});
            },
          },
        )
        .then(
          () => null,
          (e: unknown) => e,
        );
      const error = await outcome;
      assert.equal(asked, 1);
      assert.ok(error instanceof AppError, String(error));
      assert.equal(error.code, 'busy');
      assert.ok(Number(error.headers['Retry-After']) >= 1, 'Retry-After');
      assert.deepEqual(await readdir(stagingDir), [], 'nothing staged');
      // A hook that throws at once fails only its own upload, with its own error.
      const thrown = await pool
        .process(
          { bytes: fx.toArrayBuffer(jpeg), stagingDir, baseName: 'thrown', humanPolicy: 'off', humanThreshold: 0.5 },
          undefined,
          {
            afterHash: () => {
              throw new Error('lookup exploded');
            },
          },
        )
        .then(
          () => null,
          (e: unknown) => e as Error,
        );
      assert.equal(thrown?.message, 'lookup exploded');
      assert.deepEqual(await readdir(stagingDir), []);
    } finally {
      await pool.close();
      await rm(stagingDir, { recursive: true, force: true });
    }
  },
);

test('MediaPool: HUMAN_INPUT_SIZE and HUMAN_RUNTIME reach the workers: a 384 px detector on TF.js', async () => {
  const stagingDir = await mkdtemp(path.join(tmpdir(), 'pixvote-pool-'));
  const { dir: modelDir } = await ensureModels();
  const sized = await MediaPool.start({
    workers: 1,
    maxQueue: 4,
    modelDir,
    preloadDetector: true,
    detector: { inputSize: 384, runtime: 'tfjs' },
  });
  const plain = await MediaPool.start({ workers: 1, maxQueue: 4, modelDir, preloadDetector: true });
  try {
    assert.equal((await sized.ping()).detectorModel, 'centernet-384');
    assert.equal((await plain.ping()).detectorModel, 'centernet-320');
    // The default, auto, runs the model on onnxruntime-node inside the worker threads; 'tfjs' on wasm.
    assert.equal((await plain.ping()).detectorBackend, 'onnxruntime');
    assert.equal((await sized.ping()).detectorBackend, 'wasm');
    const jpeg = await fx.photoJpeg({ width: 900, height: 600 });
    const task = (baseName: string) => ({
      bytes: fx.toArrayBuffer(jpeg),
      stagingDir,
      baseName,
      humanPolicy: 'flag' as const,
      humanThreshold: 0.5,
    });
    const [a, b] = [await sized.process(task('sized')), await plain.process(task('plain'))];
    assert.ok(a && b);
    assert.ok(a.humanScore !== null && b.humanScore !== null);
    assert.equal(a.detection?.inferences, 1);
  } finally {
    await Promise.all([sized.close(), plain.close()]);
    await rm(stagingDir, { recursive: true, force: true });
  }
});
