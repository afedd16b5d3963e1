/**
 * The feed cache: in process memory by default, in Redis (shared by every process) when configured.
 * Invalidation bumps a generation number that is part of every key, so one write makes every cached
 * page stale everywhere at once; old generations simply expire.
 */
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import type { CachedJson, FeedCache } from '../../domain/feeds/feed.service.ts';

/**
 * The pages this process holds, all of one generation: moving to another generation drops them, and a
 * page built under an older one is never kept. Every cache below keeps its pages here.
 */
class LocalPages {
  generation: string;
  readonly #lru: LRUCache<string, CachedJson>;

  constructor(maxEntries: number, generation: string) {
    this.generation = generation;
    this.#lru = new LRUCache<string, CachedJson>({ max: maxEntries, ttlAutopurge: false });
  }

  get(key: string): CachedJson | null {
    return this.#lru.get(key) ?? null;
  }

  keep(key: string, generation: string, value: CachedJson, ttlMs: number): void {
    if (generation === this.generation) this.#lru.set(key, value, { ttl: ttlMs });
  }

  moveTo(generation: string): void {
    if (generation === this.generation) return;
    this.generation = generation;
    this.#lru.clear();
  }

  /** A FeedCache over these pages, whose invalidation is `invalidate`. */
  cache(invalidate: () => Promise<void>): FeedCache {
    return {
      read: async (key) => ({ hit: this.get(key), generation: this.generation }),
      write: async (key, g, value, ttlSeconds) => this.keep(key, g, value, ttlSeconds * 1000),
      invalidate,
    };
  }
}

export function memoryFeedCache(maxEntries = 2000): FeedCache {
  let generation = 0;
  const pages = new LocalPages(maxEntries, '0');
  return pages.cache(async () => pages.moveTo(String(++generation)));
}

/** IPC between the gateway processes of `PROCESSES=N` and their primary (src/cluster.ts runs the primary's side). */
export const FEED_IPC = { join: 'pixvote:feed-join', bump: 'pixvote:feed-bump', generation: 'pixvote:feed-generation', applied: 'pixvote:feed-applied', bumped: 'pixvote:feed-bumped' } as const;
/** How long a write waits for every process to apply its invalidation before it answers anyway. */
export const FEED_BUMP_TIMEOUT_MS = 2000;

/**
 * For a gateway process of `PROCESSES=N` without Redis: pages in this process's memory, the generation
 * kept by the primary. A write asks the primary for a new generation; the primary sends it to every
 * process, each applies it (dropping its pages) and says so, and only when all have (or after
 * FEED_BUMP_TIMEOUT_MS, or as processes exit) does the write's process hear back and answer. So a write
 * through one process shows on the very next request through any of them, as with Redis.
 */
export interface Ipc {
  /** As process.send: the callback hears of a channel that is closed (the primary is gone) instead of an 'error' event. */
  send(msg: object, callback: (err: Error | null) => void): unknown;
  on(event: 'message', fn: (msg: any) => void): unknown;
  off(event: 'message', fn: (msg: any) => void): unknown;
}

export function clusterFeedCache(ipc: Ipc, maxEntries = 2000): FeedCache & { close(): void } {
  let shared = 0;
  // Bumped here when the primary cannot be asked or does not answer in time.
  let ownEpoch = 0;
  const pages = new LocalPages(maxEntries, '0.0');
  const moveTo = () => pages.moveTo(`${shared}.${ownEpoch}`);
  const waiting = new Map<number, () => void>();
  let next = 0;
  const onMessage = (msg: { type?: string; id?: number; generation?: number }) => {
    if (msg?.type === FEED_IPC.generation && typeof msg.generation === 'number') {
      if (msg.generation > shared) {
        shared = msg.generation;
        moveTo();
      }
      // (The answer to joining, id -1, is no round's: nothing waits for it.)
      if (msg.id !== undefined && msg.id >= 0) ipc.send({ type: FEED_IPC.applied, id: msg.id }, () => {});
    } else if (msg?.type === FEED_IPC.bumped && msg.id !== undefined) {
      waiting.get(msg.id)?.();
    }
  };
  ipc.on('message', onMessage);
  // From here on the primary waits for this process too when a write bumps the generation.
  ipc.send({ type: FEED_IPC.join }, () => {});
  const invalidate = () =>
    new Promise<void>((resolve) => {
      const id = next++;
      const done = () => {
        clearTimeout(timer);
        waiting.delete(id);
        resolve();
      };
      // Without the primary: at least this process never serves its own stale pages.
      const alone = () => {
        ownEpoch++;
        moveTo();
        done();
      };
      const timer = setTimeout(alone, FEED_BUMP_TIMEOUT_MS + 500);
      waiting.set(id, done);
      ipc.send({ type: FEED_IPC.bump, id }, (err) => err && alone());
    });
  return {
    ...pages.cache(invalidate),
    close() {
      ipc.off('message', onMessage);
      for (const done of [...waiting.values()]) done();
    },
  };
}

export interface RedisFeedCache extends FeedCache {
  /** Whether reads trust the generation held in memory (pushed by Redis) rather than asking for it. */
  readonly pushed: boolean;
  close(): void;
}

/**
 * Bumps the generation and announces it in one step, so no process can miss a bump it could have read.
 * A generation only ever grows, even across a Redis that lost its data: a missing counter starts from the
 * caller's clock in microseconds, above any count a previous run could have reached.
 */
const BUMP = `if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SET', KEYS[1], ARGV[1]) end
local g = redis.call('INCR', KEYS[1]) redis.call('PUBLISH', KEYS[1], g) return g`;

/** How often a process that trusts pushed generations checks them against Redis anyway. */
const RECHECK_MS = 1000;

/**
 * Redis-backed, shared by every process. Pages of the current generation are kept in process memory too,
 * so a hit costs no page transfer; a page not held here comes from Redis (one round trip) or is built.
 *
 * Knowing the current generation without asking Redis on every request: each bump is published on a
 * channel that every process subscribes to (a second connection), and the process that bumps applies it
 * before its write is answered. The writer answers only after a second round trip (PING): Redis answers it
 * in a later iteration of its event loop than the bump, and at the end of every iteration it has written
 * all pending output, the announcement to each subscriber included. So by the time anyone learns of the
 * write (the writer's client, then any request it causes), the announcement is already in each process's
 * socket buffer; a read waits for the end of the current I/O phase, where every readable socket has been
 * handled, before it trusts the generation in memory.
 * While the subscription is not confirmed live (connecting, reconnecting, or either connection down), a
 * read asks Redis for the generation as before, and a process rechecks it every second regardless, which
 * bounds what a silently lost announcement could cost. When Redis is unreachable the cache is bypassed
 * (reads miss, writes are dropped): pages are built from the database, never served stale.
 */
export function redisFeedCache(redis: Redis, prefix: string, opts: { maxEntries?: number; subscriber?: Redis } = {}): RedisFeedCache {
  const genKey = `${prefix}feed:gen`;
  const pageKey = (g: string, key: string) => `${prefix}feed:${g}:${key}`;
  const pages = new LocalPages(opts.maxEntries ?? 2000, '');
  const sub = opts.subscriber ?? redis.duplicate({ autoResubscribe: false, enableOfflineQueue: false, lazyConnect: false });
  let live = false;
  let epoch = 0;
  let closed = false;

  /** Moves to generation `g` unless a newer one is held (announcements and answers to reads may cross). */
  const apply = (g: string | number) => {
    const n = Number(g);
    if (Number.isFinite(n) && (pages.generation === '' || n > Number(pages.generation))) pages.moveTo(String(n));
  };
  const bump = async () => {
    apply((await redis.eval(BUMP, 1, genKey, String(Date.now() * 1000))) as number);
    // Redis writes an iteration's replies and announcements together, the writer's reply possibly first
    // and, on a busy machine, milliseconds before the rest. A second round trip is answered only in a
    // later iteration, after every subscriber's socket has the announcement.
    await redis.ping();
  };
  /** The generation in Redis, starting one if Redis has none. */
  const fetchGeneration = async () => {
    const g = await redis.get(genKey);
    if (g === null) await bump();
    else apply(g);
  };
  // A write whose bump failed (Redis down, or a timeout) is owed to every process: until a bump succeeds,
  // this process builds every page from the database (the pages cached under the current generation may
  // predate the write), and it keeps trying.
  let owed = false;
  let retry: NodeJS.Timeout | null = null;
  const invalidate = async (): Promise<void> => {
    try {
      await bump();
      owed = false;
    } catch {
      owed = true;
      pages.moveTo('');
      retry ??= setTimeout(() => {
        retry = null;
        if (!closed) void invalidate();
      }, 200);
    }
  };

  const goLive = async () => {
    const mine = ++epoch;
    live = false;
    try {
      await sub.subscribe(genKey);
      await fetchGeneration();
      if (mine !== epoch || closed) return;
      live = true;
    } catch {
      // Not live: reads ask Redis until the next 'ready'.
    }
  };
  const stopTrusting = () => {
    epoch++;
    live = false;
  };
  const onAnnounced = (channel: string, g: string) => {
    if (channel === genKey) apply(g);
  };
  const onSubReady = () => void goLive();
  const onRedisReady = () => {
    if (sub.status === 'ready') void goLive();
  };
  const ignore = () => {};
  sub.on('message', onAnnounced).on('ready', onSubReady).on('close', stopTrusting).on('error', ignore);
  redis.on('close', stopTrusting).on('ready', onRedisReady);
  if (sub.status === 'ready') void goLive();
  const recheck = setInterval(() => {
    if (live) fetchGeneration().catch(() => {});
  }, RECHECK_MS);
  recheck.unref();

  // Sockets that became readable together with a request are handled before this resolves.
  let settled: Promise<void> | null = null;
  const settle = () =>
    (settled ??= new Promise<void>((resolve) =>
      setImmediate(() => {
        settled = null;
        resolve();
      }),
    ));

  return {
    get pushed() {
      return live;
    },
    async read(key) {
      if (owed) return { hit: null, generation: 'none' };
      try {
        // Live: announcements that arrived with this request are applied first. Else: ask Redis.
        await (live ? settle() : fetchGeneration());
        const g = pages.generation;
        let hit = pages.get(key);
        if (!hit) {
          // The page and its remaining lifetime, which the copy kept here must not outlive (`hot` ages).
          const [[, raw], [, ttl]] = ((await redis.pipeline().getBuffer(pageKey(g, key)).pttl(pageKey(g, key)).exec()) ?? []) as [[unknown, Buffer | null], [unknown, number]];
          if (raw && ttl > 0) {
            hit = decode(raw);
            // A newer generation may have been seen meanwhile: never kept under it.
            pages.keep(key, g, hit, ttl);
          }
        }
        return { hit, generation: g };
      } catch {
        return { hit: null, generation: 'none' };
      }
    },
    async write(key, g, value, ttlSeconds) {
      if (g === 'none' || g === '') return;
      pages.keep(key, g, value, ttlSeconds * 1000);
      await redis.set(pageKey(g, key), Buffer.concat([Buffer.from(`${value.etag}\n`), value.body]), 'EX', ttlSeconds).catch(() => {});
    },
    invalidate,
    close() {
      closed = true;
      stopTrusting();
      clearInterval(recheck);
      if (retry) clearTimeout(retry);
      redis.off('close', stopTrusting).off('ready', onRedisReady);
      sub.off('message', onAnnounced).off('ready', onSubReady).off('close', stopTrusting).off('error', ignore);
      if (!opts.subscriber) sub.disconnect();
    },
  };
}

/** Stored in Redis as `<etag>\n<json>`. */
function decode(raw: Buffer): CachedJson {
  const nl = raw.indexOf(0x0a);
  return { etag: raw.subarray(0, nl).toString(), body: raw.subarray(nl + 1) };
}
