/**
 * Where the feed cache's generations come from and how a bump reaches every process, apart from page storage.
 *
 * Three sources: in-process (one process), the cluster primary over IPC (PROCESSES=N without Redis), and
 * Redis pub/sub (every process on any machine). Every cached page is kept under the global generation and the
 * generations of the scopes it depends on (`token`); a structural write (upload, delete, privacy, tags,
 * moderation) bumps the global one, so one bump makes every page stale at once and old generations simply
 * expire. A vote bumps only the scopes whose order it may change (`bumpScopes`: the score-sorted listings its
 * upload is in) and records the upload under a new vote sequence number, so a page whose order no vote moves
 * (sort=new, recent) stays cached and has only the counts of its voted uploads refreshed (`recount`).
 * `bump()` and `bumpScopes()` answer only after every process has applied them.
 */
import type { Worker } from 'node:cluster';
import type { Redis } from 'ioredis';

/** What a vote changes: the scopes whose order it may move and the uploads whose counts it changed. */
export interface VoteChange {
  scopes: readonly string[];
  uploads: readonly string[];
}

/** A process's view of the current generations, and the way to start new ones everywhere. */
export interface Generations {
  /** The global generation this process holds ('' while it knows none). */
  readonly current: string;
  /** The vote sequence number this process has applied: a page remembers the one it was read under. */
  readonly seq: number;
  /**
   * The global generation with those of `scopes`, as a page's cache key holds it; null when a scope's
   * generation is not known in this process (Redis: it is asked for first, `sync`).
   */
  token(scopes: readonly string[]): string | null;
  /** Of `ids`, the uploads whose counts may have changed since vote sequence number `since`. */
  recount(ids: readonly string[], since: number): readonly string[];
  /** Starts a new global generation in every process sharing the cache; resolves once they have applied it. */
  bump(): Promise<void>;
  /** Bumps `change.scopes` and records a vote on `change.uploads` in every process; resolves once applied. */
  bumpScopes(change: VoteChange): Promise<void>;
  /** `fn` runs whenever `current` changes (the pages kept under the old one are then dropped). */
  onMove(fn: () => void): void;
  close(): void;
}

/** What `recount` answers for a page current as of the last vote (shared: no empty list made per cached read). */
const NOTHING_TO_RECOUNT: readonly string[] = Object.freeze([]);

/** How many voted uploads a process remembers; a page older than the oldest forgotten vote is recounted whole. */
const VOTED_MAX = 10_000;

/** Holds the generations and tells the listeners when the global one changes. */
abstract class Held implements Generations {
  #current: string;
  #listeners: Array<() => void> = [];
  readonly #scopes = new Map<string, number>();
  /** The last vote sequence number applied, and the one at which each upload recently voted on was. */
  #seq = 0;
  readonly #votedAt = new Map<string, number>();
  /** Votes up to here are not all in #votedAt: a page read before it has all its uploads recounted. */
  #floor = 0;
  /** Whether every scope's generation is known here (an unknown one is 0), or must be asked for. */
  readonly #complete: boolean;

  constructor(initial: string, complete = true) {
    this.#current = initial;
    this.#complete = complete;
  }

  get current(): string {
    return this.#current;
  }

  get seq(): number {
    return this.#seq;
  }

  token(scopes: readonly string[]): string | null {
    if (this.#current === '') return null;
    let t = this.#current;
    for (const s of scopes) {
      const g = this.#scopes.get(s) ?? (this.#complete ? 0 : undefined);
      if (g === undefined) return null;
      t += `.${g}`;
    }
    return t;
  }

  recount(ids: readonly string[], since: number): readonly string[] {
    if (since >= this.#seq) return NOTHING_TO_RECOUNT;
    if (since < this.#floor) return [...ids];
    return ids.filter((id) => (this.#votedAt.get(id) ?? 0) > since);
  }

  onMove(fn: () => void): void {
    this.#listeners.push(fn);
  }

  protected move(generation: string): void {
    if (generation === this.#current) return;
    this.#current = generation;
    for (const fn of this.#listeners) fn();
  }

  /** The scopes not known here, of `scopes`. */
  protected unknown(scopes: readonly string[]): string[] {
    return scopes.filter((s) => !this.#scopes.has(s));
  }

  /** Scope generations learnt (announcements and answers may cross: a generation only grows). */
  protected learn(values: Iterable<readonly [string, number]>): void {
    for (const [s, g] of values) if (g > (this.#scopes.get(s) ?? -1)) this.#scopes.set(s, g);
  }

  /** Forgets every scope's generation: they are asked for again (Redis, after announcements may have been lost). */
  protected forgetScopes(): void {
    this.#scopes.clear();
  }

  /** Vote `seq` changed the counts of `uploads`. */
  protected voted(seq: number, uploads: readonly string[]): void {
    if (seq <= this.#seq) return;
    if (seq > this.#seq + 1) this.#floor = seq - 1; // votes between were not heard here
    this.#seq = seq;
    for (const id of uploads) {
      this.#votedAt.delete(id);
      this.#votedAt.set(id, seq);
    }
    for (const [id, at] of this.#votedAt) {
      if (this.#votedAt.size <= VOTED_MAX) break;
      this.#votedAt.delete(id);
      this.#floor = Math.max(this.#floor, at);
    }
  }

  /** The vote sequence number is `seq`, without knowing which uploads the votes up to it were on. */
  protected votedUnknown(seq: number): void {
    if (seq <= this.#seq) return;
    this.#seq = seq;
    this.#floor = seq;
  }

  abstract bump(): Promise<void>;
  abstract bumpScopes(change: VoteChange): Promise<void>;
  close(): void {}
}

// ---------------------------------------------------------------------------------------------------------
// In-process: one process (PROCESSES=1 without Redis), a counter.

class InProcessGenerations extends Held {
  #count = 0;
  readonly #scopeCounts = new Map<string, number>();
  constructor() {
    super('0');
  }
  async bump(): Promise<void> {
    this.move(String(++this.#count));
  }
  async bumpScopes(change: VoteChange): Promise<void> {
    this.learn(change.scopes.map((s) => [s, bumpIn(this.#scopeCounts, s)] as const));
    this.voted(this.seq + 1, change.uploads);
  }
}

/** Increments `name`'s count in `counts`, answering the new one. */
function bumpIn(counts: Map<string, number>, name: string): number {
  const n = (counts.get(name) ?? 0) + 1;
  counts.set(name, n);
  return n;
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

type FeedMessage = {
  type?: string;
  id?: number;
  generation?: number;
  /** A bump's request: a vote's change (absent: a global bump). */
  change?: { scopes?: unknown; uploads?: unknown };
  /** A generation's announcement: scope generations, the vote sequence number and the uploads voted on. */
  scopes?: unknown;
  seq?: number;
  uploads?: unknown;
};

const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
const isScopeValues = (v: unknown): v is Array<[string, number]> =>
  Array.isArray(v) && v.every((x) => Array.isArray(x) && typeof x[0] === 'string' && typeof x[1] === 'number');

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
      if (isScopeValues(msg.scopes)) this.learn(msg.scopes);
      if (typeof msg.seq === 'number') {
        // Joining: the votes so far are not known one by one.
        if (msg.id !== undefined && msg.id >= 0 && isStrings(msg.uploads)) this.voted(msg.seq, msg.uploads);
        else this.votedUnknown(msg.seq);
      }
      // (The answer to joining, id -1, is no round's: nothing waits for it.)
      if (msg.id !== undefined && msg.id >= 0) this.#ipc.send({ type: FEED_IPC.applied, id: msg.id }, () => {});
    } else if (msg?.type === FEED_IPC.bumped && msg.id !== undefined) {
      this.#waiting.get(msg.id)?.();
    }
  };

  bump(): Promise<void> {
    return this.#round(undefined);
  }

  bumpScopes(change: VoteChange): Promise<void> {
    return this.#round({ scopes: [...change.scopes], uploads: [...change.uploads] });
  }

  #round(change: VoteChange | undefined): Promise<void> {
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
      this.#ipc.send({ type: FEED_IPC.bump, id, ...(change ? { change } : {}) }, (err) => err && alone());
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
  readonly #scopes = new Map<string, number>();
  #seq = 0;
  #nextRound = 0;
  readonly #joined = new Set<Worker>();
  readonly #rounds = new Map<number, Round>();
  readonly #log: { warn(obj: object, msg: string): void };

  constructor(cluster: ClusterPrimary, log: { warn(obj: object, msg: string): void }) {
    this.#log = log;
    cluster.on('message', (worker, msg) => {
      if (msg?.type === FEED_IPC.join) {
        this.#joined.add(worker);
        send(worker, {
          type: FEED_IPC.generation,
          generation: this.#generation,
          scopes: [...this.#scopes],
          seq: this.#seq,
          id: -1,
        });
      } else if (msg?.type === FEED_IPC.bump) {
        this.#bump(worker, msg.id, msg.change);
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

  #bump(asker: Worker, id: number | undefined, change: FeedMessage['change']): void {
    // A vote's change bumps its scopes and the vote sequence number; anything else (or a malformed change)
    // the global generation.
    const vote =
      change && isStrings(change.scopes) && isStrings(change.uploads)
        ? { scopes: change.scopes, uploads: change.uploads }
        : null;
    const announced = vote
      ? {
          scopes: vote.scopes.map((s) => [s, bumpIn(this.#scopes, s)]),
          seq: ++this.#seq,
          uploads: vote.uploads,
        }
      : {};
    const generation = vote ? this.#generation : ++this.#generation;
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
    for (const w of waitingFor) send(w, { type: FEED_IPC.generation, generation, ...announced, id: round });
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
 * caller's clock in microseconds, above any count a previous run could have reached. The scopes' hash
 * (KEYS[2]) is started with it when missing: its vote sequence number from the caller's clock in
 * milliseconds, its scopes from 0 (under a new global generation, so no token of before can come back).
 */
const BUMP = `if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SET', KEYS[1], ARGV[1]) end
if redis.call('HEXISTS', KEYS[2], 'seq') == 0 then
  redis.call('DEL', KEYS[2]) redis.call('HSET', KEYS[2], 'seq', ARGV[2])
end
local g = redis.call('INCR', KEYS[1]) redis.call('PUBLISH', KEYS[1], g) return g`;

/**
 * A vote: bumps each scope (ARGV[4..]) and the vote sequence number in the scopes' hash and announces them
 * with the uploads voted on (ARGV[2], a JSON array; ARGV[1] and ARGV[3] as BUMP's), in one step, as
 * `{"q":seq,"s":[scope,generation,…],"u":[…]}`. A missing hash is started as BUMP does, with a global bump
 * (announced first).
 */
const VOTE = `if redis.call('HEXISTS', KEYS[2], 'seq') == 0 then
  if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SET', KEYS[1], ARGV[1]) end
  redis.call('DEL', KEYS[2]) redis.call('HSET', KEYS[2], 'seq', ARGV[3])
  redis.call('PUBLISH', KEYS[1], redis.call('INCR', KEYS[1]))
end
local seq = redis.call('HINCRBY', KEYS[2], 'seq', 1)
local parts = {}
for i = 4, #ARGV do
  local g = redis.call('HINCRBY', KEYS[2], ARGV[i], 1)
  parts[#parts + 1] = cjson.encode(ARGV[i]) .. ',' .. string.format('%d', g)
end
local msg = '{"q":' .. string.format('%d', seq) .. ',"s":[' .. table.concat(parts, ',') .. '],"u":' .. ARGV[2] .. '}'
redis.call('PUBLISH', KEYS[1], msg)
return msg`;

/** How often a process that trusts pushed generations checks them against Redis anyway. */
const RECHECK_MS = 1000;

type Announced = { q: number; s: Array<string | number>; u: string[] };

/**
 * The generations in Redis (`<prefix>feed:gen`, the global one, and the hash `<prefix>feed:scopes`: the vote
 * sequence number `seq` and each scope's), known without asking Redis on every read: each bump is
 * published on a channel that every process subscribes to (a second connection), and the process that bumps
 * applies it before its write is answered. The writer answers only after a second round trip (PING): Redis
 * answers it in a later iteration of its event loop than the bump, and at the end of every iteration it has
 * written all pending output, the announcement to each subscriber included. So by the time anyone learns of
 * the write (the writer's client, then any request it causes), the announcement is already in each process's
 * socket buffer; a read waits (`sync`) for the end of the current I/O phase, where every readable socket has
 * been handled, before it trusts the generations in memory. A scope's generation not yet known here is asked
 * for once (one round trip for all a page needs), then kept up to date by the announcements.
 * While the subscription is not confirmed live (connecting, reconnecting, or either connection down), a read
 * asks Redis for the generations it needs in one MULTI (and then recounts every upload of a page older than
 * the vote sequence number), and a process rechecks them every second regardless, which bounds
 * what a silently lost announcement could cost. When Redis is unreachable `sync` says to bypass the cache.
 */
export class RedisGenerations extends Held {
  readonly key: string;
  readonly scopesKey: string;
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
    super('', false);
    this.key = `${prefix}feed:gen`;
    this.scopesKey = `${prefix}feed:scopes`;
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
      if (this.#live) this.#fetch([], true).catch(() => {});
    }, RECHECK_MS);
    this.#recheck.unref();
  }

  /** Whether reads trust the generations held in memory (pushed by Redis) rather than asking for them. */
  get pushed(): boolean {
    return this.#live;
  }

  /**
   * Before a read: makes `current` and the generations of `scopes` those to read under. False when the cache
   * must be bypassed (a bump is owed, or Redis did not answer): the page is then built from the database.
   */
  async sync(scopes: readonly string[] = []): Promise<boolean> {
    if (this.#owed) return false;
    try {
      // Live: announcements that arrived with this request are applied first, and unknown scopes asked for.
      // Else: ask Redis for all of them.
      if (this.#live) {
        await this.#settle();
        const unknown = this.unknown(scopes);
        if (unknown.length) await this.#fetchScopes(unknown);
      } else {
        await this.#fetch(scopes, false);
      }
      return this.token(scopes) !== null;
    } catch {
      return false;
    }
  }

  async bump(): Promise<void> {
    await this.#landing(() => this.#bumpInRedis());
  }

  async bumpScopes(change: VoteChange): Promise<void> {
    await this.#landing(async () => {
      const args = [String(Date.now() * 1000), JSON.stringify(change.uploads), String(Date.now())];
      const msg = (await this.#redis.eval(VOTE, 2, this.key, this.scopesKey, ...args, ...change.scopes)) as string;
      this.#onAnnounced(this.key, msg);
      await this.#redis.ping(); // as in #bumpInRedis
    });
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

  /** Runs a bump; one that fails is owed (the cache bypassed here) and retried as a global bump. */
  async #landing(bump: () => Promise<void>): Promise<void> {
    try {
      await bump();
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

  /** Moves to generation `g` unless a newer one is held (announcements and answers to reads may cross). */
  #apply(g: string | number): void {
    const n = Number(g);
    if (Number.isFinite(n) && (this.current === '' || n > Number(this.current))) this.move(String(n));
  }

  async #bumpInRedis(): Promise<void> {
    const args = [String(Date.now() * 1000), String(Date.now())];
    this.#apply((await this.#redis.eval(BUMP, 2, this.key, this.scopesKey, ...args)) as number);
    // Redis writes an iteration's replies and announcements together, the writer's reply possibly first
    // and, on a busy machine, milliseconds before the rest. A second round trip is answered only in a
    // later iteration, after every subscriber's socket has the announcement.
    await this.#redis.ping();
  }

  /**
   * The global generation, the vote sequence number and the generations of `scopes` in Redis (one MULTI),
   * starting them if Redis has none. `check`: a live process's recheck, which forgets what it may have missed.
   */
  async #fetch(scopes: readonly string[], check: boolean): Promise<void> {
    const replies = await this.#redis
      .multi()
      .get(this.key)
      .hmget(this.scopesKey, 'seq', ...scopes)
      .exec();
    const [[, g], [, values]] = (replies ?? []) as [[unknown, string | null], [unknown, Array<string | null>]];
    const [seq, ...gens] = values ?? [];
    if (g === null || seq === null || seq === undefined) {
      await this.#bumpInRedis();
      return this.#fetch(scopes, check);
    }
    this.#apply(g);
    if (check && Number(seq) > this.seq) this.forgetScopes(); // announcements were lost: ask again
    this.votedUnknown(Number(seq));
    this.learn(scopes.map((s, i) => [s, Number(gens[i] ?? 0)] as const));
  }

  /** The generations of `scopes`, not known here, asked for once (announcements then keep them). */
  async #fetchScopes(scopes: readonly string[]): Promise<void> {
    const gens = await this.#redis.hmget(this.scopesKey, ...scopes);
    this.learn(scopes.map((s, i) => [s, Number(gens[i] ?? 0)] as const));
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
      // What was learnt before may have missed announcements: asked for again from here on.
      this.forgetScopes();
      await this.#fetch([], false);
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
  readonly #onAnnounced = (channel: string, message: string) => {
    if (channel !== this.key) return;
    if (!message.startsWith('{')) return this.#apply(message);
    let a: Announced;
    try {
      a = JSON.parse(message) as Announced;
    } catch {
      return;
    }
    if (typeof a.q !== 'number' || !Array.isArray(a.s) || !Array.isArray(a.u)) return;
    const values: Array<[string, number]> = [];
    for (let i = 0; i + 1 < a.s.length; i += 2) values.push([String(a.s[i]), Number(a.s[i + 1])]);
    this.learn(values);
    this.voted(a.q, a.u.map(String));
  };
  readonly #onSubReady = () => void this.#goLive();
  readonly #onRedisReady = () => {
    if (this.#sub.status === 'ready') void this.#goLive();
  };
}

const ignore = () => {};
