/**
 * GET /readyz per API.md Operations: 200 `degraded` while Redis is configured but down and the in-process
 * fallbacks serve; 503 only when the service cannot serve (database, workers, media store).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import { currentMetrics, startApp, type TestApp } from '../support/app.ts';
import { startFaultProxy } from '../support/fault-proxy.ts';
import { createTestDatabase } from '../support/pg.ts';
import { registerUser } from '../support/users.ts';
import { uploadFields } from '../support/uploads.ts';
import { onPostgres } from '../support/env.ts';

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = createServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test(
  'Redis configured but down: /readyz 200 degraded naming Redis, and the service serves; no media store: 503',
  { skip: !onPostgres && 'PostgreSQL + Redis profile' },
  async () => {
    const app = await startApp({ REDIS_URL: `redis://127.0.0.1:${await closedPort()}` });
    try {
      const ready = await app.api.get('/readyz');
      assert.equal(ready.status, 200, ready.text);
      assert.equal(ready.body.status, 'degraded');
      assert.equal(ready.body.checks.redis.status, 'down');
      for (const name of ['database', 'workers', 'media']) assert.equal(ready.body.checks[name].status, 'ok', name);
      assert.equal(ready.headers.get('retry-after'), null);

      // It does serve: accounts, writes, reads.
      const u = await registerUser(app.api);
      assert.equal(
        (await uploadFields(app.api, u.token, { upload_type: 'link', external_url: 'https://example.com/degraded' }))
          .status,
        201,
      );
      assert.equal((await app.api.get('/api/uploads')).status, 200);

      // Without its media directory the service cannot store or serve images: not ready.
      const media = join(app.config.dataDir, 'media');
      await rename(media, `${media}.gone`);
      try {
        await sleep(1100); // past the shared result of the last check
        const gone = await app.api.get('/readyz');
        assert.equal(gone.status, 503, gone.text);
        assert.equal(gone.body.error, 'busy');
        assert.equal(gone.body.status, 'down');
        assert.match(gone.body.message, /media/);
        assert.equal(gone.body.checks.media.status, 'down');
        assert.ok(Number(gone.headers.get('retry-after')) >= 1);
      } finally {
        await rename(`${media}.gone`, media);
      }
      await sleep(1100);
      assert.equal((await app.api.get('/readyz')).body.status, 'degraded');
    } finally {
      await app.close();
    }
  },
);

test('every dependency up: /readyz 200 ok with the database, workers, media (and Redis when configured)', async () => {
  const app = await startApp();
  try {
    const ready = await app.api.get('/readyz');
    assert.equal(ready.status, 200);
    assert.equal(ready.body.status, 'ok');
    const expected = ['database', 'media', 'workers', ...(app.config.redisUrl ? ['redis'] : [])].sort();
    assert.deepEqual(Object.keys(ready.body.checks).sort(), expected);
    for (const name of expected) assert.equal(ready.body.checks[name].status, 'ok', name);
  } finally {
    await app.close();
  }
});

/** The Prometheus sample `name{labels} value` in a scrape, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Scrapes /metrics (each must answer 200) until `series` reads `want`; the scrapes share a rendering per second. */
async function scrapeUntil(app: TestApp, series: string, want: number): Promise<string> {
  let last: number | undefined;
  for (let attempt = 0; attempt < 300; attempt++) {
    const r = await app.api.get('/metrics');
    assert.equal(r.status, 200, r.text);
    if ((last = sample(r.text, series)) === want) return r.text;
    await sleep(200);
  }
  assert.fail(`${series} stayed at ${last} over 300 scrapes; expected ${want}`);
}

test(
  'the database down: /metrics and /healthz answer 200, the scrape shows the database down and the failing ' +
    'requests, and the database up again once it is back',
  { skip: !onPostgres && 'PostgreSQL + Redis profile (an embedded SQLite cannot go away)' },
  async () => {
    const database = await createTestDatabase();
    const pgUrl = new URL(database.url);
    const proxy = await startFaultProxy(`tcp://${pgUrl.host}`);
    const proxied = new URL(database.url);
    proxied.host = new URL(proxy.url).host;
    const app = await startApp({}, { databaseUrl: proxied.toString() });
    const up = 'pixvote_dependency_up{dependency="database"}';
    try {
      await scrapeUntil(app, up, 1);
      assert.equal(sample(await currentMetrics(app), 'pixvote_dependency_up{dependency="redis"}'), 1);

      proxy.set('refuse');
      // A request that needs the database fails as the contract says (503, not a hang, not a 500)…
      const failing = await app.api.get('/api/modlog');
      assert.equal(failing.status, 503, failing.text);
      assert.equal((await app.api.get('/healthz')).status, 200);
      // …and the scrape still answers, naming the database as down and counting that failure.
      const text = await scrapeUntil(app, up, 0);
      assert.ok(
        (sample(text, 'pixvote_http_requests_total{method="GET",route="/api/modlog",status="503"}') ?? 0) >= 1,
        'the failed request is counted',
      );
      // The last figures read stay in place rather than vanishing.
      assert.notEqual(sample(text, 'pixvote_blocklist_entries'), undefined);

      proxy.set('pass');
      await scrapeUntil(app, up, 1);
    } finally {
      await app.close();
      await proxy.close();
      await database.drop();
    }
  },
);
