/**
 * A large blocklist import through HTTP, as `pixvote mod blocklist import` sends it (issue 44, item 5): `--entries`
 * random PDQ entries POSTed to /api/admin/blocklist in requests of `--batch` (10 000, the contract's most), one after
 * the other, to the app as `npm start` runs it, over `--uploads` stored uploads. Two clients measure all along, one
 * request after another: `GET /healthz` and an anonymous listing (`GET /api/uploads?limit=20&page=N`, N cycling
 * 1–50), first with the app idle (the yardstick, in the same run), then while the import runs. Reported: the rate
 * of the import (entries per second, the whole import's wall time), /healthz p50 and p99 idle and during (goal:
 * p99 < 50 ms), the listing's p50 and p99 idle and during, and their ratios during ÷ idle (goal: ≤ 1.5), then how
 * long after the import's last answer the `blocklist_hold` jobs were done (every stored upload an entry matches
 * held).
 *
 *   npm run bench:blocklist-import [-- --db sqlite,postgres --entries 50k --uploads 20k --batch 10000]
 *   npm run bench:blocklist-import -- --entries 300k          (the size: ~minutes)
 */
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { setAdmin } from '../src/domain/auth/admin-roles.ts';
import { UserRepository } from '../src/store/repositories/user.repository.ts';
import { mintJwt } from './support/app-api.ts';
import { createBenchDatabase, postgresUnavailable, type DbKind } from './support/bench-database.ts';
import { isMain, numbers, runAlone } from './support/cli.ts';
import { LoadClient } from './support/http-load.ts';
import { atMost, figure, type Recorder } from './support/report.ts';
import { growUploads, rng, seedUsers } from './support/seed.ts';
import { appEnv, startServer } from './support/server-process.ts';
import { quantile } from './support/stats.ts';
import { timeSequentially } from './support/under-load.ts';

export interface ImportOptions {
  dbs: DbKind[];
  entries: number;
  uploads: number;
  /** Entries per request (≤ 10 000, and each body < 1 MiB). */
  batch: number;
  /** Idle measurement per client, ms. */
  idleMs: number;
}

/** The goals: /healthz p99 under 50 ms, listings within 1.5× of idle, during a 300k-entry import. */
const HEALTHZ_P99_GOAL = atMost(50);
const LISTING_RATIO_GOAL = atMost(1.5);
/** Pause between two timed requests of one client. */
const GAP_MS = 10;
const HOLD_WAIT_MS = 30 * 60_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function blocklistImportBench(rec: Recorder, opts: ImportOptions): Promise<void> {
  for (const kind of opts.dbs) {
    if (kind === 'postgres') {
      const why = await postgresUnavailable();
      if (why) {
        rec.note(`blocklist import on PostgreSQL skipped: ${why}`);
        continue;
      }
    }
    await oneDatabase(rec, kind, opts);
  }
}

async function oneDatabase(rec: Recorder, kind: DbKind, opts: ImportOptions): Promise<void> {
  const bdb = await createBenchDatabase(kind);
  try {
    const db = await bdb.open();
    let adminId: string;
    try {
      const r = rng(44);
      const users = await seedUsers(db, 20);
      if (opts.uploads > 0) await growUploads(db, { size: opts.uploads, hashes: [], users, r });
      await setAdmin(new UserRepository(db), users[0]!.username, true);
      adminId = users[0]!.id;
    } finally {
      await db.close();
    }
    const server = await startServer({
      env: appEnv({ ...bdb.env, HUMAN_POLICY: 'off', WORKERS: '1', LOG_LEVEL: 'warn' }),
      logFile: path.join(bdb.dataDir, 'server.log'),
    });
    const probes = new LoadClient(server.url, 2);
    const importer = new LoadClient(server.url, 1);
    const auth = { authorization: `Bearer ${mintJwt(adminId)}` };
    try {
      let page = 0;
      const healthz = () => probes.send({ method: 'GET', path: '/healthz' });
      const listing = () => probes.send({ method: 'GET', path: `/api/uploads?limit=20&page=${1 + (page++ % 50)}` });
      /** Both clients, one request after another each, until `done()` says so. */
      const measure = async (done: () => boolean) => {
        const time = async (send: () => Promise<{ status: number }>, what: string) => {
          const ms: number[] = [];
          while (!done()) ms.push(...(await timeSequentially(what, send, { count: 1, gapMs: GAP_MS, capMs: 60_000 })));
          return ms;
        };
        const [h, l] = await Promise.all([time(healthz, 'GET /healthz'), time(listing, 'GET /api/uploads')]);
        return { healthz: h, listing: l };
      };
      // Warm-up (JIT, connections, the listing's first pages), then the yardstick.
      await measure(
        (
          (until) => () =>
            performance.now() > until
        )(performance.now() + 2_000),
      );
      const idle = await measure(
        (
          (until) => () =>
            performance.now() > until
        )(performance.now() + opts.idleMs),
      );

      const entries = Array.from({ length: opts.entries }, () => ({
        pdq: randomBytes(32).toString('hex'),
        reason: 'bench import',
      }));
      let importing = true;
      const started = performance.now();
      const during = measure(() => !importing);
      let added = 0;
      try {
        for (let i = 0; i < entries.length; i += opts.batch) {
          const res = await importer.send({
            method: 'POST',
            path: '/api/admin/blocklist',
            headers: { ...auth, 'content-type': 'application/json' },
            body: JSON.stringify({ entries: entries.slice(i, i + opts.batch) }),
          });
          if (res.status !== 200) throw new Error(`POST /api/admin/blocklist: HTTP ${res.status} ${res.body}`);
          added += res.json<{ added: number }>().added;
        }
      } finally {
        importing = false;
      }
      const seconds = (performance.now() - started) / 1000;
      const busy = await during;
      if (added !== entries.length) throw new Error(`${added} of ${entries.length} entries added`);
      const holdSeconds = await holdsDone(importer, auth);

      const size = `${label(opts.entries)} PDQ entries, ${label(opts.uploads)} uploads`;
      const p = (xs: number[], q: number) => quantile(xs, q);
      rec.add(
        figure('blocklist-import', `${kind}: import rate, ${size}`, 'entries/s', entries.length / seconds, {
          note: `${seconds.toFixed(1)} s in requests of ${opts.batch}`,
        }),
        figure('blocklist-import', `${kind}: /healthz p50 idle`, 'ms', p(idle.healthz, 0.5)),
        figure('blocklist-import', `${kind}: /healthz p99 idle`, 'ms', p(idle.healthz, 0.99)),
        figure('blocklist-import', `${kind}: /healthz p50 during the import`, 'ms', p(busy.healthz, 0.5)),
        figure('blocklist-import', `${kind}: /healthz p99 during the import`, 'ms', p(busy.healthz, 0.99), {
          target: HEALTHZ_P99_GOAL,
          note: `${busy.healthz.length} requests, max ${Math.max(...busy.healthz).toFixed(0)} ms`,
        }),
        figure('blocklist-import', `${kind}: listing p50 idle`, 'ms', p(idle.listing, 0.5)),
        figure('blocklist-import', `${kind}: listing p99 idle`, 'ms', p(idle.listing, 0.99)),
        figure('blocklist-import', `${kind}: listing p50 during the import`, 'ms', p(busy.listing, 0.5)),
        figure('blocklist-import', `${kind}: listing p99 during the import`, 'ms', p(busy.listing, 0.99), {
          note: `${busy.listing.length} requests`,
        }),
        figure(
          'blocklist-import',
          `${kind}: listing p50 during ÷ idle`,
          '×',
          p(busy.listing, 0.5) / p(idle.listing, 0.5),
          { target: LISTING_RATIO_GOAL },
        ),
        figure(
          'blocklist-import',
          `${kind}: listing p99 during ÷ idle`,
          '×',
          p(busy.listing, 0.99) / p(idle.listing, 0.99),
        ),
        figure('blocklist-import', `${kind}: hold jobs done after the import's last answer`, 's', holdSeconds),
      );
    } finally {
      await probes.close();
      await importer.close();
      await server.stop();
    }
  } finally {
    await bdb.dispose();
  }
}

/** Seconds until no `blocklist_hold` job is queued or running. */
async function holdsDone(client: LoadClient, auth: Record<string, string>): Promise<number> {
  const started = performance.now();
  for (;;) {
    const res = await client.send({ method: 'GET', path: '/api/admin/jobs?limit=100', headers: auth });
    if (res.status !== 200) throw new Error(`GET /api/admin/jobs: HTTP ${res.status} ${res.body}`);
    const jobs = res.json<{ jobs: Array<{ kind: string; status: string }> }>().jobs;
    const open = jobs.filter((j) => j.kind === 'blocklist_hold' && j.status !== 'done');
    if (open.some((j) => j.status === 'failed')) throw new Error(`a hold job failed: ${res.body.slice(0, 500)}`);
    if (!open.length) return (performance.now() - started) / 1000;
    if (performance.now() - started > HOLD_WAIT_MS) throw new Error('the hold jobs did not end in 30 minutes');
    await sleep(250);
  }
}

const label = (n: number) => (n >= 1e6 ? `${n / 1e6}M` : n >= 1e3 ? `${n / 1e3}k` : String(n));

if (isMain(import.meta.url)) {
  await runAlone(
    'blocklist-import',
    {
      db: { type: 'string', default: 'sqlite' },
      entries: { type: 'string', default: '50k' },
      uploads: { type: 'string', default: '20k' },
      batch: { type: 'string', default: '10000' },
      'idle-ms': { type: 'string', default: '10000' },
    },
    (rec, v) =>
      blocklistImportBench(rec, {
        dbs: String(v.db).split(',') as DbKind[],
        entries: numbers(String(v.entries))[0]!,
        uploads: numbers(String(v.uploads))[0]!,
        batch: Math.min(10_000, numbers(String(v.batch))[0]!),
        idleMs: Number(v['idle-ms']),
      }),
  );
}
