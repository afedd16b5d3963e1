import { test } from 'node:test';
import assert from 'node:assert/strict';
import { currentMetrics, startApp } from '../support/app.ts';
import { registerUser } from '../support/users.ts';
import { countUploads, diskState, uploadImage } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { until } from '../support/budget.ts';

const sample = (text: string, name: string, label: string) =>
  Number(
    text
      .split('\n')
      .find((l) => l.startsWith(`${name}{`) && l.includes(label))
      ?.split(' ')
      .at(-1) ?? 0,
  );

test('an upload whose client goes away is dropped before it is decoded, and leaves nothing behind', async () => {
  const app = await startApp({ WORKERS: '1', WORKER_QUEUE: '10' });
  try {
    const u = await registerUser(app.api);
    const busy = await Promise.all(
      [1601, 1605, 1606, 1607, 1608].map((seed) => photoJpeg({ width: 3000, height: 2250, seed, metadata: false })),
    );
    const queued = await Promise.all(
      [1602, 1603, 1604].map((seed) => photoJpeg({ width: 2000, height: 1500, seed, metadata: false })),
    );
    // Five uploads keep the only worker busy for a while; three more queue behind them and are abandoned
    // by their clients while they wait.
    // How many uploads have reached the one thread's pool: those done, those waiting, and the one running
    // (what the pool completed before, its start-up probe, not counted).
    const before = app.composed.pool.stats().completed;
    const arrived = () => {
      const { completed, queueSize } = app.composed.pool.stats();
      return completed - before + queueSize + (queueSize > 0 ? 1 : 0);
    };
    const first = Promise.all(busy.map((bytes) => uploadImage(app.api, u.token, bytes)));
    await until(() => arrived() >= busy.length);
    const abandon: Array<() => void> = [];
    const aborted = queued.map(async (bytes) => {
      const controller = new AbortController();
      const form = new FormData();
      form.append('upload_type', 'image');
      form.append('file', new Blob([bytes]), 'q.jpg');
      const sent = fetch(`${app.url}/api/v1/upload`, {
        method: 'POST',
        body: form,
        headers: { authorization: `Bearer ${u.token}` },
        signal: controller.signal,
      });
      abandon.push(() => controller.abort());
      await sent.catch(() => {});
    });
    // Abandoned once their tasks wait in the queue (their bodies arrived), behind the busy ones.
    await until(() => arrived() >= busy.length + queued.length);
    for (const abort of abandon) abort();
    await Promise.all(aborted);
    assert.deepEqual(
      (await first).map((r) => r.status),
      [201, 201, 201, 201, 201],
    );
    // The pool drains the cancelled tasks: each is taken by the thread, which sees it cancelled and drops it.
    await until(() => app.composed.pool.stats().completed - before >= busy.length + queued.length);
    const metrics = await currentMetrics(app);
    assert.equal(
      sample(metrics, 'pixvote_pipeline_stage_duration_seconds_count', 'stage="decode"'),
      5,
      'the abandoned uploads were never decoded',
    );
    assert.equal(await countUploads(app), 5);
    const disk = await diskState(app);
    assert.equal(disk.media.length, 15);
    assert.deepEqual([disk.staging, disk.tmp], [[], []]);
  } finally {
    await app.close();
  }
});
