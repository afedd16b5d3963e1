/**
 * Where the feed cache's generation comes from and how a bump reaches every process, apart from page storage.
 *
 * Three sources: in-process (one process), the cluster primary over IPC (PROCESSES=N without Redis), and
 * Redis pub/sub (every process on any machine). Every cached page is kept under a generation; a write bumps
 * it, so one bump makes every page stale at once and old generations simply expire. `bump()` answers only
 * after every process has applied the new one.
 */
import type { Worker } from 'node:cluster';
import type { Redis } from 'ioredis';

/** A process's view of the current generation, and the way to start a new one everywhere. */
export interface Generations {
  /** The generation this process holds ('' while it knows none). */
  readonly current: string;
  /** Starts a new generation in every process sharing the cache; resolves once they have applied it. */
  bump(): Promise<void>;
  /** `fn` runs whenever `current` changes (the pages kept under the old one are then dropped). */
  onMove(fn: () => void): void;
  close(): void;
}

/** Holds `current` and tells the listeners when it changes. */
abstract class Held implements Generations {
  #current: string;
  #listeners: Array<() => void> = [];

  constructor(initial: string) {
    this.#current = initial;
  }

  get current(): string {
    return this.#current;
  }

  onMove(fn: () => void): void {
    this.#listeners.push(fn);
  }

  protected move(generation: string): void {
    if (generation === this.#current) return;
    this.#current = generation;
    for (const fn of this.#listeners) fn();
  }

  abstract bump(): Promise<void>;
  close(): void {}
}

// ---------------------------------------------------------------------------------------------------------
// In-process: one process (PROCESSES=1 without Redis), a counter.

class InProcessGenerations extends Held {
  #count = 0;
  constructor() {
    super('0');
  }
  async bump(): Promise<void> {
    this.move(String(++this.#count));
  }
}

/** One process's generations, for when nothing else shares its cache. */
export const inProcessGenerations = (): Generations => new InProcessGenerations();

// ---------------------------------------------------------------------------------------------------------
// The cluster primary over IPC: PROCESSES=N without Redis.

/** IPC between the gateway processes of `PROCESSES=N` and their primary (`servePrimaryGenerations`). */
export const FEED_IPC = {
  join: 'pixvote:feed-join',
  bump: 'pixvote:feed-bump',
  generation: 'pixvote:feed-generation',
  applied: 'pixvote:feed-applied',
  bumped: 'pixvote:feed-bumped',
} as const;
/** How long a write waits for every process to apply its invalidation before it answers anyway. */
export const FEED_BUMP_TIMEOUT_MS = 2000;

/** A gateway process's channel to its primary (`process` in a cluster worker). */
export interface Ipc {
  /** As process.send: the callback hears of a closed channel (the primary is gone) instead of an 'error' event. */
  send(msg: object, callback: (err: Error | null) => void): unknown;
  on(event: 'message', fn: (msg: unknown) => void): unknown;
  off(event: 'message', fn: (msg: unknown) => void): unknown;
}

type FeedMessage = { type?: string; id?: number; generation?: number };

/**
 * A gateway process's side: the generation kept by the primary. A bump asks the primary for a new
 * generation; the primary sends it to every process, each applies it (dropping its pages) and says so, and
 * only when all have (or after FEED_BUMP_TIMEOUT_MS, or as processes exit) does the bumping process hear back
 * and answer. So a write through one process shows on the very next request through any of them, as with Redis.
 */
class ClusterGenerations extends Held {
  readonly #ipc: Ipc;
  #shared = 0;
  /** Bumped here when the primary cannot be asked or does not answer in time. */
  #ownEpoch = 0;
  readonly #waiting = new Map<number, () => void>();
  #next = 0;

  constructor(ipc: Ipc) {
    super('0.0');
    this.#ipc = ipc;
    ipc.on('message', this.#onMessage);
    // From here on the primary waits for this process too when a write bumps the generation.
    ipc.send({ type: FEED_IPC.join }, () => {});
  }

  #moveToHeld(): void {
    this.move(`${this.#shared}.${this.#ownEpoch}`);
  }

  readonly #onMessage = (message: unknown) => {
    // Any process may send anything: the fields are checked before use.
    const msg = message as FeedMessage | null | undefined;
    if (msg?.type === FEED_IPC.generation && typeof msg.generation === 'number') {
      if (msg.generation > this.#shared) {
        this.#shared = msg.generation;
        this.#moveToHeld();
      }
      // (The answer to joining, id -1, is no round's: nothing waits for it.)
      if (msg.id !== undefined && msg.id >= 0) this.#ipc.send({ type: FEED_IPC.applied, id: msg.id }, () => {});
    } else if (msg?.type === FEED_IPC.bumped && msg.id !== undefined) {
      this.#waiting.get(msg.id)?.();
    }
  };

  bump(): Promise<void> {
    return new Promise<void>((resolve) => {
      const id = this.#next++;
      const done = () => {
        clearTimeout(timer);
        this.#waiting.delete(id);
        resolve();
      };
      // Without the primary: at least this process never serves its own stale pages.
      const alone = () => {
        this.#ownEpoch++;
        this.#moveToHeld();
        done();
      };
      const timer = setTimeout(alone, FEED_BUMP_TIMEOUT_MS + 500);
      this.#waiting.set(id, done);
      this.#ipc.send({ type: FEED_IPC.bump, id }, (err) => err && alone());
    });
  }

  override close(): void {
    this.#ipc.off('message', this.#onMessage);
    for (const done of [...this.#waiting.values()]) done();
  }
}

/** A gateway process of `PROCESSES=N` without Redis: generations handed out by the primary. */
export const clusterGenerations = (ipc: Ipc): Generations => new ClusterGenerations(ipc);

/** What the primary needs of node:cluster (the `cluster` module itself in production). */
export interface ClusterPrimary {
  on(event: 'message', fn: (worker: Worker, msg: FeedMessage) => void): unknown;
  on(event: 'exit', fn: (worker: Worker) => void): unknown;
}

type Round = { waitingFor: Set<Worker>; finish: () => void };

/**
 * The primary's side: the generation of every gateway process. A bumping process asks for a new one; every
 * process that joined gets it, applies it and confirms; the bumping process hears back once all have (a
 * process that exits is not waited for; after FEED_BUMP_TIMEOUT_MS it hears back anyway).
 */
class PrimaryGenerations {
  #generation = 0;
  #nextRound = 0;
  readonly #joined = new Set<Worker>();
  readonly #rounds = new Map<number, Round>();
  readonly #log: { warn(obj: object, msg: string): void };

  constructor(cluster: ClusterPrimary, log: { warn(obj: object, msg: string): void }) {
    this.#log = log;
    cluster.on('message', (worker, msg) => {
      if (msg?.type === FEED_IPC.join) {
        this.#joined.add(worker);
        send(worker, { type: FEED_IPC.generation, generation: this.#generation, id: -1 });
      } else if (msg?.type === FEED_IPC.bump) {
        this.#bump(worker, msg.id);
      } else if (msg?.type === FEED_IPC.applied && msg.id !== undefined) {
        const round = this.#rounds.get(msg.id);
        if (round) settle(round, worker);
      }
    });
    cluster.on('exit', (worker) => {
      this.#joined.delete(worker);
      for (const round of [...this.#rounds.values()]) settle(round, worker);
    });
  }

  #bump(asker: Worker, id: number | undefined): void {
    const generation = ++this.#generation;
    const round = this.#nextRound++;
    const waitingFor = new Set([...this.#joined].filter((w) => w.isConnected()));
    const timer = setTimeout(() => {
      const pids = [...waitingFor].map((w) => w.process.pid);
      this.#log.warn({ pids }, 'feed cache invalidation: a process did not confirm in time');
      finish();
    }, FEED_BUMP_TIMEOUT_MS);
    const finish = () => {
      if (!this.#rounds.delete(round)) return;
      clearTimeout(timer);
      send(asker, { type: FEED_IPC.bumped, id });
    };
    this.#rounds.set(round, { waitingFor, finish });
    for (const w of waitingFor) send(w, { type: FEED_IPC.generation, generation, id: round });
    if (waitingFor.size === 0) finish();
  }
}

function send(w: Worker, msg: object): void {
  if (!w.isConnected()) return;
  try {
    w.send(msg);
  } catch {
    // The process is going away: its 'exit' settles what waits for it.
  }
}

function settle(round: Round, w: Worker): void {
  round.waitingFor.delete(w);
  if (round.waitingFor.size === 0) round.finish();
}

/** In the primary of `PROCESSES=N` without Redis: hands out every process's generations. */
export function servePrimaryGenerations(cluster: ClusterPrimary, log: { warn(obj: object, msg: string): void }): void {
  new PrimaryGenerations(cluster, log);
}

// ---------------------------------------------------------------------------------------------------------
// Redis pub/sub: every process, on any machine, sharing one Redis.

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
 * The generation in Redis (`<prefix>feed:gen`), known without asking Redis on every read: each bump is
 * published on a channel that every process subscribes to (a second connection), and the process that bumps
 * applies it before its write is answered. The writer answers only after a second round trip (PING): Redis
 * answers it in a later iteration of its event loop than the bump, and at the end of every iteration it has
 * written all pending output, the announcement to each subscriber included. So by the time anyone learns of
 * the write (the writer's client, then any request it causes), the announcement is already in each process's
 * socket buffer; a read waits (`sync`) for the end of the current I/O phase, where every readable socket has
 * been handled, before it trusts the generation in memory.
 * While the subscription is not confirmed live (connecting, reconnecting, or either connection down), a read
 * asks Redis for the generation as before, and a process rechecks it every second regardless, which bounds
 * what a silently lost announcement could cost. When Redis is unreachable `sync` says to bypass the cache.
 */
export class RedisGenerations extends Held {
  readonly key: string;
  readonly #redis: Redis;
  readonly #sub: Redis;
  readonly #ownSub: boolean;
  #live = false;
  #epoch = 0;
  #closed = false;
  /**
   * A bump that failed (Redis down, or a timeout) is owed to every process: until one succeeds, this process
   * bypasses the cache (the pages cached under the current generation may predate the write) and retries.
   */
  #owed = false;
  #retry: NodeJS.Timeout | null = null;
  readonly #recheck: NodeJS.Timeout;
  #settled: Promise<void> | null = null;

  constructor(redis: Redis, prefix: string, opts: { subscriber?: Redis } = {}) {
    super('');
    this.key = `${prefix}feed:gen`;
    this.#redis = redis;
    this.#ownSub = !opts.subscriber;
    this.#sub =
      opts.subscriber ?? redis.duplicate({ autoResubscribe: false, enableOfflineQueue: false, lazyConnect: false });
    this.#sub
      .on('message', this.#onAnnounced)
      .on('ready', this.#onSubReady)
      .on('close', this.#stopTrusting)
      .on('error', ignore);
    redis.on('close', this.#stopTrusting).on('ready', this.#onRedisReady);
    if (this.#sub.status === 'ready') void this.#goLive();
    this.#recheck = setInterval(() => {
      if (this.#live) this.#fetch().catch(() => {});
    }, RECHECK_MS);
    this.#recheck.unref();
  }

  /** Whether reads trust the generation held in memory (pushed by Redis) rather than asking for it. */
  get pushed(): boolean {
    return this.#live;
  }

  /**
   * Before a read: makes `current` the generation to read under. False when the cache must be bypassed (a
   * bump is owed, or Redis did not answer): the page is then built from the database.
   */
  async sync(): Promise<boolean> {
    if (this.#owed) return false;
    try {
      // Live: announcements that arrived with this request are applied first. Else: ask Redis.
      await (this.#live ? this.#settle() : this.#fetch());
      return true;
    } catch {
      return false;
    }
  }

  async bump(): Promise<void> {
    try {
      await this.#bumpInRedis();
      this.#owed = false;
    } catch {
      this.#owed = true;
      this.move('');
      this.#retry ??= setTimeout(() => {
        this.#retry = null;
        if (!this.#closed) void this.bump();
      }, 200);
    }
  }

  override close(): void {
    this.#closed = true;
    this.#stopTrusting();
    clearInterval(this.#recheck);
    if (this.#retry) clearTimeout(this.#retry);
    this.#redis.off('close', this.#stopTrusting).off('ready', this.#onRedisReady);
    this.#sub
      .off('message', this.#onAnnounced)
      .off('ready', this.#onSubReady)
      .off('close', this.#stopTrusting)
      .off('error', ignore);
    if (this.#ownSub) this.#sub.disconnect();
  }

  /** Moves to generation `g` unless a newer one is held (announcements and answers to reads may cross). */
  #apply(g: string | number): void {
    const n = Number(g);
    if (Number.isFinite(n) && (this.current === '' || n > Number(this.current))) this.move(String(n));
  }

  async #bumpInRedis(): Promise<void> {
    this.#apply((await this.#redis.eval(BUMP, 1, this.key, String(Date.now() * 1000))) as number);
    // Redis writes an iteration's replies and announcements together, the writer's reply possibly first
    // and, on a busy machine, milliseconds before the rest. A second round trip is answered only in a
    // later iteration, after every subscriber's socket has the announcement.
    await this.#redis.ping();
  }

  /** The generation in Redis, starting one if Redis has none. */
  async #fetch(): Promise<void> {
    const g = await this.#redis.get(this.key);
    if (g === null) await this.#bumpInRedis();
    else this.#apply(g);
  }

  /** Sockets that became readable together with a request are handled before this resolves. */
  #settle(): Promise<void> {
    return (this.#settled ??= new Promise<void>((resolve) =>
      setImmediate(() => {
        this.#settled = null;
        resolve();
      }),
    ));
  }

  async #goLive(): Promise<void> {
    const mine = ++this.#epoch;
    this.#live = false;
    try {
      await this.#sub.subscribe(this.key);
      await this.#fetch();
      if (mine !== this.#epoch || this.#closed) return;
      this.#live = true;
    } catch {
      // Not live: reads ask Redis until the next 'ready'.
    }
  }

  readonly #stopTrusting = () => {
    this.#epoch++;
    this.#live = false;
  };
  readonly #onAnnounced = (channel: string, g: string) => {
    if (channel === this.key) this.#apply(g);
  };
  readonly #onSubReady = () => void this.#goLive();
  readonly #onRedisReady = () => {
    if (this.#sub.status === 'ready') void this.#goLive();
  };
}

const ignore = () => {};
