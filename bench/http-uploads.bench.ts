/**
 * Image uploads end to end: multipart POSTs of distinct 2 MP JPEGs from concurrent keep-alive clients to the
 * app running as `npm start` runs it (its own process, WORKERS=2, person detection on), beside the same
 * images through a MediaPool of the same size in this process, and beside the same app with HUMAN_POLICY=off
 * (the yardstick of detection's cost), in interleaved rounds. Each round's uploads
 * are deleted afterwards (outside the timing), so the next round uploads the same bytes as new images.
 * Then a 12 MP JPEG upload, one at a time, for its latency.
 *
 *   npm run bench:http-uploads [-- --db sqlite|postgres --rounds 5 --images 16 --clients 4]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadavg } from 'node:os';
import { createBenchDatabase, postgresUnavailable, type DbKind } from './support/bench-database.ts';
import { createdId, deleteUploads, register, uploadRequest } from './support/app-api.ts';
import { isMain, runAlone } from './support/cli.ts';
import { LoadClient } from './support/http-load.ts';
import { jpegs, type BenchImage } from './support/images.ts';
import { POLICY, poolRate, setupLikeTheApp, startPool } from './support/pipeline-subjects.ts';
import { figure, type Recorder } from './support/report.ts';
import { TARGETS } from './support/targets.ts';
import { appEnv, startServer, type BenchServer } from './support/server-process.ts';
import { cpuAndWall, interleave, ratios } from './support/stats.ts';

export interface HttpUploadOptions {
  db: DbKind;
  rounds: number;
  /** Distinct 2 MP images per round. */
  images: number;
  clients: number;
  workers: number;
  /** Also measure the 12 MP upload latency. */
  latency12: boolean;
}

interface Round {
  rate: number;
  p50: number;
  p95: number;
  cpuMsPerImage: number;
}

/** One round of uploads through HTTP; the created uploads are deleted after the timing. */
async function httpRound(
  app: BenchServer,
  client: LoadClient,
  token: string,
  images: readonly BenchImage[],
): Promise<Round> {
  const requests = images.map((img) => uploadRequest(img, token));
  const ids: string[] = [];
  const cpu = app.cpuMs();
  const res = await client.run({
    next: (i) => requests[i] ?? null,
    keepBodies: true,
    onResponse: (r) => ids.push(createdId(r.status, r.body)),
  });
  const cpuMsPerImage = (app.cpuMs() - cpu) / images.length;
  await deleteUploads(client, token, ids);
  return { rate: res.perSecond, p50: res.p50, p95: res.p95, cpuMsPerImage };
}

export async function httpUploadsBench(rec: Recorder, opts: HttpUploadOptions): Promise<void> {
  if (opts.db === 'postgres') {
    const why = await postgresUnavailable();
    if (why) return rec.note(`HTTP uploads on PostgreSQL skipped: ${why}`);
  }
  await setupLikeTheApp();
  const images = await jpegs(2, opts.images);
  const bdb = await createBenchDatabase(opts.db);
  const staging = await mkdtemp(path.join(tmpdir(), 'pixvote-bench-direct-'));
  const app = await startServer({
    env: appEnv({ ...bdb.env, WORKERS: String(opts.workers), HUMAN_POLICY: POLICY }),
    logFile: path.join(bdb.dataDir, 'server.log'),
  });
  const bdbOff = await createBenchDatabase(opts.db);
  const appOff = await startServer({
    env: appEnv({ ...bdbOff.env, WORKERS: String(opts.workers), HUMAN_POLICY: 'off' }),
    logFile: path.join(bdbOff.dataDir, 'server.log'),
  });
  const client = new LoadClient(app.url, opts.clients);
  const clientOff = new LoadClient(appOff.url, opts.clients);
  const pool = await startPool(opts.workers, POLICY);
  const where = `${opts.db === 'sqlite' ? 'SQLite' : 'PostgreSQL + Redis'}, ${opts.workers} workers`;
  try {
    const token = await register(client, 'bench_uploader');
    const tokenOff = await register(clientOff, 'bench_uploader_off');
    const rounds: Round[] = [];
    const roundsOff: Round[] = [];
    const directCpu: number[] = [];
    const subjects = (list: typeof images) => ({
      http: async () => {
        const r = await httpRound(app, client, token, list);
        rounds.push(r);
        return r.rate;
      },
      httpOff: async () => {
        const r = await httpRound(appOff, clientOff, tokenOff, list);
        roundsOff.push(r);
        return r.rate;
      },
      direct: async () => {
        const { value, cpuMs } = await cpuAndWall(() => poolRate(pool, list, staging, POLICY));
        directCpu.push(cpuMs / list.length);
        return value;
      },
    });
    // Warm-up: connections, JIT, every worker's first image, the database's first pages: one image per client
    // (and per worker) does it; a full round of every image measured nothing more.
    await interleave(1, subjects(images.slice(0, Math.max(opts.clients, opts.workers))));
    rounds.length = 0;
    roundsOff.length = 0;
    directCpu.length = 0;
    const s = await interleave(opts.rounds, subjects(images));
    const label = `2 MP, ${where}, ${opts.clients} clients`;
    rec.add(
      figure('http-uploads', `${label}: HTTP uploads`, 'images/s', s.http, {
        note: `${images.length} distinct images per round`,
      }),
      figure(
        'http-uploads',
        `${label}: HTTP upload latency p50`,
        'ms',
        rounds.map((r) => r.p50),
      ),
      figure(
        'http-uploads',
        `${label}: HTTP upload latency p95`,
        'ms',
        rounds.map((r) => r.p95),
      ),
      figure('http-uploads', `${label}: HTTP uploads, detection off`, 'images/s', s.httpOff),
      figure('http-uploads', `${label}: HTTP uploads, detection on ÷ off`, '×', ratios(s.http, s.httpOff), {
        target: TARGETS.detectionOnVsOff,
        note: `HUMAN_POLICY=${POLICY} ÷ off, same server build, same images`,
      }),
      figure(
        'http-uploads',
        `${label}: app CPU per image, detection off ÷ on`,
        '×',
        ratios(
          roundsOff.map((r) => r.cpuMsPerImage),
          rounds.map((r) => r.cpuMsPerImage),
        ),
        {
          target: TARGETS.detectionCpuOffVsOn,
          note: 'the throughput ratio measured in CPU, which a busy shared machine disturbs less',
        },
      ),
      figure('http-uploads', `${label}: direct pipeline (MediaPool, same images)`, 'images/s', s.direct),
      figure('http-uploads', `${label}: HTTP ÷ direct pipeline`, '×', ratios(s.http, s.direct), {
        target: TARGETS.httpVsDirect,
      }),
      figure(
        'http-uploads',
        `${label}: CPU per image, HTTP ÷ direct`,
        '×',
        ratios(
          rounds.map((r) => r.cpuMsPerImage),
          directCpu,
        ),
        {
          note: 'whole app process vs this process running the pool',
        },
      ),
    );
    if (opts.latency12) await latency12(rec, app, client, token, where);
  } finally {
    await client.close();
    await clientOff.close();
    await pool.close();
    await app.stop();
    await appOff.stop();
    await bdbOff.dispose();
    await bdb.dispose();
    await rm(staging, { recursive: true, force: true });
  }
}

/** 12 MP JPEG uploads one at a time (the machine otherwise idle), each deleted after. */
async function latency12(
  rec: Recorder,
  app: BenchServer,
  client: LoadClient,
  token: string,
  where: string,
): Promise<void> {
  const images = await jpegs(12, 4);
  const ms: number[] = [];
  for (let pass = 0; pass < 3; pass++) {
    for (const img of images) {
      const t = performance.now();
      const res = await client.send(uploadRequest(img, token));
      const took = performance.now() - t;
      const id = createdId(res.status, res.body);
      if (pass > 0) ms.push(took); // the first pass warms the 12 MP code paths
      await deleteUploads(client, token, [id]);
    }
  }
  rec.add(
    figure('http-uploads', `12 MP JPEG upload latency, one at a time (${where})`, 'ms', ms, {
      target: TARGETS.upload12MpMs,
      note:
        `${(images[0]!.bytes.length / 2 ** 20).toFixed(1)} MiB each; ` +
        `load average ${loadavg()[0]!.toFixed(2)} when done`,
    }),
  );
}

if (isMain(import.meta.url)) {
  await runAlone(
    'http-uploads',
    {
      db: { type: 'string', default: 'sqlite' },
      rounds: { type: 'string', default: '5' },
      images: { type: 'string', default: '16' },
      clients: { type: 'string', default: '4' },
      workers: { type: 'string', default: '2' },
    },
    (rec, v) =>
      httpUploadsBench(rec, {
        db: v.db as DbKind,
        rounds: Number(v.rounds),
        images: Number(v.images),
        clients: Number(v.clients),
        workers: Number(v.workers),
        latency12: true,
      }),
  );
}
