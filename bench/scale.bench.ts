/**
 * Growth (issue 29): every listing read costs the same at a large size as at a small one. Seeds `--small` uploads
 * (5 % private, tags with one popular tag on ~15 % of uploads, votes), measures each read, grows the same database
 * to `--large` and measures again; reports p50 and p99 at each size and the ratio large ÷ small (goal ≤ 1.5), plus
 * the database's size per million uploads. Reads go through the feed service with no cache (what a request for a
 * page nobody asked for yet costs), not through HTTP: the listing's database work is what grows.
 *
 * Reads: page 1 of each sort; the popular tag's page 1 (new, top); the last number page (10 000 rows in, new and
 * top); a page by cursor half-way through everything (new, top, best) and half-way through the popular tag (top);
 * a heavy user's own uploads by cursor, half-way through; the near-duplicate check of an upload (a new hash, and one
 * 2 bits from a stored one); the heavy user's listing in every order, their profile's counters, and tag search by
 * prefix (many matches, a rare one, none).
 *
 * At the large size, through HTTP: /healthz p50/p99 while 16 clients ask back to back for the costliest uncached
 * listings (goal < 50 ms), its p99 ÷ the same while they ask for a cached page (bench:ci's guard), and how many of
 * those answers were not 200 (`--no-http` skips it; `--health-rounds` sets how many rounds of both).
 *
 *   npm run bench:scale [-- --db sqlite,postgres --small 12k --large 1m --probes 1000 --health-rounds 3 --no-http]
 *   npm run bench:scale -- --shape wide   (a heavy user with 1 %, 50 000 tags, a tag on ~15 %: SHAPES)
 *
 * A p99 needs its probes: of 1000 (the default) it is the tenth slowest; of 300 it was the third slowest, and one
 * descheduled moment still moved a sub-millisecond read's ratio past 1.5 in some runs; of 30–40 it was the slowest,
 * and one hiccup of the machine (a GC, a descheduled process) swung a read's ratio from 0.2 to 3.7 (bench/README.md,
 * Growth). 1000 probes of every read at both sizes take one to two minutes.
 *
 * 10M PostgreSQL uploads take about an hour to seed on 2 cores: `--keep` leaves the large PostgreSQL database in
 * place (its URL in the notes), and `--large-url URL` measures such a database again instead of seeding one.
 */
import { sql } from 'kysely';
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { Cursors, listingId } from '../src/domain/feeds/cursor.ts';

/** The cursors the bench makes up and the service it times check (one key). */
const cursors = new Cursors('bench:scale cursor key');
import { FeedService, type FeedCache, type FeedQuery } from '../src/domain/feeds/feed.service.ts';
import type { Principal } from '../src/domain/users.ts';
import type { Database } from '../src/store/database.ts';
import { FeedRepository, feedKeysQuery } from '../src/store/repositories/feed.repository.ts';
import { UploadRepository } from '../src/store/repositories/upload.repository.ts';
import { TagRepository } from '../src/store/repositories/tag.repository.ts';
import { multiIndexHashing, similarityIndexFor } from '../src/store/similarity/similarity-index.ts';
import {
  createBenchDatabase,
  existingBenchDatabase,
  postgresUnavailable,
  type DbKind,
} from './support/bench-database.ts';
import { analyze, insertRows, withIndexesDeferred } from './support/bulk-insert.ts';
import { isMain, numbers, runAlone, UsageError } from './support/cli.ts';
import { figure, atMost, type Recorder, type Target } from './support/report.ts';
import { flipBits, randomHash, rng, seedUploads, seedUsers, someStoredHash, type SeededUser } from './support/seed.ts';
import { LoadClient } from './support/http-load.ts';
import { appEnv, startServer } from './support/server-process.ts';
import { timeSequentially, whileLoaded } from './support/under-load.ts';
import { quantile } from './support/stats.ts';
import { TARGETS } from './support/targets.ts';

export interface ScaleOptions {
  dbs: DbKind[];
  small: number;
  large: number;
  probes: number;
  /** At the large size, through HTTP: /healthz while 16 clients ask for the costliest uncached listings. */
  http?: boolean;
  /** Rounds of that measure (each: /healthz under cached pages, then under deep listings); default 3. */
  healthRounds?: number;
  /** The ratios' target: `ci` in bench:ci. */
  target?: Target;
  /** PostgreSQL: the large database is this one, seeded earlier with `keep` (its size is its uploads' count). */
  largeUrl?: string;
  /** PostgreSQL: leave the large database in place, its URL printed, for `largeUrl` (10M take an hour to seed). */
  keep?: boolean;
  /** The data's shape (SHAPES): `ours` by default. */
  shape?: Shape;
}

/**
 * Two shapes of data, so that a read that grows cannot hide in the one shape the bench makes (issue 46): `ours`, a
 * heavy user with a tenth of the uploads and 5 000 tags; `wide`, as an independent measurement made them, a heavy
 * user with 1 % of the uploads, 50 000 tags, and one tag on ~15 % of the uploads (a Zipf-like pick, skew 4.7).
 */
export const SHAPES = {
  ours: { tags: 5000, tagSkew: 4, heavyWeight: 111 },
  wide: { tags: 50_000, tagSkew: 4.7, heavyWeight: 10 },
} as const;
export type Shape = keyof typeof SHAPES;

const CHUNK = 50_000;
const LIMIT = 12;
/** The deepest number page measured: 10 000 rows in, the deepest that API.md's ceiling lets a page go. */
const DEEPEST_PAGE = Math.floor(10_000 / LIMIT) + 1;
/** A deep page of the popular tag: 1 392 rows in. */
const TAG_PAGE = Math.floor(1392 / LIMIT) + 1;

const neverHits: FeedCache = {
  read: async () => ({ hit: null, generation: '0', seq: 0, recount: [] }),
  write: async () => {},
  invalidate: async () => {},
  voted: async () => {},
};

interface Read {
  name: string;
  run(): Promise<unknown>;
}

/** A cursor that starts right after the row `depth` rows into the listing (read once, not timed). */
async function cursorAt(db: Database, q: FeedQuery, depth: number): Promise<string | undefined> {
  // One OFFSET read of the keys (not timed): how the position is found does not matter, only what it costs after.
  const tag = q.tag
    ? await db.db().selectFrom('tags').select('id').where('slug', '=', q.tag).executeTakeFirstOrThrow()
    : null;
  const { rows } = await feedKeysQuery(db.dialect, q, { offset: depth }, 1, tag?.id ?? null).execute(db.db());
  const row = rows[0];
  if (!row) return undefined;
  const pos = {
    key: q.sort === 'new' ? null : Number(row.rank),
    createdAt: db.dialect.readDate(row.created_at),
    id: row.id,
  };
  const listing = listingId(['feed', q.sort, q.limit, q.type, q.user, q.tag]);
  return cursors.encode(listing, { page: 2, after: { since: new Date(), pos } });
}

async function reads(db: Database, size: number, popular: string, heavy: Principal): Promise<Read[]> {
  const store = new FeedRepository(db, new UploadRepository(db, similarityIndexFor(db.dialect, 'multi-index-hashing')));
  const tags = new TagRepository(db);
  const feeds = new FeedService({
    store,
    cache: neverHits,
    me: async () => {
      throw new Error('unused');
    },
    cursors,
  });
  const q = (x: Partial<FeedQuery>): FeedQuery => ({ page: 1, limit: LIMIT, sort: 'new', ...x });
  const out: Read[] = [];
  for (const sort of ['new', 'top', 'hot', 'best'] as const)
    out.push({ name: `page 1, ${sort}`, run: () => feeds.list(q({ sort })) });
  for (const sort of ['new', 'top'] as const) {
    out.push({ name: `popular tag, page 1, ${sort}`, run: () => feeds.list(q({ sort, tag: popular })) });
    const last = DEEPEST_PAGE;
    // A yardstick must be the same read: at a size whose listed uploads end before this page it would be an empty
    // page (no rows to hydrate), and the ratio would measure that, not growth (MIN_SMALL keeps it from happening).
    const shown = (JSON.parse((await feeds.list(q({ sort, page: last }))).body.toString()) as { uploads: unknown[] })
      .uploads.length;
    if (shown < LIMIT)
      throw new Error(
        `page ${last} shows ${shown} of ${LIMIT} uploads at ${size}: --small must list over 10 000 uploads (12k does)`,
      );
    out.push({ name: `page ${last} (10 000 rows in), ${sort}`, run: () => feeds.list(q({ sort, page: last })) });
  }
  // The popular tag by page number, 1 392 rows in (page 117; an independent measurement's depth, issue 46): each
  // skipped link once cost a look-up of its upload row; the links say whether listings show it now (m025).
  for (const sort of ['new', 'top'] as const)
    out.push({
      name: `popular tag, page ${TAG_PAGE} (1 392 rows in), ${sort}`,
      run: () => feeds.list(q({ sort, tag: popular, page: TAG_PAGE })),
    });
  for (const sort of ['new', 'top', 'best'] as const) {
    const cursor = await cursorAt(db, q({ sort }), Math.floor(size / 2));
    out.push({ name: `by cursor, half-way, ${sort}`, run: () => feeds.list(q({ sort, cursor })) });
  }
  const tagCursor = await cursorAt(db, q({ sort: 'top', tag: popular }), Math.floor(size * 0.07));
  out.push({
    name: 'popular tag by cursor, half-way, top',
    run: () => feeds.list(q({ sort: 'top', tag: popular, cursor: tagCursor })),
  });
  // The heavy user's upload half-way through their list (read once, not timed).
  const { n } = await db
    .db()
    .selectFrom('uploads')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('user_id', '=', heavy.userId)
    .executeTakeFirstOrThrow();
  const middle = await db
    .db()
    .selectFrom('uploads')
    .select(['id', 'created_at'])
    .where('user_id', '=', heavy.userId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .offset(Math.floor(Number(n) / 2))
    .limit(1)
    .executeTakeFirstOrThrow();
  const mid = { key: null, createdAt: db.dialect.readDate(middle.created_at), id: middle.id };
  const ownCursor = cursors.encode(listingId(['own', heavy.userId, LIMIT]), {
    page: 2,
    after: { since: new Date(), pos: mid },
  });
  out.push({ name: 'heavy user, own uploads by cursor', run: () => feeds.ownUploads(heavy, LIMIT, ownCursor) });
  // Every listing parameter the API has (issue 46): the heavy user's listing in every order, their profile's
  // counters, tag search by prefix with many matches, a rare one and none.
  for (const sort of ['new', 'top', 'hot', 'best'] as const)
    out.push({
      name: `heavy user's listing, page 1, ${sort}`,
      run: () => feeds.list(q({ sort, user: heavy.username })),
    });
  out.push({ name: "heavy user's profile counters", run: () => store.stats(heavy.userId) });
  // A rare match is one listed tag at either size: the least used of the longest names (no other tag's name extends
  // it). A fixed prefix ('tag 4999') matched no listed tag at 12k and eleven at 1M, so its ratio measured the
  // answer's size, not the search's growth.
  const rare = await db
    .db()
    .selectFrom('tags')
    .select('name')
    .where('upload_count', '>', 0)
    .orderBy(sql`length(name)`, 'desc')
    .orderBy('upload_count')
    .orderBy('name')
    .limit(1)
    .executeTakeFirstOrThrow();
  for (const [kind, prefix] of [
    ['many matches', 'tag 1'],
    ['a rare match (one listed tag)', rare.name],
    ['no match', 'zzz'],
  ] as const)
    out.push({ name: `tag search by prefix, ${kind}`, run: () => tags.suggest(prefix, null, LIMIT + 1) });
  // The near-duplicate check an upload makes (distance ≤ 4, as an uploader who owns none of the matches): a new
  // picture's hash (no match, the common case), and one 2 bits from a stored hash.
  const mih = multiIndexHashing(db.dialect, db.prepared);
  const viewer = { userId: randomUUID(), isAdmin: false };
  const r = rng(size);
  const fresh = randomHash(r);
  const edited = flipBits((await someStoredHash(db))!, 2, r);
  out.push({ name: 'near-duplicate check, a new hash', run: () => mih.findNear(db.db(), fresh, 4, viewer) });
  out.push({
    name: 'near-duplicate check, 2 bits from a stored one',
    run: () => mih.findNear(db.db(), edited, 4, viewer),
  });
  return out;
}

/** The README's growth table's groups of reads, by name (`reads`); the first that matches, the last matching all. */
const READ_GROUPS: ReadonlyArray<readonly [string, (name: string) => boolean]> = [
  ['popular tag by page number', (n) => n.startsWith('popular tag') && n.includes('rows in')],
  ["heavy user's listing, page 1", (n) => n.startsWith("heavy user's listing")],
  ['profile counters', (n) => n.includes('profile')],
  ['tag search by prefix', (n) => n.startsWith('tag search')],
  ['near-duplicate check', (n) => n.startsWith('near-duplicate')],
  ['every other listing read', () => true],
];

/**
 * The time (ms) of each read of each list, over `probes` rounds after one warm-up round: in every round each read
 * runs once per list, one list right after the other, so every list meets the same moment's load; which list goes
 * first turns each round, so that neither always runs right after the other's read (and whatever that leaves
 * running: its reader thread, its garbage).
 */
async function measure(lists: Read[][], probes: number): Promise<Array<Map<string, number[]>>> {
  const times = lists.map((list) => new Map(list.map((r) => [r.name, [] as number[]])));
  for (const list of lists) for (const r of list) await r.run();
  for (let i = 0; i < probes; i++) {
    const order = [...lists.entries()];
    if (i % 2) order.reverse();
    for (let k = 0; k < lists[0]!.length; k++) {
      for (const [j, list] of order) {
        const read = list[k]!;
        const t = performance.now();
        await read.run();
        times[j]!.get(read.name)!.push(performance.now() - t);
      }
    }
  }
  return times;
}

/** 1000 users (one a heavy uploader), tags (Zipf-like), `size` uploads with as many votes, in `shape` (SHAPES). */
async function seedShape(db: Database, size: number, shape: Shape): Promise<{ heavy: SeededUser; seconds: number }> {
  const started = performance.now();
  const r = rng(29);
  const { tags, tagSkew, heavyWeight } = SHAPES[shape];
  const users: SeededUser[] = await seedUsers(db, 1000);
  const heavy = users[0]!;
  const weighted = [...users, ...Array.from({ length: heavyWeight }, () => heavy)];
  const tagIds = Array.from({ length: tags }, () => randomUUID());
  await insertRows(
    db,
    'tags',
    tagIds.map((id, t) => ({
      id,
      name: `tag ${t}`,
      slug: `tag-${t}`,
      upload_count: 0,
      created_at: db.dialect.date(new Date(0)),
    })),
  );
  const load = async () => {
    for (let seeded = 0; seeded < size; seeded += CHUNK) {
      const count = Math.min(CHUNK, size - seeded);
      await seedUploads(db, {
        count,
        users,
        owners: weighted,
        r,
        votes: count,
        tagIds,
        tagSkew,
        newest: new Date(Date.UTC(2026, 0, 1) + (seeded + count) * 60_000),
      });
      if (size >= 1e6 && (seeded / CHUNK) % 20 === 19) console.error(`seeded ${seeded + count} of ${size}`);
    }
  };
  // A large size: the indexes are built once at the end, by sorting, instead of grown row by row.
  await (size > 100_000 ? withIndexesDeferred(db, ['uploads', 'upload_tags', 'votes'], load) : load());
  // The tags' counts, as the service keeps them (the listed uploads carrying each): what tag search sorts by.
  await sql`update tags set upload_count = (select count(*) from upload_tags ut
    where ut.tag_id = tags.id and ut.listed = ${sql.raw(db.dialect.trueLit)})`.execute(db.db());
  await analyze(db);
  if (db.dialect.name === 'sqlite') await sql`pragma wal_checkpoint(truncate)`.execute(db.db());
  return { heavy, seconds: (performance.now() - started) / 1000 };
}

async function sizeOf(db: Database, dataDir: string): Promise<number> {
  if (db.dialect.name === 'postgres') {
    const r = await sql<{ n: string }>`select pg_database_size(current_database()) as n`.execute(db.db());
    return Number(r.rows[0]!.n);
  }
  await sql`pragma wal_checkpoint(truncate)`.execute(db.db());
  return statSync(join(dataDir, 'app.db')).size;
}

/** Each /healthz phase: this many probes, one after the other, 20 ms apart. */
const HEALTH_PROBES = 50;

/**
 * The app on the seeded database; 16 clients ask back to back for the costliest listings, each a page nobody asked
 * for yet (the last number pages of everything and of the popular tag, in every order, at changing limits: cache
 * misses); meanwhile /healthz is timed. Reports its p50 and p99 (goal < 50 ms), the event loop's longest stall
 * meanwhile (the app's own nodejs_eventloop_lag_max_seconds, reset by each /metrics scrape) and how many listing
 * answers were not 200 (goal none: no 503 on either database). The yardstick, in the same rounds on the same server:
 * /healthz with no other request (what the machine's load alone costs it). Their ratio (p99 under deep listings ÷
 * idle) is what bench:ci guards on SQLite: a read that holds the event loop again sends it far up, whatever the
 * machine's speed.
 * (Not a cached page as yardstick: 16 clients on a cached page keep the loop busier than 16 on deep pages whose reads
 * wait on reader threads.)
 */
async function healthUnderListings(
  rec: Recorder,
  where: string,
  env: Record<string, string>,
  dataDir: string,
  popular: string,
  rounds: number,
): Promise<void> {
  const readers =
    where === 'SQLite'
      ? `SQLITE_READERS=${process.env.SQLITE_READERS ?? '2'}`
      : `PG_READERS=${process.env.PG_READERS ?? '2'}`;
  const server = await startServer({
    env: appEnv({ ...env, HUMAN_POLICY: 'off', WORKERS: '1', LOG_LEVEL: 'warn' }),
    logFile: join(dataDir, 'server.log'),
  });
  const clients = new LoadClient(server.url, 16);
  const probe = new LoadClient(server.url, 1);
  const statuses = new Map<number, number>();
  const sorts = ['new', 'top', 'hot', 'best'];
  const deep = (round: number) => (lane: number, i: number) => {
    const limit = 10 + ((lane + i) % 40);
    const sort = sorts[(lane + i) % 4]!;
    // Near the deepest number page, a different one each round: misses the cache (2000 pages, LRU).
    const page = Math.floor(10_000 / limit) + 1 - ((i * 7 + lane + round * 13) % 25);
    const tag = lane % 2 ? '' : `&tag=${popular}`;
    return `/api/uploads?sort=${sort}${tag}&limit=${limit}&page=${page}`;
  };
  const times = { deep: [] as number[], idle: [] as number[] };
  // Listings answered per second in each deep phase: what a reader cap (PG_READERS, SQLITE_READERS) trades for it.
  const rates: number[] = [];
  let answered = 0;
  const stalls: number[] = [];
  const ratios: number[] = [];
  try {
    for (let round = 0; round < rounds; round++) {
      const p99 = { deep: 0, idle: 0 };
      for (const phase of ['idle', 'deep'] as const) {
        await loopStallMs(probe);
        const path = deep(round);
        const [counted, started] = [answered, performance.now()];
        const health = await whileLoaded(
          phase === 'idle' ? 0 : 16,
          async (lane, i) => {
            const status = await clients.status({ method: 'GET', path: path(lane, i) });
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
            answered++;
          },
          () =>
            timeSequentially('/healthz', () => probe.send({ method: 'GET', path: '/healthz' }), {
              count: HEALTH_PROBES,
              gapMs: 20,
              capMs: 30_000,
            }),
        );
        if (phase === 'deep') {
          rates.push(((answered - counted) / (performance.now() - started)) * 1000);
          stalls.push(await loopStallMs(probe));
        }
        times[phase].push(...health);
        p99[phase] = quantile(health, 0.99);
      }
      ratios.push(p99.deep / p99.idle);
    }
    const answers = [...statuses].map(([st, n]) => `${n} × ${st}`).join(', ');
    const setup = `${readers}; `;
    for (const [p, label] of [
      [0.5, 'p50'],
      [0.99, 'p99'],
    ] as const) {
      rec.add(
        figure('scale', `${where} /healthz ${label} while 16 clients list deep pages`, 'ms', quantile(times.deep, p), {
          target: atMost(50),
          note: `${setup}${rounds} rounds × ${HEALTH_PROBES} probes; idle ${quantile(times.idle, p).toFixed(1)} ms`,
        }),
      );
    }
    rec.add(
      figure('scale', `${where} longest event-loop stall while 16 clients list deep pages`, 'ms', stalls, {
        note: 'nodejs_eventloop_lag_max_seconds over each round',
      }),
    );
    rec.add(
      figure('scale', `${where} deep listings answered per second meanwhile`, '1/s', rates, {
        note: `${readers}; 16 clients back to back`,
      }),
    );
    rec.add(
      figure('scale', `${where} /healthz p99 under deep listings ÷ idle`, '×', ratios, {
        // PostgreSQL's loop is busy rather than held (bench/README.md, Growth): its ratio is reported, not guarded.
        target: where === 'SQLite' ? TARGETS.healthUnderListings : { ...TARGETS.healthUnderListings, kind: 'goal' },
        note: `per round: ${ratios.map((r) => r.toFixed(2)).join(', ')}`,
      }),
    );
    const failed = [...statuses].filter(([st]) => st !== 200).reduce((n, [, c]) => n + c, 0);
    rec.add(
      figure('scale', `${where} listing answers other than 200 under that load`, 'count', failed, {
        target: atMost(0),
        note: `listing answers: ${answers}`,
      }),
    );
  } finally {
    await clients.close();
    await probe.close();
    await server.stop();
  }
}

/** The app's longest event-loop delay since the previous scrape (prom-client resets it on each), ms. */
async function loopStallMs(client: LoadClient): Promise<number> {
  // Scrapes share one rendering for a second (API.md, Operations): wait that out so this one reads afresh.
  await new Promise((r) => setTimeout(r, 1100));
  const { body } = await client.send({ method: 'GET', path: '/metrics' });
  const max = /^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(body)?.[1];
  return max === undefined ? Number.NaN : Number(max) * 1000;
}

/** The seeded uploader of a tenth of everything (seedShape's first user), in a database seeded earlier. */
async function heavyOf(db: Database): Promise<SeededUser> {
  return db
    .db()
    .selectFrom('users')
    .select(['id', 'username'])
    .where('username', '=', 'bench_user_0')
    .executeTakeFirstOrThrow();
}

/** Bytes of a table with its indexes (and TOAST on PostgreSQL). */
async function tableBytes(db: Database, table: string): Promise<number> {
  if (db.dialect.name === 'postgres') {
    const r = await sql<{ n: string }>`select pg_total_relation_size(${table}) as n`.execute(db.db());
    return Number(r.rows[0]!.n);
  }
  const r = await sql<{ n: number }>`select sum(s.pgsize) as n from dbstat s join sqlite_master m on m.name = s.name
    where m.tbl_name = ${table}`.execute(db.db());
  return Number(r.rows[0]!.n);
}

async function rowCount(db: Database, table: 'uploads' | 'votes' | 'upload_tags'): Promise<number> {
  const r = await db
    .db()
    .selectFrom(table)
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/**
 * The smallest `--small`: the deepest number page measured (10 000 rows in) must be a full page at the small size
 * too, or its yardstick is an empty page; 5 % of the seeded uploads are private, so 11k lists ~10 450.
 */
const MIN_SMALL = 11_000;

export async function scaleBench(rec: Recorder, o: ScaleOptions): Promise<void> {
  if (!(o.small >= MIN_SMALL))
    throw new UsageError(`--small must be at least ${MIN_SMALL} (its page ${DEEPEST_PAGE} must be a full page)`);
  if (!o.largeUrl && !(o.large > o.small)) throw new UsageError('--large must be larger than --small');
  for (const kind of o.dbs) {
    if (kind === 'postgres') {
      const why = await postgresUnavailable();
      if (why) {
        rec.notes.push(`PostgreSQL skipped: ${why}`);
        continue;
      }
    }
    // Two databases of the same shape, one small and one large, measured in the same interleaved rounds: the ratio
    // holds on a machine whose load changes while the large one is seeded.
    const existing = kind === 'postgres' && o.largeUrl ? o.largeUrl : null;
    const benches = [
      await createBenchDatabase(kind),
      existing ? await existingBenchDatabase(existing) : await createBenchDatabase(kind),
    ] as const;
    const [smallDb, db] = [await benches[0].open(), await benches[1].open()];
    const bench = benches[1];
    let kept = false;
    try {
      const shaped = o.shape && o.shape !== 'ours' ? ` (${o.shape})` : '';
      const where = `${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'}${shaped}`;
      const principal = (u: SeededUser) => ({ userId: u.id, username: u.username, isAdmin: false }) as Principal;
      const shape = o.shape ?? 'ours';
      const few = await seedShape(smallDb, o.small, shape);
      const { heavy, seconds: seedSeconds } = existing
        ? { heavy: await heavyOf(db), seconds: 0 }
        : await seedShape(db, o.large, shape);
      const size = existing ? await rowCount(db, 'uploads') : o.large;
      if (kind === 'postgres' && o.keep && !existing) {
        kept = true;
        rec.notes.push(`PostgreSQL: the ${size} uploads are kept at ${bench.databaseUrl} (--large-url)`);
      }
      const [small, large] = (await measure(
        [
          await reads(smallDb, o.small, 'tag-0', principal(few.heavy)),
          await reads(db, size, 'tag-0', principal(heavy)),
        ],
        o.probes,
      )) as [Map<string, number[]>, Map<string, number[]>];
      const bytes = await sizeOf(db, bench.dataDir);
      if (o.http) await healthUnderListings(rec, where, bench.env, bench.dataDir, 'tag-0', o.healthRounds ?? 3);
      if (!existing) rec.notes.push(`${where}: seeded ${size} uploads in ${seedSeconds.toFixed(0)} s`);
      const worst = new Map<string, { p50: number; p99: number }>();
      for (const [name, at] of large) {
        const before = small.get(name)!;
        const group = READ_GROUPS.find(([, member]) => member(name))![0];
        for (const [p, label] of [
          [0.5, 'p50'],
          [0.99, 'p99'],
        ] as const) {
          const a = quantile(before, p);
          const b = quantile(at, p);
          const w = worst.get(group) ?? { p50: 0, p99: 0 };
          w[label] = Math.max(w[label], b / a);
          worst.set(group, w);
          rec.add(
            figure('scale', `${where} ${name}: ${label} at ${size} ÷ at ${o.small}`, '×', b / a, {
              // Number pages near the ceiling read up to 10 000 rows by design: reported, not guarded.
              ...(p === 0.5 && o.target && !name.includes('rows in') ? { target: o.target } : { target: atMost(1.5) }),
              note: `${a.toFixed(2)} → ${b.toFixed(2)} ms`,
            }),
          );
        }
      }
      // The README's growth table: the worst ratio of each group, p50 / p99 (printed, and in the JSON's notes).
      for (const [group, w] of worst) {
        const ratios = `${w.p50.toFixed(2)} / ${w.p99.toFixed(2)}`;
        const line = `${where}, ${group}: worst ${ratios} (p50 / p99, ${size} ÷ ${o.small})`;
        console.log(`  scale: ${line}`);
        rec.notes.push(line);
      }
      rec.add(figure('scale', `${where} database size per million uploads`, 'GB', ((bytes / size) * 1e6) / 1e9));
      // Per upload: its row, its tag links, their indexes; per vote: the vote row and its indexes.
      const uploads = await rowCount(db, 'uploads');
      const perUpload = ((await tableBytes(db, 'uploads')) + (await tableBytes(db, 'upload_tags'))) / uploads;
      const perVote = (await tableBytes(db, 'votes')) / (await rowCount(db, 'votes'));
      rec.add(figure('scale', `${where} bytes per upload (row, tag links, indexes)`, 'B', perUpload));
      rec.add(figure('scale', `${where} bytes per vote (row, indexes)`, 'B', perVote));
    } finally {
      await smallDb.close();
      await db.close();
      await benches[0].dispose();
      await (kept ? benches[1].keep() : benches[1].dispose());
    }
  }
}

function parseShape(s: string): Shape {
  if (s in SHAPES) return s as Shape;
  throw new UsageError(`--shape must be one of ${Object.keys(SHAPES).join(', ')}`);
}

if (isMain(import.meta.url)) {
  const options = {
    db: { type: 'string', default: 'sqlite,postgres' },
    small: { type: 'string', default: '12k' },
    large: { type: 'string', default: '1m' },
    probes: { type: 'string', default: '1000' },
    'health-rounds': { type: 'string', default: '3' },
    'no-http': { type: 'boolean' },
    'large-url': { type: 'string' },
    keep: { type: 'boolean' },
    shape: { type: 'string', default: 'ours' },
  } as const;
  await runAlone('scale', options, (rec, v) =>
    scaleBench(rec, {
      dbs: String(v.db).split(',') as DbKind[],
      small: numbers(String(v.small))[0]!,
      large: numbers(String(v.large))[0]!,
      probes: Number(v.probes),
      http: !v['no-http'],
      healthRounds: Number(v['health-rounds']),
      ...(v['large-url'] ? { largeUrl: String(v['large-url']) } : {}),
      keep: Boolean(v.keep),
      shape: parseShape(String(v.shape)),
    }),
  );
}
