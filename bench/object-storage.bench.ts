/**
 * Media on object storage (issue 19) against local disk, yardstick in the same run: two app processes as
 * `npm start` runs them (WORKERS=2), one with MEDIA_STORE=s3://… on the real S3 server of scripts/s3-server.sh
 * (OpenStack Swift + s3api on this machine), one on local disk, each on its own database. Interleaved rounds of
 * multipart uploads of distinct 2 MP JPEGs (each round's uploads deleted after, outside the timing), then image
 * GETs (`?size=medium`, keep-alive clients) for latency p50 and throughput.
 *
 *   npm run bench:object-storage [-- --db sqlite|postgres --rounds 5 --images 16 --clients 4 --gets 2000]
 *   (the S3 server: bash scripts/s3-server.sh start; TEST_S3_ENDPOINT if not on 127.0.0.1:8080)
 */
import path from 'node:path';
import { createBenchDatabase, postgresUnavailable, type DbKind } from './support/bench-database.ts';
import { createdId, deleteUploads, register, uploadRequest } from './support/app-api.ts';
import { isMain, runAlone } from './support/cli.ts';
import { LoadClient } from './support/http-load.ts';
import { jpegs, type BenchImage } from './support/images.ts';
import { POLICY } from './support/pipeline-subjects.ts';
import { figure, type Recorder } from './support/report.ts';
import { TARGETS } from './support/targets.ts';
import { appEnv, startServer, type BenchServer } from './support/server-process.ts';
import { interleave, ratios } from './support/stats.ts';
import { createTestBucket, s3Unreachable } from '../test/support/s3.ts';

export interface ObjectStorageOptions {
  db: DbKind;
  rounds: number;
  images: number;
  clients: number;
  workers: number;
  gets: number;
}

async function uploadRound(client: LoadClient, token: string, images: readonly BenchImage[]): Promise<number> {
  const requests = images.map((img) => uploadRequest(img, token));
  const ids: string[] = [];
  const res = await client.run({
    next: (i) => requests[i] ?? null,
    keepBodies: true,
    onResponse: (r) => ids.push(createdId(r.status, r.body)),
  });
  await deleteUploads(client, token, ids);
  return res.perSecond;
}

export async function objectStorageBench(rec: Recorder, opts: ObjectStorageOptions): Promise<void> {
  const s3Why = await s3Unreachable();
  if (s3Why) return rec.note(`object storage skipped: ${s3Why}`);
  if (opts.db === 'postgres') {
    const why = await postgresUnavailable();
    if (why) return rec.note(`object storage on PostgreSQL skipped: ${why}`);
  }
  const images = await jpegs(2, opts.images);
  const bucket = await createTestBucket();
  const dbs = { disk: await createBenchDatabase(opts.db), s3: await createBenchDatabase(opts.db) };
  const apps: Record<'disk' | 's3', BenchServer | null> = { disk: null, s3: null };
  const clients: LoadClient[] = [];
  const where = `${opts.db === 'sqlite' ? 'SQLite' : 'PostgreSQL + Redis'}, ${opts.workers} workers`;
  try {
    for (const kind of ['disk', 's3'] as const) {
      apps[kind] = await startServer({
        env: appEnv({
          ...dbs[kind].env,
          ...(kind === 's3' ? bucket.env(undefined, 'media') : {}),
          WORKERS: String(opts.workers),
          HUMAN_POLICY: POLICY,
        }),
        logFile: path.join(dbs[kind].dataDir, 'server.log'),
      });
    }
    const disk = new LoadClient(apps.disk!.url, opts.clients);
    const s3 = new LoadClient(apps.s3!.url, opts.clients);
    clients.push(disk, s3);
    const tokens = { disk: await register(disk, 'bench_disk'), s3: await register(s3, 'bench_s3') };
    const subjects = {
      s3: () => uploadRound(s3, tokens.s3, images),
      disk: () => uploadRound(disk, tokens.disk, images),
    };
    await interleave(1, subjects); // warm-up
    const up = await interleave(opts.rounds, subjects);
    const label = `2 MP, ${where}, ${opts.clients} clients`;
    rec.add(
      figure('object-storage', `${label}: HTTP uploads, object store`, 'images/s', up.s3),
      figure('object-storage', `${label}: HTTP uploads, local disk`, 'images/s', up.disk),
      figure('object-storage', `${label}: HTTP uploads, object store ÷ local disk`, '×', ratios(up.s3, up.disk), {
        target: TARGETS.s3UploadsVsDisk,
      }),
    );

    // GETs: a few stored images on each, read round-robin.
    const stored: Record<'disk' | 's3', string[]> = { disk: [], s3: [] };
    for (const kind of ['disk', 's3'] as const) {
      const c = kind === 'disk' ? disk : s3;
      await c.run({
        next: (i) => (i < 8 ? uploadRequest(images[i]!, tokens[kind]) : null),
        keepBodies: true,
        onResponse: (r) => stored[kind].push(createdId(r.status, r.body)),
      });
    }
    const getRound = async (kind: 'disk' | 's3') => {
      const c = kind === 'disk' ? disk : s3;
      const ids = stored[kind];
      return c.run({
        next: (i) => (i < opts.gets ? { method: 'GET', path: `/api/image/${ids[i % ids.length]}?size=medium` } : null),
      });
    };
    const p50 = { disk: [] as number[], s3: [] as number[] };
    const get = await interleave(opts.rounds, {
      s3: async () => {
        const r = await getRound('s3');
        p50.s3.push(r.p50);
        return r.perSecond;
      },
      disk: async () => {
        const r = await getRound('disk');
        p50.disk.push(r.p50);
        return r.perSecond;
      },
    });
    const glabel = `image GET ?size=medium, ${where}, ${opts.clients} clients`;
    rec.add(
      figure('object-storage', `${glabel}: p50, object store`, 'ms', p50.s3),
      figure('object-storage', `${glabel}: p50, local disk`, 'ms', p50.disk),
      figure('object-storage', `${glabel}: p50, object store ÷ local disk`, '×', ratios(p50.s3, p50.disk)),
      figure('object-storage', `${glabel}: throughput, object store`, 'req/s', get.s3),
      figure('object-storage', `${glabel}: throughput, local disk`, 'req/s', get.disk),
      figure('object-storage', `${glabel}: throughput, object store ÷ local disk`, '×', ratios(get.s3, get.disk)),
    );
  } finally {
    for (const c of clients) await c.close();
    for (const a of Object.values(apps)) await a?.stop();
    await dbs.disk.dispose();
    await dbs.s3.dispose();
    await bucket.drop();
  }
}

if (isMain(import.meta.url)) {
  await runAlone(
    'object-storage',
    {
      db: { type: 'string', default: 'sqlite' },
      rounds: { type: 'string', default: '5' },
      images: { type: 'string', default: '16' },
      clients: { type: 'string', default: '4' },
      workers: { type: 'string', default: '2' },
      gets: { type: 'string', default: '2000' },
    },
    (rec, v) =>
      objectStorageBench(rec, {
        db: v.db as DbKind,
        rounds: Number(v.rounds),
        images: Number(v.images),
        clients: Number(v.clients),
        workers: Number(v.workers),
        gets: Number(v.gets),
      }),
  );
}
