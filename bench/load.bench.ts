/**
 * `npm run bench:load`: mixed traffic at the saturation point, bounded in time, on loopback only —
 * about 70 % feed reads, 20 % votes, 10 % uploads — against the real server process. Fails unless:
 * no 5xx except 503 busy, no lost vote (every answered vote is in the counters), RSS growth < 10 % from
 * the warmed-up start to the end, and event-loop lag p99 < 100 ms in every scrape window.
 *
 *   npm run bench:load -- --seconds 60 --db sqlite|postgres
 *
 * Open loop: requests arrive at a fixed rate in that mix, as real clients do; the rate is first raised
 * step by step until the server stops keeping up, and the run holds the last rate it kept up with.
 */
import { figure, atMost, type Recorder } from './support/report.ts';
import { isMain, runAlone } from './support/cli.ts';
import { createBenchDatabase, postgresUnavailable, type DbKind } from './support/bench-database.ts';
import { seedUploads, seedUsers, type SeededUser } from './support/seed.ts';
import { rng } from './support/seed.ts';
import { appEnv, startServer } from './support/server-process.ts';
import { LoadClient, type HttpRequest } from './support/http-load.ts';
import { mintJwt, uploadRequest } from './support/app-api.ts';
import { jpegs, type BenchImage } from './support/images.ts';
import { quantile } from './support/stats.ts';
import { join } from 'node:path';

const SORTS = ['new', 'new', 'new', 'top', 'hot', 'best'];

interface Mix {
  /** The i-th request of the mix (about 70 % feed reads, 20 % votes, 10 % uploads). */
  next(): { kind: 'feed' | 'vote' | 'upload'; req: HttpRequest; pair?: string };
  /** Records an answer (vote bookkeeping). */
  answered(kind: string, pair: string | undefined, status: number, body: string | null): void;
}

interface StepResult {
  offered: number;
  completed: number;
  perSecond: Record<'feed' | 'vote' | 'upload', number>;
  latency: Record<'feed' | 'vote' | 'upload', number[]>;
  statuses: Record<string, number>;
  overloaded: boolean;
}

/**
 * Open loop: requests are issued at `rate` per second whatever the answers do (as real clients arrive),
 * at most `maxInFlight` at once — past that the offered load is beyond what the server absorbs.
 */
async function openLoop(
  client: LoadClient,
  mix: Mix,
  rate: number,
  durationMs: number,
  maxInFlight: number,
): Promise<StepResult> {
  const latency = { feed: [] as number[], vote: [] as number[], upload: [] as number[] };
  const statuses: Record<string, number> = {};
  const pending = new Set<Promise<void>>();
  let offered = 0;
  let overloaded = false;
  const t0 = performance.now();
  while (performance.now() - t0 < durationMs) {
    const due = Math.floor(((performance.now() - t0) / 1000) * rate) + 1;
    while (offered < due) {
      if (pending.size >= maxInFlight) {
        overloaded = true;
        break;
      }
      offered++;
      const { kind, req, pair } = mix.next();
      const sent = performance.now();
      const p: Promise<void> = client.send(req).then(
        (res) => {
          latency[kind].push(performance.now() - sent);
          statuses[`${kind} ${res.status}`] = (statuses[`${kind} ${res.status}`] ?? 0) + 1;
          mix.answered(kind, pair, res.status, res.body);
        },
        () => {
          statuses[`${kind} network-error`] = (statuses[`${kind} network-error`] ?? 0) + 1;
          mix.answered(kind, pair, 0, null);
        },
      );
      pending.add(p);
      void p.finally(() => pending.delete(p));
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  await Promise.all(pending);
  const secs = (performance.now() - t0) / 1000;
  return {
    offered,
    completed: latency.feed.length + latency.vote.length + latency.upload.length,
    perSecond: {
      feed: latency.feed.length / secs,
      vote: latency.vote.length / secs,
      upload: latency.upload.length / secs,
    },
    latency,
    statuses,
    overloaded,
  };
}

export async function loadBench(rec: Recorder, opts: { seconds: number; db: DbKind }): Promise<void> {
  if (opts.db === 'postgres') {
    const why = await postgresUnavailable();
    if (why) {
      rec.note(`skipped on PostgreSQL: ${why}`);
      return;
    }
  }
  const base = await createBenchDatabase(opts.db);
  const r = rng(42);
  let users: SeededUser[];
  let uploads: string[];
  {
    const db = await base.open();
    users = await seedUsers(db, 300);
    uploads = await seedUploads(db, { count: 2000, users, r, votes: 5000, tags: 20 });
    await db.close();
  }
  const tokens = users.map((u) => mintJwt(u.id));
  // Distinct photos, so uploads are real pipeline work; each send gets unique bytes on top.
  const images: BenchImage[] = await jpegs(1, 32, 9000);
  // Near-duplicate matching off: the 32 photos repeat (with unique bytes), and every upload should be stored.
  const server = await startServer({
    env: appEnv({ ...base.env, HUMAN_POLICY: 'flag', NEAR_DUPLICATE_DISTANCE: '-1' }),
    logFile: join(base.dataDir, 'server.log'),
  });
  const client = new LoadClient(server.url, 64);
  const scrape = new LoadClient(server.url, 1);

  // The answered vote of each (user, upload). A pair never has two votes in flight, so its last answer is
  // its final state; a pair whose last vote got no 200 answer is uncertain and left out of the check.
  const finalVote = new Map<string, number>();
  const inFlight = new Set<string>();
  let sent = 0;
  const mix: Mix = {
    next() {
      const roll = r();
      const user = Math.floor(r() * users.length);
      const upload = uploads[uploads.length - 1 - Math.floor(r() * 200)]!;
      const pair = `${user}:${upload}`;
      if (roll < 0.7 || (roll < 0.9 && inFlight.has(pair))) {
        return {
          kind: 'feed',
          req: {
            method: 'GET',
            path: `/api/uploads?page=${1 + Math.floor(r() * 5)}&sort=${SORTS[Math.floor(r() * SORTS.length)]}`,
          },
        };
      }
      if (roll < 0.9) {
        inFlight.add(pair);
        const vote = ['fucks', 'does_not_fuck', 'none'][Math.floor(r() * 3)];
        const req: HttpRequest = {
          method: 'POST',
          path: '/api/vote',
          headers: { authorization: `Bearer ${tokens[user]}`, 'content-type': 'application/json' },
          body: JSON.stringify({ uploadId: upload, vote }),
        };
        return { kind: 'vote', req, pair };
      }
      // Unique bytes (a JPEG comment), so no upload is a duplicate of another.
      const img = images[sent % images.length]!;
      const marker = Buffer.from(`pixvote-load-${sent++}`);
      const bytes = Buffer.concat([
        img.bytes.subarray(0, 2),
        Buffer.from([0xff, 0xfe, 0, marker.length + 2]),
        marker,
        img.bytes.subarray(2),
      ]);
      return { kind: 'upload', req: uploadRequest({ ...img, bytes }, tokens[user]!) };
    },
    answered(kind, pair, status, body) {
      if (kind !== 'vote' || !pair) return;
      inFlight.delete(pair);
      if (status === 200) {
        const v = (JSON.parse(body!) as { vote: string | null }).vote;
        finalVote.set(pair, v === 'fucks' ? 1 : v === 'does_not_fuck' ? -1 : 0);
      } else {
        finalVote.delete(pair);
      }
    },
  };

  try {
    // Find the saturation point: raise the offered rate until the server stops keeping up
    // (answers fall behind, uploads are refused with 503, or upload p95 passes 5 s).
    let rate = 10;
    let saturation = rate;
    for (let step = 0; step < 12; step++) {
      const s = await openLoop(client, mix, rate, 6000, 400);
      const busy = Object.entries(s.statuses)
        .filter(([k]) => k.endsWith(' 503'))
        .reduce((n, [, c]) => n + c, 0);
      const keptUp =
        !s.overloaded && s.completed >= 0.9 * s.offered && busy === 0 && quantile(s.latency.upload, 0.95) < 5000;
      rec.note(
        `offered ${rate.toFixed(0)} req/s: ${(s.completed / 6).toFixed(1)} answered/s, ` +
          `upload p95 ${quantile(s.latency.upload, 0.95).toFixed(0)} ms, 503s ${busy}${keptUp ? '' : ' — saturated'}`,
      );
      if (!keptUp) break;
      saturation = rate;
      rate *= 1.5;
    }
    // Warm up at that rate (JIT, libvips and wasm heaps reach their steady size), then measure.
    await openLoop(client, mix, saturation, 15_000, 400);
    const rssStart = server.memory()?.rssMb ?? Number.NaN;
    await scrape.send({ method: 'GET', path: '/metrics' }); // starts a fresh lag window
    const lagWindows: number[] = [];
    const rss: number[] = [];
    const sampler = setInterval(() => {
      rss.push(server.memory()?.rssMb ?? Number.NaN);
      void scrape.send({ method: 'GET', path: '/metrics' }).then((m) => {
        const lag = /^nodejs_eventloop_lag_p99_seconds (\S+)$/m.exec(m.body ?? '');
        if (lag) lagWindows.push(Number(lag[1]) * 1000);
      });
    }, 5000);
    const run = await openLoop(client, mix, saturation, opts.seconds * 1000, 400);
    clearInterval(sampler);
    const rssEnd = server.memory()?.rssMb ?? Number.NaN;

    const lost = await countLostVotes(base, users, finalVote);
    const fiveXX = Object.entries(run.statuses).filter(([k]) => !/ (2\d\d|4\d\d|503)$/.test(k));
    const growth = ((rssEnd - rssStart) / rssStart) * 100;
    const lagP99 = lagWindows.length ? Math.max(...lagWindows) : Number.NaN;
    const bench = `load (${opts.db})`;
    const lat = (k: keyof StepResult['latency'], unit = 1) => {
      const at = (q: number) => (quantile(run.latency[k], q) / unit).toFixed(unit > 1 ? 2 : 1);
      return `p50 ${at(0.5)}, p95 ${at(0.95)} ${unit > 1 ? 's' : 'ms'}`;
    };
    rec.add(
      figure(bench, 'sustained rate (saturation)', 'req/s', run.completed / opts.seconds, {
        note: `offered ${saturation.toFixed(0)} req/s for ${opts.seconds} s`,
      }),
      figure(bench, 'feed reads', 'req/s', run.perSecond.feed, { note: lat('feed') }),
      figure(bench, 'votes', 'req/s', run.perSecond.vote, { note: lat('vote') }),
      figure(bench, 'uploads', 'img/s', run.perSecond.upload, { note: lat('upload', 1000) }),
      figure(bench, 'RSS growth over the run', '%', growth, {
        target: atMost(10),
        note:
          `${rssStart.toFixed(0)} → ${rssEnd.toFixed(0)} MB ` +
          `(${Math.min(...rss).toFixed(0)}–${Math.max(...rss).toFixed(0)} during)`,
      }),
      figure(bench, 'event-loop lag p99, worst 5 s window', 'ms', lagP99, { target: atMost(100) }),
      figure(bench, 'lost or miscounted votes', 'votes', lost, {
        target: atMost(0),
        note: `${finalVote.size} (user, upload) pairs checked, and every upload's counters against its vote rows`,
      }),
      figure(
        bench,
        '5xx other than 503 busy',
        'responses',
        fiveXX.reduce((n, [, c]) => n + c, 0),
        { target: atMost(0) },
      ),
    );
    rec.note(`statuses during the run: ${JSON.stringify(run.statuses)}`);
    const failures = [
      fiveXX.length ? `unexpected answers: ${JSON.stringify(Object.fromEntries(fiveXX))}` : '',
      lost ? `${lost} votes lost or miscounted` : '',
      growth >= 10 ? `RSS grew ${growth.toFixed(1)} %` : '',
      lagP99 >= 100 ? `event-loop lag p99 ${lagP99.toFixed(0)} ms` : '',
    ].filter(Boolean);
    if (failures.length) throw new Error(`load bench failed: ${failures.join('; ')}`);
  } finally {
    await client.close();
    await scrape.close();
    await server.stop();
    await base.dispose();
  }
}

/**
 * Votes whose answered final state is not what the database holds, plus uploads whose counters
 * disagree with their vote rows.
 */
async function countLostVotes(
  base: Awaited<ReturnType<typeof createBenchDatabase>>,
  users: SeededUser[],
  finalVote: Map<string, number>,
): Promise<number> {
  const db = await base.open();
  try {
    let lost = 0;
    const pairs = [...finalVote.entries()];
    for (let k = 0; k < pairs.length; k += 300) {
      const chunk = pairs.slice(k, k + 300).map(([pair, value]) => {
        const [u, upload] = pair.split(':');
        return { userId: users[Number(u)]!.id, upload: upload!, value };
      });
      const rows = await db
        .db()
        .selectFrom('votes')
        .select(['user_id', 'upload_id', 'value'])
        .where((eb) => eb.or(chunk.map((c) => eb.and([eb('user_id', '=', c.userId), eb('upload_id', '=', c.upload)]))))
        .execute();
      const stored = new Map(rows.map((x) => [`${x.user_id}:${x.upload_id}`, Number(x.value)]));
      for (const c of chunk) if ((stored.get(`${c.userId}:${c.upload}`) ?? 0) !== c.value) lost++;
    }
    const votesOf = (value: number) => (eb: any) =>
      eb
        .selectFrom('votes as v')
        .select((e: any) => e.fn.countAll().as('c'))
        .whereRef('v.upload_id', '=', 'u.id')
        .where('v.value', '=', value);
    const drift = await db
      .db()
      .selectFrom('uploads as u')
      .select((eb) => eb.fn.countAll().as('n'))
      .where((eb) => eb.or([eb('u.upvotes', '!=', votesOf(1)(eb)), eb('u.downvote_count', '!=', votesOf(-1)(eb))]))
      .executeTakeFirstOrThrow();
    return lost + Number(drift.n);
  } finally {
    await db.close();
  }
}

if (isMain(import.meta.url)) {
  await runAlone('load', { seconds: { type: 'string' }, db: { type: 'string' } }, (rec, v) =>
    loadBench(rec, { seconds: Number(v.seconds ?? 60), db: (v.db as DbKind | undefined) ?? 'sqlite' }),
  );
}
