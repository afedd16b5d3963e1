/**
 * Feeds and votes with 10k uploads and 100k votes seeded, through the app running as `npm start` runs it,
 * beside a bare Koa hello-world in its own process, in interleaved rounds:
 * - cached: GET /api/uploads page 1 again and again (the server-side cache answers);
 * - uncached: every read a page no one read since the last write (4 sorts × pages 1–250, shuffled; a vote
 *   between rounds starts a new cache generation);
 * - votes: POST /api/vote by 200 users on random uploads.
 * Then the uncached page build alone (FeedService over a cache that never hits: query, tags, JSON, ETag),
 * at 10k and 100k uploads. On SQLite, and on PostgreSQL + Redis.
 * And the cache's hit rate under mixed votes and reads (FeedService and VoteService over the in-process cache:
 * 10 reads of 4 sorts × pages 1–5 × 6 filters per vote), a vote bumping its scopes (now) or the global
 * generation (before), in the same run; `--hit-rate-only` runs only that.
 *
 *   npm run bench:feeds [-- --db sqlite,postgres --rounds 5 --seconds 2 --cached-only --hit-rate-only]
 */
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Database } from '../src/store/database.ts';
import {
  FeedService,
  type CacheOutcome,
  type FeedCache,
  type FeedQuery,
  type FeedSort,
} from '../src/domain/feeds/feed.service.ts';
import { VoteService } from '../src/domain/votes/vote.service.ts';
import type { Principal } from '../src/domain/users.ts';
import { VoteRepository } from '../src/store/repositories/vote.repository.ts';
import { memoryFeedCache } from '../src/store/cache/memory-feed-cache.ts';
import { FeedRepository } from '../src/store/repositories/feed.repository.ts';
import { UploadRepository } from '../src/store/repositories/upload.repository.ts';
import { multiIndexHashing, sqliteVecIndex } from '../src/store/similarity/similarity-index.ts';
import { createBenchDatabase, postgresUnavailable, type BenchDatabase, type DbKind } from './support/bench-database.ts';
import { mintJwt } from './support/app-api.ts';
import { isMain, runAlone } from './support/cli.ts';
import { LoadClient, expectStatuses, type HttpRequest, type LoadResult } from './support/http-load.ts';
import { figure, type Recorder } from './support/report.ts';
import { TARGETS } from './support/targets.ts';
import { rng, seedUploads, seedUsers, type SeededUser } from './support/seed.ts';
import { analyze, withIndexesDeferred } from './support/bulk-insert.ts';
import { HELLO_ENTRY, appEnv, startServer, type BenchServer } from './support/server-process.ts';
import { interleave, quantile, ratios } from './support/stats.ts';

export interface FeedsOptions {
  dbs: DbKind[];
  rounds: number;
  seconds: number;
  connections: number;
  /** Only cached feed vs hello-world (bench:ci). */
  cachedOnly?: boolean;
  /** Also build uncached pages directly at 100k uploads. */
  at100k: boolean;
  /** Only the hit rate under mixed votes and reads. */
  hitRateOnly?: boolean;
}

const SORTS: FeedSort[] = ['new', 'top', 'hot', 'best'];
const PAGES = 250;

export async function feedsBench(rec: Recorder, opts: FeedsOptions): Promise<void> {
  const hello = await startServer({ entry: HELLO_ENTRY, env: {}, logFile: '/dev/null', readyPath: '/' });
  try {
    for (const kind of opts.dbs) {
      const why = kind === 'postgres' ? await postgresUnavailable() : null;
      if (why) {
        rec.note(`feeds on PostgreSQL skipped: ${why}`);
        continue;
      }
      const bdb = await createBenchDatabase(kind);
      try {
        await feedsOn(rec, bdb, hello, opts);
      } finally {
        await bdb.dispose();
      }
    }
  } finally {
    await hello.stop();
  }
}

async function feedsOn(rec: Recorder, bdb: BenchDatabase, hello: BenchServer, opts: FeedsOptions): Promise<void> {
  const where = bdb.kind === 'sqlite' ? 'SQLite, in-process cache' : 'PostgreSQL + Redis';
  let db = await bdb.open();
  const r = rng(7);
  const users = await seedUsers(db, 1000);
  const uploads = await seedUploads(db, { count: 10_000, users, r, votes: 100_000, tags: 50 });
  if (bdb.kind === 'postgres') await analyze(db);
  if (opts.hitRateOnly) {
    try {
      await mixedHitRate(rec, db, users, uploads);
    } finally {
      await db.close();
    }
    return;
  }
  await db.close();

  const app = await startServer({
    env: appEnv({ ...bdb.env, WORKERS: '1', HUMAN_POLICY: 'off' }),
    logFile: path.join(bdb.dataDir, 'server.log'),
  });
  const appClient = new LoadClient(app.url, opts.connections);
  const helloClient = new LoadClient(hello.url, opts.connections);
  try {
    const ms = opts.seconds * 1000;
    const cpuPerRequest: Record<string, number[]> = {};
    const load = async (
      name: string,
      server: BenchServer,
      client: LoadClient,
      next: (i: number) => HttpRequest | null,
      expect = [200],
    ) => {
      const cpu = server.cpuMs();
      const res = await client.run({ next, durationMs: ms });
      expectStatuses(res, expect, `${name} (${where})`);
      (cpuPerRequest[name] ??= []).push(((server.cpuMs() - cpu) * 1000) / res.completed);
      return res;
    };
    const voter = votes(users, uploads, r);
    const latency: Record<string, number[]> = {};
    const timed = (name: string, run: () => Promise<LoadResult>) => async () => {
      const res = await run();
      (latency[name] ??= []).push(res.p50);
      return res.perSecond;
    };
    const hit: HttpRequest = { method: 'GET', path: '/api/uploads?page=1&limit=12' };
    const pageBody = (await appClient.send(hit)).body;
    const pageBytes = Buffer.byteLength(pageBody);
    const gzipBytes = gzipSync(pageBody, { level: 6 }).length;
    const subjects: Record<string, () => Promise<number>> = {
      hello: timed('hello', () => load('hello-world', hello, helloClient, () => ({ method: 'GET', path: '/' }))),
      helloPage: timed('helloPage', () =>
        load('hello-world, page-sized body', hello, helloClient, () => ({
          method: 'GET',
          path: `/?bytes=${pageBytes}`,
        })),
      ),
      cached: timed('cached', () => load('cached feed', app, appClient, () => hit)),
      // What browsers, undici and python-requests send: the page's gzip form, made once per page.
      cachedGzip: timed('cachedGzip', () =>
        load('cached feed, gzip', app, appClient, () => ({
          ...hit,
          headers: { 'accept-encoding': 'gzip, deflate, br' },
        })),
      ),
    };
    if (!opts.cachedOnly) {
      subjects.uncached = timed('uncached', async () => {
        await appClient.send(voter(0)); // a write: every cached page is stale from here on
        const keys = shuffled(
          SORTS.flatMap((sort) =>
            Array.from({ length: PAGES }, (_, p) => `/api/uploads?sort=${sort}&page=${p + 1}&limit=12`),
          ),
          r,
        );
        return load('uncached feed', app, appClient, (i) => (keys[i] ? { method: 'GET', path: keys[i] } : null));
      });
      subjects.votes = timed('votes', () => load('votes', app, appClient, voter));
    }
    await interleave(1, subjects); // warm-up
    for (const k of Object.keys(cpuPerRequest)) cpuPerRequest[k]!.length = 0;
    for (const k of Object.keys(latency)) latency[k]!.length = 0;
    const s = await interleave(opts.rounds, subjects);
    const cpuNote = (name: string) => `server CPU ${quantile(cpuPerRequest[name]!, 0.5).toFixed(0)} µs/request`;
    rec.add(
      figure('feeds', `Koa hello-world`, 'requests/s', s.hello!, {
        note: `${opts.connections} connections; ${cpuNote('hello-world')}`,
      }),
      figure('feeds', `${where}: cached feed page`, 'requests/s', s.cached!, { note: cpuNote('cached feed') }),
      figure('feeds', `${where}: cached feed p50`, 'ms', latency.cached!),
      figure('feeds', `${where}: cached feed ÷ hello-world`, '×', ratios(s.cached!, s.hello!), {
        target: TARGETS.cachedFeedVsHello,
      }),
      figure(
        'feeds',
        `${where}: cached feed ÷ hello-world, server CPU per request`,
        '×',
        ratios(cpuPerRequest['hello-world']!, cpuPerRequest['cached feed']!),
        {
          note: 'capacity ratio if the server were the only bottleneck',
        },
      ),
      figure('feeds', `${where}: cached feed, client takes gzip, ÷ hello-world`, '×', ratios(s.cachedGzip!, s.hello!), {
        note:
          `${cpuNote('cached feed, gzip')}; the same page gzipped (${gzipBytes} bytes), ` +
          'Accept-Encoding: gzip, deflate, br',
      }),
      figure(
        'feeds',
        `${where}: cached feed ÷ Koa serving the same ${pageBytes} bytes`,
        '×',
        ratios(s.cached!, s.helloPage!),
        {
          note: cpuNote('hello-world, page-sized body'),
        },
      ),
    );
    if (s.uncached && s.votes) {
      rec.add(
        figure('feeds', `${where}: uncached feed pages (10k uploads)`, 'requests/s', s.uncached, {
          note: `every read a miss, pages 1–${PAGES}; ${cpuNote('uncached feed')}`,
        }),
        figure('feeds', `${where}: uncached feed p50 (10k uploads)`, 'ms', latency.uncached!),
        figure('feeds', `${where}: votes`, 'votes/s', s.votes, {
          note: `200 voters, random uploads; ${cpuNote('votes')}`,
        }),
        figure('feeds', `${where}: vote p50`, 'ms', latency.votes!),
      );
    }
  } finally {
    await appClient.close();
    await helloClient.close();
    await app.stop();
  }
  if (opts.cachedOnly) return;

  db = await bdb.open();
  try {
    await mixedHitRate(rec, db, users, uploads);
    await pageBuild(rec, db, where, '10k');
    if (opts.at100k) {
      await withIndexesDeferred(db, ['uploads'], () =>
        seedUploads(db, { count: 90_000, users, r, newest: new Date(Date.now() - 10_000 * 60_000) }),
      );
      if (bdb.kind === 'postgres') await analyze(db);
      await pageBuild(rec, db, where, '100k');
    }
  } finally {
    await db.close();
  }
}

/** A vote request by one of 200 users on a random upload: up, down or retract. */
function votes(users: readonly SeededUser[], uploads: readonly string[], r: () => number): (i: number) => HttpRequest {
  const tokens = users.slice(0, 200).map((u) => mintJwt(u.id));
  const values = ['fucks', 'does_not_fuck', 'none'];
  return (i) => ({
    method: 'POST',
    path: '/api/vote',
    headers: { authorization: `Bearer ${tokens[i % tokens.length]}`, 'content-type': 'application/json' },
    body: JSON.stringify({ uploadId: uploads[Math.floor(r() * uploads.length)], vote: values[Math.floor(r() * 3)] }),
  });
}

const neverHits: FeedCache = {
  read: async () => ({ hit: null, generation: '0', seq: 0, recount: [] }),
  write: async () => {},
  invalidate: async () => {},
  voted: async () => {},
};

/** Page 1 of each sort built from the database (query, tags, JSON, ETag) with no cache, one at a time. */
async function pageBuild(rec: Recorder, db: Database, where: string, size: string): Promise<void> {
  const index = db.dialect.name === 'sqlite' ? sqliteVecIndex(db.dialect) : multiIndexHashing(db.dialect);
  const feeds = new FeedService({
    store: new FeedRepository(db, new UploadRepository(db, index)),
    cache: neverHits,
    me: async () => {
      throw new Error('unused');
    },
  });
  for (const sort of SORTS) {
    const p50: number[] = [];
    const p95: number[] = [];
    for (let round = 0; round < 3; round++) {
      const ms: number[] = [];
      for (let i = 0; i < 60; i++) {
        const t = performance.now();
        await feeds.list({ page: 1, limit: 12, sort });
        ms.push(performance.now() - t);
      }
      p50.push(quantile(ms.slice(10), 0.5));
      p95.push(quantile(ms.slice(10), 0.95));
    }
    rec.add(
      figure('feeds', `${where}: page 1 of sort=${sort} built uncached, ${size} uploads, p50`, 'ms', p50, {
        target: TARGETS.uncachedPageMs,
        note: `p95 ${quantile(p95, 0.5).toFixed(1)} ms`,
      }),
    );
  }
}

/**
 * The share of cacheable reads answered from the cache (a hit, or a hit with counts read again) under votes
 * and reads mixed 1:10, a vote bumping only its scopes, or (as before) the global generation.
 */
async function mixedHitRate(
  rec: Recorder,
  db: Database,
  users: readonly SeededUser[],
  uploads: readonly string[],
): Promise<void> {
  const index = db.dialect.name === 'sqlite' ? sqliteVecIndex(db.dialect) : multiIndexHashing(db.dialect);
  const store = new FeedRepository(db, new UploadRepository(db, index));
  const tags = (await db.read().selectFrom('tags').select('slug').orderBy('slug').limit(3).execute()).map(
    (t) => t.slug,
  );
  const filters: Array<{ tag?: string; type?: 'image' | 'link' }> = [{}, { type: 'image' }, { type: 'link' }];
  for (const tag of tags) filters.push({ tag });
  const reads: FeedQuery[] = [];
  for (const sort of SORTS)
    for (let page = 1; page <= 5; page++) for (const f of filters) reads.push({ page, limit: 12, sort, ...f });
  for (const mode of ['scoped', 'global'] as const) {
    const outcomes: Record<CacheOutcome, number> = { hit: 0, recount: 0, miss: 0 };
    const feeds = new FeedService({
      store,
      cache: memoryFeedCache(),
      me: async () => {
        throw new Error('unused');
      },
      onCache: (o) => void outcomes[o]++,
    });
    const votes = new VoteService({
      votes: new VoteRepository(db),
      clock: { now: () => new Date() },
      ...(mode === 'scoped' ? { onVoted: (u) => feeds.voted(u) } : { onChanged: () => feeds.invalidate() }),
    });
    // Each mode its own votes: the same ones again would be no-ops (a vote already cast), which change nothing.
    const r = rng(mode === 'scoped' ? 11 : 12);
    const values = ['fucks', 'does_not_fuck', 'none'] as const;
    const started = performance.now();
    const N = 4000;
    for (let i = 0; i < N; i++) {
      if (i % 11 === 10) {
        const u = users[Math.floor(r() * users.length)]!;
        const principal = {
          userId: u.id,
          username: u.username,
          isAdmin: false,
          accountCreatedAt: new Date(0),
          method: 'jwt',
          viaCookie: false,
        } as Principal;
        const upload = uploads[Math.floor(r() * uploads.length)]!;
        await votes.vote(principal, upload, values[Math.floor(r() * 3)]!);
      } else {
        // Skewed to the front of the list (sort=new and low pages read most), as readers do.
        const q = reads[Math.floor(r() ** 2 * reads.length)]!;
        await feeds.list(q);
      }
    }
    const seconds = (performance.now() - started) / 1000;
    const total = outcomes.hit + outcomes.recount + outcomes.miss;
    const rate = (100 * (outcomes.hit + outcomes.recount)) / total;
    const dbName = db.dialect.name === 'sqlite' ? 'SQLite' : 'PostgreSQL';
    const invalidating = mode === 'scoped' ? 'its scopes' : 'everything (before)';
    rec.add(
      figure(
        'feeds',
        `${dbName}, in-process cache: cache hit rate, votes:reads 1:10, a vote invalidating ${invalidating}`,
        '%',
        [rate],
        {
          note:
            `${outcomes.hit} hits, ${outcomes.recount} recounted, ${outcomes.miss} built of ${total} reads; ` +
            `${(N / seconds).toFixed(0)} ops/s`,
        },
      ),
    );
  }
}

function shuffled<T>(xs: T[], r: () => number): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

if (isMain(import.meta.url)) {
  await runAlone(
    'feeds',
    {
      db: { type: 'string', default: 'sqlite,postgres' },
      rounds: { type: 'string', default: '5' },
      seconds: { type: 'string', default: '2' },
      connections: { type: 'string', default: '8' },
      'cached-only': { type: 'boolean' },
      'hit-rate-only': { type: 'boolean' },
    },
    (rec, v) =>
      feedsBench(rec, {
        dbs: String(v.db).split(',') as DbKind[],
        rounds: Number(v.rounds),
        seconds: Number(v.seconds),
        connections: Number(v.connections),
        cachedOnly: Boolean(v['cached-only']),
        at100k: !v['cached-only'],
        hitRateOnly: Boolean(v['hit-rate-only']),
      }),
  );
}
