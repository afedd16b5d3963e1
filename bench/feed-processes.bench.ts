/**
 * The cached feed page against a Koa hello-world, one fresh app process after another, with a native load
 * generator (`wrk`, Debian's `wrk` package) so that the client spends little of the two cores. Per app process:
 * requests/s of the cached page ÷ the hello-world's in the same interleaved rounds (median), the same Koa sending a
 * body of the page's size ÷ its hello-world (what the page's bytes alone leave), and the app's own CPU per request,
 * user and system apart (/proc, all its threads). bench:feeds measures one process with an undici
 * client; this one asks whether the figure depends on the process it happened to start.
 *
 * It does (bench/README.md, "The cached feed, process by process"): the same build answers the cached page with
 * ~20 µs of user CPU in some processes and ~29 µs in others, for the process's whole life, and the profile of a
 * slow one charges the difference to Node's `process.nextTick` (the tick object's literal), which the HTTP server
 * calls several times per request: its stores had gone megamorphic during start-up, which src/tick-objects.ts now
 * prevents. `--node-options` passes flags to the app (`--cpu-prof`, for one).
 *
 *   npm run bench:feed-processes [-- --db sqlite --processes 6 --rounds 6 --seconds 2]
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { createBenchDatabase, postgresUnavailable, type DbKind } from './support/bench-database.ts';
import { isMain, runAlone, UsageError } from './support/cli.ts';
import { figure, type Recorder } from './support/report.ts';
import { rng, seedUploads, seedUsers } from './support/seed.ts';
import { HELLO_ENTRY, appEnv, processCpu, startServer, type BenchServer } from './support/server-process.ts';
import { quantile } from './support/stats.ts';
import { TARGETS } from './support/targets.ts';

export interface FeedProcessesOptions {
  dbs: DbKind[];
  processes: number;
  rounds: number;
  seconds: number;
  connections: number;
  nodeOptions?: string;
}

interface Run {
  perSecond: number;
  /** The server's CPU per request, µs. */
  user: number;
  sys: number;
}

export function wrkAvailable(): boolean {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (e) {
    // wrk --version prints its banner and exits 1; only a missing binary is ENOENT.
    return (e as { code?: string }).code !== 'ENOENT';
  }
}

function wrk(pid: number, url: string, opts: FeedProcessesOptions): Run {
  const before = processCpu(pid);
  const out = execFileSync('wrk', ['-t1', `-c${opts.connections}`, `-d${opts.seconds}s`, url], { encoding: 'utf8' });
  const after = processCpu(pid);
  const done = Number(/(\d+) requests in/.exec(out)?.[1]);
  if (!done || /Non-2xx or 3xx responses/.test(out)) throw new Error(`wrk ${url}: not every answer was 2xx:\n${out}`);
  return {
    perSecond: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)![1]),
    user: ((after.userMs - before.userMs) * 1000) / done,
    sys: ((after.sysMs - before.sysMs) * 1000) / done,
  };
}

/**
 * One app process against the hello-world, and against Koa sending a body of the page's size (the hello-world's
 * `?bytes=N`: what the page's bytes alone cost a bare Koa): medians over the interleaved rounds.
 */
async function measureProcess(app: BenchServer, hello: BenchServer, opts: FeedProcessesOptions, warmed: Set<string>) {
  const page = `${app.url}/api/uploads?page=1&limit=12`;
  // As wrk asks for it: no Accept-Encoding, so the page's own bytes (fetch would take gzip and inflate it).
  const bytes = Number(
    (await fetch(page, { headers: { 'accept-encoding': 'identity' } })).headers.get('content-length'),
  );
  if (!bytes) throw new Error(`${page}: no Content-Length on the cached page`);
  // Warm-ups: the app process's page, and the hello-world's two answers the first time they are asked.
  for (const url of [`${hello.url}/`, `${hello.url}/?bytes=${bytes}`])
    if (!warmed.has(url)) {
      warmed.add(url);
      wrk(hello.pid, url, { ...opts, seconds: 1 });
    }
  wrk(app.pid, page, { ...opts, seconds: 1 });
  const rounds = Array.from({ length: opts.rounds }, () => {
    const h = wrk(hello.pid, `${hello.url}/`, opts);
    const same = wrk(hello.pid, `${hello.url}/?bytes=${bytes}`, opts);
    const a = wrk(app.pid, page, opts);
    return { ratio: a.perSecond / h.perSecond, sameBytes: same.perSecond / h.perSecond, app: a, hello: h };
  });
  const median = (of: (r: (typeof rounds)[number]) => number) => quantile(rounds.map(of), 0.5);
  return {
    bytes,
    ratio: median((r) => r.ratio),
    sameBytes: median((r) => r.sameBytes),
    user: median((r) => r.app.user),
    sys: median((r) => r.app.sys),
    helloUser: median((r) => r.hello.user),
  };
}

export async function feedProcessesBench(rec: Recorder, opts: FeedProcessesOptions): Promise<void> {
  if (!wrkAvailable()) throw new UsageError('wrk is not installed (apt-get install wrk)');
  // wrk takes whole seconds only ("-d1.5s" is refused).
  if (!Number.isInteger(opts.seconds) || opts.seconds < 1) throw new UsageError('--seconds must be a whole number ≥ 1');
  if (!Number.isInteger(opts.processes) || opts.processes < 1) throw new UsageError('--processes must be ≥ 1');
  if (!Number.isInteger(opts.rounds) || opts.rounds < 1) throw new UsageError('--rounds must be ≥ 1');
  if (!Number.isInteger(opts.connections) || opts.connections < 1) throw new UsageError('--connections must be ≥ 1');
  const hello = await startServer({ entry: HELLO_ENTRY, env: {}, logFile: '/dev/null', readyPath: '/' });
  const warmed = new Set<string>();
  try {
    for (const kind of opts.dbs) {
      const why = kind === 'postgres' ? await postgresUnavailable() : null;
      if (why) {
        rec.note(`feed processes on PostgreSQL skipped: ${why}`);
        continue;
      }
      const where = kind === 'sqlite' ? 'SQLite' : 'PostgreSQL + Redis';
      const bdb = await createBenchDatabase(kind);
      try {
        const db = await bdb.open();
        const users = await seedUsers(db, 1000);
        await seedUploads(db, { count: 10_000, users, r: rng(7), votes: 100_000, tags: 50 });
        await db.close();
        const ratios: number[] = [];
        const sameBytes: number[] = [];
        const userCpu: number[] = [];
        let bytes = 0;
        for (let p = 0; p < opts.processes; p++) {
          const app = await startServer({
            env: appEnv({
              ...bdb.env,
              WORKERS: '1',
              HUMAN_POLICY: 'off',
              ...(opts.nodeOptions ? { NODE_OPTIONS: opts.nodeOptions } : {}),
            }),
            logFile: path.join(bdb.dataDir, 'server.log'),
          });
          try {
            const m = await measureProcess(app, hello, opts, warmed);
            ratios.push(m.ratio);
            sameBytes.push(m.sameBytes);
            userCpu.push(m.user);
            bytes = m.bytes;
            rec.note(
              `${where}, app process ${p + 1}: cached feed ÷ hello-world ${m.ratio.toFixed(3)} ` +
                `(Koa sending its ${m.bytes} bytes ${m.sameBytes.toFixed(3)}); ` +
                `app CPU per request user ${m.user.toFixed(1)} µs, system ${m.sys.toFixed(1)} µs ` +
                `(hello-world user ${m.helloUser.toFixed(1)} µs)`,
            );
          } finally {
            await app.stop();
          }
        }
        rec.add(
          figure('feed-processes', `${where}: cached feed ÷ hello-world (wrk), per app process`, '×', ratios, {
            target: TARGETS.cachedFeedPerProcess,
            note: `${opts.processes} processes, each the median of ${opts.rounds} rounds of ${opts.seconds} s`,
          }),
          figure('feed-processes', `${where}: Koa sending the page's bytes ÷ hello-world (wrk)`, '×', sameBytes, {
            note: `a body of ${bytes} bytes, as the page: what its size alone leaves of hello-world's throughput`,
          }),
          figure(
            'feed-processes',
            `${where}: cached feed ÷ Koa serving the same bytes (wrk)`,
            '×',
            ratios.map((r, i) => r / sameBytes[i]!),
            { note: "what the gateway's own work costs over a bare Koa answer of the same size" },
          ),
          figure('feed-processes', `${where}: app user CPU per cached page, per app process`, 'µs', userCpu),
        );
      } finally {
        await bdb.dispose();
      }
    }
  } finally {
    await hello.stop();
  }
}

if (isMain(import.meta.url)) {
  await runAlone(
    'feed-processes',
    {
      db: { type: 'string', default: 'sqlite' },
      processes: { type: 'string', default: '6' },
      rounds: { type: 'string', default: '6' },
      seconds: { type: 'string', default: '2' },
      connections: { type: 'string', default: '8' },
      'node-options': { type: 'string' },
    },
    (rec, v) =>
      feedProcessesBench(rec, {
        dbs: String(v.db).split(',') as DbKind[],
        processes: Number(v.processes),
        rounds: Number(v.rounds),
        seconds: Number(v.seconds),
        connections: Number(v.connections),
        nodeOptions: v['node-options'] as string | undefined,
      }),
    'bench:feed-processes',
    {
      summary:
        'The cached feed page against a Koa hello-world with wrk, one fresh app process after another: per ' +
        "process the requests/s ratio, the same Koa serving a body of the page's size, and the app CPU per " +
        'request (user and system).',
      options: {
        db: 'sqlite, postgres or both, comma-separated',
        processes: 'app processes started one after another',
        rounds: "interleaved rounds per process (hello-world, Koa sending the page's bytes, then the cached page)",
        seconds: 'seconds per round',
        connections: 'wrk connections',
        'node-options': 'NODE_OPTIONS for the app processes (e.g. --cpu-prof --cpu-prof-dir=DIR)',
      },
    },
  );
}
