/**
 * `npm run tune-workers`: which WORKERS suits this machine. Starts the app once per worker count
 * (1 … cores × 2, each as `npm start` runs it, SQLite, person detection on) and uploads a realistic mix —
 * mostly 2–4 MP JPEGs, some 12 MP JPEGs, PNG screenshots and animated GIFs — from the same number of
 * concurrent clients to each, in interleaved rounds. Prints throughput, p50/p95 latency and memory per
 * count, and recommends the smallest count within 5 % of the best throughput: more threads than that only
 * add memory and latency. Beside each count, from the server process's CPU time: the cores it kept busy
 * (≥ 0.95 of the machine's at saturation) and images per busy core-second against WORKERS=1 (≥ 0.95×: a
 * thread more wastes no CPU).
 *
 *   npm run tune-workers [-- --max 4 --rounds 3 --clients 8 --images 20]   (--help explains each option)
 */
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { createBenchDatabase, type BenchDatabase } from './support/bench-database.ts';
import { createdId, deleteUploads, register, uploadRequest } from './support/app-api.ts';
import { isMain, runAlone, type Help } from './support/cli.ts';
import { LoadClient } from './support/http-load.ts';
import { imageMix, type BenchImage } from './support/images.ts';
import { POLICY } from './support/pipeline-subjects.ts';
import { figure, type Recorder } from './support/report.ts';
import { appEnv, startServer, type BenchServer } from './support/server-process.ts';
import { CpuYardstick } from './support/cpu-yardstick.ts';
import { interleave, median, ratios } from './support/stats.ts';
import { TARGETS } from './support/targets.ts';

interface Instance {
  workers: number;
  db: BenchDatabase;
  app: BenchServer;
  client: LoadClient;
  token: string;
  p50: number[];
  p95: number[];
  /** Per round: cores the server process kept busy (its CPU time ÷ wall time) and images per busy core-second. */
  cores: number[];
  perCoreSecond: number[];
}

async function round(x: Instance, images: readonly BenchImage[]): Promise<number> {
  const requests = images.map((img) => uploadRequest(img, x.token));
  const ids: string[] = [];
  const cpu = x.app.cpuMs();
  const started = performance.now();
  const res = await x.client.run({
    next: (i) => requests[i] ?? null,
    keepBodies: true,
    onResponse: (r) => ids.push(createdId(r.status, r.body)),
  });
  const cpuMs = x.app.cpuMs() - cpu;
  x.cores.push(cpuMs / (performance.now() - started));
  x.perCoreSecond.push((images.length * 1000) / cpuMs);
  await deleteUploads(x.client, x.token, ids);
  x.p50.push(res.p50);
  x.p95.push(res.p95);
  return res.perSecond;
}

export async function tuneWorkers(
  rec: Recorder,
  opts: { max: number; rounds: number; clients: number; images: number },
): Promise<void> {
  const images = await imageMix(opts.images);
  const kinds = new Map<string, number>();
  for (const i of images) {
    const kind = i.kind === 'jpeg' ? `${i.megapixels} MP JPEG` : i.kind.toUpperCase();
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  const mix = [...kinds].map(([k, n]) => `${n} × ${k}`).join(', ');
  rec.note(
    `image mix per round: ${mix}; ${opts.clients} concurrent clients; ` +
      `HUMAN_POLICY=${POLICY} (detection runs as under reject)`,
  );
  const instances: Instance[] = [];
  const machine = new CpuYardstick();
  try {
    for (let workers = 1; workers <= opts.max; workers++) {
      const db = await createBenchDatabase('sqlite');
      const env = appEnv({
        ...db.env,
        WORKERS: String(workers),
        WORKER_QUEUE: String(opts.clients * 4),
        HUMAN_POLICY: POLICY,
      });
      const app = await startServer({ env, logFile: path.join(db.dataDir, 'server.log') });
      const client = new LoadClient(app.url, opts.clients);
      instances.push({
        workers,
        db,
        app,
        client,
        token: await register(client, `tuner_${workers}`),
        p50: [],
        p95: [],
        cores: [],
        perCoreSecond: [],
      });
    }
    const subjects = Object.fromEntries(instances.map((x) => [String(x.workers), () => round(x, images)]));
    // What the machine gives right now (shared with other work?): cores two CPU-bound threads get, same rounds.
    subjects.machine = () => machine.cores();
    await interleave(1, subjects); // warm-up: every thread has seen every kind of image
    for (const x of instances) x.p50.length = x.p95.length = x.cores.length = x.perCoreSecond.length = 0;
    const s = await interleave(opts.rounds, subjects);

    const best = Math.max(...instances.map((x) => median(s[String(x.workers)]!)));
    for (const x of instances) {
      const rate = s[String(x.workers)]!;
      const mem = x.app.memory();
      rec.add(
        figure('tune-workers', `WORKERS=${x.workers}: throughput`, 'images/s', rate, {
          note: `${((100 * median(rate)) / best).toFixed(0)} % of the best`,
        }),
        figure('tune-workers', `WORKERS=${x.workers}: cores busy`, 'cores', x.cores, {
          note: `of ${availableParallelism()}; the server process's CPU time ÷ wall time over a round`,
        }),
        figure('tune-workers', `WORKERS=${x.workers}: images per busy core-second`, 'images/s', x.perCoreSecond),
        figure(
          'tune-workers',
          `WORKERS=${x.workers}: images per busy core-second ÷ WORKERS=1`,
          '×',
          ratios(x.perCoreSecond, instances[0]!.perCoreSecond),
          x.workers === 2 ? { target: TARGETS.coreSecondScaling } : {},
        ),
        figure('tune-workers', `WORKERS=${x.workers}: latency p50`, 'ms', x.p50),
        figure('tune-workers', `WORKERS=${x.workers}: latency p95`, 'ms', x.p95),
        figure('tune-workers', `WORKERS=${x.workers}: peak RSS of the process`, 'MB', mem?.peakMb ?? Number.NaN, {
          note: mem ? `${mem.rssMb.toFixed(0)} MB now` : 'no /proc',
        }),
      );
    }
    const pick = instances.find((x) => median(s[String(x.workers)]!) >= 0.95 * best)!;
    const top = instances.find((x) => median(s[String(x.workers)]!) === best)!;
    const cores = availableParallelism();
    const efficiency = (x: Instance) => median(ratios(x.perCoreSecond, instances[0]!.perCoreSecond));
    rec.note(
      `recommended WORKERS=${pick.workers} on this ${cores}-core machine: ` +
        `${median(s[String(pick.workers)]!).toFixed(2)} images/s, ` +
        (pick === top
          ? `the best throughput measured`
          : `${((100 * median(s[String(pick.workers)]!)) / best).toFixed(0)} % of the best ` +
            `(WORKERS=${top.workers}, ${best.toFixed(2)} images/s)`) +
        `, p95 ${median(pick.p95).toFixed(0)} ms; ` +
        `${median(pick.cores).toFixed(2)} of ${cores} cores busy ` +
        `(goal ≥ ${(0.95 * cores).toFixed(1)} at saturation), ` +
        `images per busy core-second ${efficiency(pick).toFixed(2)}× WORKERS=1's (goal ≥ 0.95: no CPU wasted). ` +
        'More workers than this add memory (each thread holds a detector and image buffers) ' +
        'and latency without adding throughput: ' +
        "the cores are already busy, and the gateway's own thread needs some of them.",
    );
    const got = median(s.machine!);
    rec.add(
      figure('tune-workers', 'two CPU-bound threads got', 'cores', s.machine!, {
        note: `of ${cores}, in the same rounds: less when other work shares the machine`,
      }),
    );
    const idle = instances.find((x) => x.workers >= pick.workers && median(x.cores) >= 0.95 * cores);
    if (!idle)
      rec.note(
        `no WORKERS up to ${opts.max} kept ${(0.95 * cores).toFixed(1)} cores busy; two CPU-bound threads got ` +
          `${got.toFixed(2)} in the same rounds` +
          (got < 0.95 * Math.min(2, cores)
            ? ': the machine is shared with other work right now, so that goal cannot be judged here.'
            : ': the clients do not saturate the server (raise --clients).'),
      );
    const wasteful = instances.filter((x) => x.workers > 1 && efficiency(x) < 0.95);
    if (wasteful.length)
      rec.note(
        "images per busy core-second fell below 0.95× WORKERS=1's at " +
          `WORKERS=${wasteful.map((x) => x.workers).join(', ')}: those threads spend CPU on contention, not images.`,
      );
  } finally {
    await machine.close();
    for (const x of instances) {
      await x.client.close();
      await x.app.stop();
      await x.db.dispose();
    }
  }
}

/** What `npm run tune-workers -- --help` (and `pixvote tune-workers --help`) explains. */
const CORES = availableParallelism();
const HELP: Help = {
  summary: [
    'Which WORKERS suits this machine. Starts the app once per worker count, 1 … --max, all at once (each as',
    `\`npm start\` runs it: SQLite in a temporary DATA_DIR, person detection on, HUMAN_POLICY=${POLICY}), and`,
    'uploads the same realistic mix to each from --clients concurrent clients: mostly 2-4 MP JPEGs, some 12 MP',
    'JPEGs, PNG screenshots and animated GIFs. One warm-up round, then --rounds measured rounds, interleaved',
    'across the counts.',
    '\n\nPrints, per count: throughput, p50/p95 latency, peak memory, the cores the server kept busy and images per',
    'busy core-second against WORKERS=1; then recommends the smallest count within 5 % of the best throughput.',
    'The figures are also written as JSON under bench/results/. Run it on an otherwise quiet machine: it says',
    'when other work took CPU from it.',
  ].join(' '),
  options: {
    max: `the largest WORKERS tried; all counts run at once, ~160 MB each (default 2 × cores: ${CORES * 2})`,
    rounds: 'measured rounds, each uploading --images images to every count; medians reported',
    clients: `concurrent uploads to each server (default 4 × cores: ${CORES * 4})`,
    images: 'images per round, in the mix above; at least 4, one of each kind',
  },
  footer:
    'e.g. npm run tune-workers -- --max 4 --rounds 3 --clients 8 --images 20 (also: pixvote tune-workers …)' +
    '\n\nExit 0: done; 1: a run failed (the message says why); 2: a bad option.',
};

/** A whole number from `min`, or one line naming the option and exit 2 (as an unknown option gets). */
function count(name: string, value: unknown, min: number): number {
  if (typeof value === 'string' && /^\d+$/.test(value) && Number(value) >= min && Number(value) <= 10_000)
    return Number(value);
  console.error(
    `npm run tune-workers: --${name} must be a whole number from ${min} (got "${String(value)}") ` +
      '(see npm run tune-workers -- --help)',
  );
  process.exit(2);
}

if (isMain(import.meta.url)) {
  await runAlone(
    'tune-workers',
    {
      max: { type: 'string', default: String(CORES * 2) },
      rounds: { type: 'string', default: '3' },
      clients: { type: 'string', default: String(CORES * 4) },
      images: { type: 'string', default: '20' },
    },
    (rec, v) =>
      tuneWorkers(rec, {
        max: count('max', v.max, 1),
        rounds: count('rounds', v.rounds, 1),
        clients: count('clients', v.clients, 1),
        images: count('images', v.images, 4),
      }),
    'tune-workers',
    HELP,
  );
}
