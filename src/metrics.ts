/**
 * Prometheus metrics (prom-client): what an operator needs to size workers and processes.
 * One registry per process; with several gateway processes each exposes its own (scrape them all,
 * or use the primary's aggregated endpoint in cluster mode).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  httpDuration: Histogram<'method' | 'route' | 'status'>;
  poolThreads: Gauge;
  poolQueueDepth: Gauge;
  poolUtilization: Gauge;
  poolBusySeconds: Counter;
  poolQueueWait: Histogram;
  stageDuration: Histogram<'stage'>;
  uploadsAccepted: Counter<'type'>;
  uploadsRejected: Counter<'reason'>;
  rateLimited: Counter<'limit'>;
  /** Cacheable public pages answered: from the cache (hit), from it with counts read again (recount), or built. */
  feedCache: Counter<'outcome'>;
  detectorBackend: Gauge<'backend'>;
  reportsReceived: Counter;
  moderationActions: Counter<'action'>;
  blockedUploads: Counter;
  /** Resumable (tus) uploads opened, completed (the use case ran) and expired incomplete. */
  resumableUploads: Counter<'event'>;
  /** Connections refused by MAX_CONNECTIONS_PER_IP. */
  connectionsRefused: Counter;
  voteRingsQueued: Counter;
  voteRingActions: Counter<'action'>;
  voteRingVotesVoided: Counter;
  /** Webhook deliveries: event-to-delivery lag, attempts by outcome, and the outbox (sending, pending, backing off). */
  webhookLag: Histogram;
  webhookAttempts: Counter<'outcome'>;
  webhookSending: Gauge;
  webhookPending: Gauge;
  webhookBackingOff: Gauge;
  /** One cacheable page answered (feedCache, read at scrape time). */
  recordFeedCache(outcome: FeedCacheOutcome): void;
  /** One HTTP request answered (the requestMetrics middleware calls it for every request). */
  recordRequest(method: string, route: string, status: number, seconds: number): void;
}

/** prom-client's histogram entry of one label set (lib/histogram.js: createBaseValues). */
type HistogramEntry = { labels: object; bucketValues: Record<number, number>; sum: number; count: number };

/**
 * Sets `histogram` (reset first) to the series given, counted outside it: each one's count, sum and buckets (per
 * LATENCY_BUCKETS bound, not cumulative). prom-client has no public setter, so the entries zero() creates are filled
 * in. Checked against observe() by test/unit/metrics.test.ts; throws if prom-client's entries change shape.
 */
export function setLatencyHistogram(
  histogram: Histogram<string>,
  all: Iterable<{ labels: Record<string, string>; n: number; sum: number; buckets: readonly number[] }>,
): void {
  histogram.reset();
  const byLabels = new Map<object, { n: number; sum: number; buckets: readonly number[] }>();
  for (const s of all) {
    histogram.zero(s.labels);
    byLabels.set(s.labels, s);
  }
  const entries = (histogram as unknown as { hashMap?: Record<string, HistogramEntry> }).hashMap ?? {};
  let set = 0;
  for (const entry of Object.values(entries)) {
    const s = byLabels.get(entry.labels);
    if (!s || typeof entry.bucketValues !== 'object') continue;
    entry.count = s.n;
    entry.sum = s.sum;
    LATENCY_BUCKETS.forEach((bound, i) => (entry.bucketValues[bound] = s.buckets[i]!));
    set++;
  }
  if (set !== byLabels.size) throw new Error('prom-client histogram entries changed shape: latencies not exported');
}

export type FeedCacheOutcome = 'hit' | 'recount' | 'miss';

export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export interface PoolGauges {
  threads: number;
  queueSize: number;
  /** Share (0..1) of the threads' time spent on tasks, over the last seconds. */
  utilization: number;
  /** Thread-seconds spent on tasks since start. */
  busySeconds?: number;
}

/** Database-wide figures, read at scrape time (shared by every process: the cluster's /metrics keeps one value). */
export interface ModerationGauges {
  queueDepth(): Promise<number>;
  blocklistSize(): Promise<number>;
  /** Resumable uploads still receiving and the bytes they hold (in DATA_DIR or the bucket). */
  resumable?(): Promise<{ open: number; bytes: number }>;
}

/**
 * How long a scrape waits for the database's figures. Past it (or on any error: the database is down) the scrape
 * answers all the same, with the last figures read and `pixvote_dependency_up{dependency="database"} 0`:
 * monitoring must not go blind during the very outage it should show.
 */
export const DATABASE_READ_MS = 500;

/** The moderation figures of one scrape, or null when the database did not give them in time. */
type DatabaseReading = {
  queueDepth: number;
  blocklistSize: number;
  resumable: { open: number; bytes: number } | null;
} | null;

function readDatabase(moderation: ModerationGauges): Promise<DatabaseReading> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<null>((resolve) => {
    timer = setTimeout(resolve, DATABASE_READ_MS, null);
  });
  const read = Promise.all([
    moderation.queueDepth(),
    moderation.blocklistSize(),
    moderation.resumable?.() ?? null,
  ]).then(
    ([queueDepth, blocklistSize, resumable]) => ({ queueDepth, blocklistSize, resumable }),
    () => null,
  );
  return Promise.race([read, deadline]).finally(() => clearTimeout(timer));
}

/**
 * Where the gauges read from at scrape time: the media pool, the moderation figures (the database), and whether
 * Redis is connected (`redisUp`; absent when Redis is not configured).
 */
export function createMetrics(
  opts: { pool?: () => PoolGauges; moderation?: ModerationGauges; redisUp?: () => boolean } = {},
): Metrics {
  const registry = new Registry();
  // Process CPU/memory, GC, and event-loop lag (nodejs_eventloop_lag_*), sampled every 10 ms.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 });
  const { pool, moderation, redisUp } = opts;
  // One database reading per scrape, shared by the gauges that show it (prom-client collects them side by side).
  let reading: { at: number; value: Promise<DatabaseReading> } | null = null;
  const databaseReading = (): Promise<DatabaseReading> | null => {
    if (!moderation) return null;
    const now = Date.now();
    if (!reading || now - reading.at > DATABASE_READ_MS) reading = { at: now, value: readDatabase(moderation) };
    return reading.value;
  };
  // Per (method, route, status): the request count and the latency histogram's sum, count and buckets kept as plain
  // numbers and handed to prom-client at scrape time. prom-client re-validates and re-hashes labels on every
  // inc()/observe() (a bound child too), which on every request cost more than the rest of the bookkeeping together.
  type Series = {
    labels: { method: string; route: string; status: string };
    n: number;
    sum: number;
    /** Per LATENCY_BUCKETS bound, the observations that fell in it (above the last: counted in `n` only). */
    buckets: number[];
  };
  const series: Series[] = [];
  const byRoute = new Map<string, Map<string, Map<number, Series>>>();
  // The feed cache's outcomes, counted likewise: a cached page is the hottest read there is.
  const cacheReads: Record<FeedCacheOutcome, number> = { hit: 0, recount: 0, miss: 0 };
  const m: Metrics = {
    registry,
    httpRequests: new Counter({
      name: 'pixvote_http_requests_total',
      help: 'HTTP requests by route pattern, method and status',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
      collect() {
        this.reset();
        for (const s of series) this.inc(s.labels, s.n);
      },
    }),
    httpDuration: new Histogram({
      name: 'pixvote_http_request_duration_seconds',
      help: 'HTTP request latency by route pattern, method and status',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registers: [registry],
      collect() {
        setLatencyHistogram(this, series);
      },
    }),
    poolThreads: new Gauge({
      name: 'pixvote_pool_threads',
      help: 'Media worker threads',
      registers: [registry],
      collect() {
        if (pool) this.set(pool().threads);
      },
    }),
    poolQueueDepth: new Gauge({
      name: 'pixvote_pool_queue_depth',
      help: 'Media tasks waiting for a worker thread',
      registers: [registry],
      collect() {
        if (pool) this.set(pool().queueSize);
      },
    }),
    poolUtilization: new Gauge({
      name: 'pixvote_pool_utilization',
      help: "Share of the media worker threads' time spent running tasks over the last 10 s (0-1)",
      registers: [registry],
      // Across PROCESSES>1 (the cluster's aggregated /metrics): the mean of the processes, still a 0-1 share.
      aggregator: 'average',
      collect() {
        if (pool) this.set(pool().utilization);
      },
    }),
    poolBusySeconds: new Counter({
      name: 'pixvote_pool_busy_seconds_total',
      help: 'Thread-seconds the media worker threads spent running tasks (its rate / threads = utilization)',
      registers: [registry],
      collect() {
        this.reset();
        if (pool) this.inc(pool().busySeconds ?? 0);
      },
    }),
    poolQueueWait: new Histogram({
      name: 'pixvote_pool_queue_wait_seconds',
      help: 'Time a media task waited for a worker thread',
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    stageDuration: new Histogram({
      name: 'pixvote_pipeline_stage_duration_seconds',
      help: 'Time per image pipeline stage (hash = receiving the upload while hashing it)',
      labelNames: ['stage'],
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    uploadsAccepted: new Counter({
      name: 'pixvote_uploads_accepted_total',
      help: 'Uploads stored, by type',
      labelNames: ['type'],
      registers: [registry],
    }),
    uploadsRejected: new Counter({
      name: 'pixvote_uploads_rejected_total',
      help: 'Uploads refused, by reason (an error code, or duplicate)',
      labelNames: ['reason'],
      registers: [registry],
    }),
    rateLimited: new Counter({
      name: 'pixvote_rate_limit_rejections_total',
      help: 'Requests refused with 429, by limit',
      labelNames: ['limit'],
      registers: [registry],
    }),
    feedCache: new Counter({
      name: 'pixvote_feed_cache_reads_total',
      help: 'Cacheable feed pages answered, by outcome: hit, recount (cached, counts read again) or miss (built)',
      labelNames: ['outcome'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [outcome, n] of Object.entries(cacheReads)) if (n) this.inc({ outcome }, n);
      },
    }),
    detectorBackend: new Gauge({
      name: 'pixvote_detector_backend_info',
      help: 'The TensorFlow.js backend the person detector runs on (1 for the backend in use)',
      labelNames: ['backend'],
      registers: [registry],
    }),
    reportsReceived: new Counter({
      name: 'pixvote_reports_received_total',
      help: 'Reports of uploads received (a repeated report of the same upload by the same user is not counted)',
      registers: [registry],
    }),
    moderationActions: new Counter({
      name: 'pixvote_moderation_actions_total',
      help: 'Moderation actions by kind (approve, hold, remove, auto_hold, ban, unban, block, unblock)',
      labelNames: ['action'],
      registers: [registry],
    }),
    resumableUploads: new Counter({
      name: 'pixvote_resumable_uploads_total',
      help:
        'Resumable (tus) uploads by event: opened, completed, expired (incomplete, swept), orphan_swept (partial ' +
        'bytes with no upload left, swept)',
      labelNames: ['event'],
      registers: [registry],
    }),
    blockedUploads: new Counter({
      name: 'pixvote_blocked_uploads_total',
      help: "Uploads refused because they match the moderators' blocklist",
      registers: [registry],
    }),
    connectionsRefused: new Counter({
      name: 'pixvote_connections_refused_total',
      help: 'Connections refused because their client address held MAX_CONNECTIONS_PER_IP open connections',
      registers: [registry],
    }),
    voteRingsQueued: new Counter({
      name: 'pixvote_vote_rings_queued_total',
      help: 'Vote rings the detector put in the moderation queue',
      registers: [registry],
    }),
    voteRingActions: new Counter({
      name: 'pixvote_vote_ring_actions_total',
      help: "Moderators' actions on vote rings (void, dismiss, restore)",
      labelNames: ['action'],
      registers: [registry],
    }),
    voteRingVotesVoided: new Counter({
      name: 'pixvote_vote_ring_votes_voided_total',
      help: 'Votes deleted by voiding vote rings',
      registers: [registry],
    }),
    webhookLag: new Histogram({
      name: 'pixvote_webhook_delivery_lag_seconds',
      help: 'Time from an event to its delivery (2xx answer), retries included',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 1800, 3600, 6 * 3600, 24 * 3600],
      registers: [registry],
    }),
    webhookAttempts: new Counter({
      name: 'pixvote_webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome: delivered, retried (a failure, tried again later) or given_up',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    webhookSending: new Gauge({
      name: 'pixvote_webhook_deliveries_sending',
      help: 'Webhook requests in flight in this process',
      registers: [registry],
    }),
    webhookPending: new Gauge({
      name: 'pixvote_webhook_deliveries_pending',
      help: 'Webhook deliveries queued and not yet delivered or given up (all processes; refreshed every 15 s)',
      registers: [registry],
      aggregator: 'max',
    }),
    webhookBackingOff: new Gauge({
      name: 'pixvote_webhook_endpoints_backing_off',
      help: 'Webhook endpoints whose circuit is open: the last attempt failed, the next waits for the retry schedule',
      registers: [registry],
      aggregator: 'max',
    }),
    recordFeedCache(outcome) {
      cacheReads[outcome]++;
    },
    recordRequest(method, route, status, seconds) {
      // Found by route, method and status in turn: strings the router and the HTTP parser hold (their hashes are
      // computed once), where one key made per request would be hashed anew every time.
      let byMethod = byRoute.get(route);
      if (!byMethod) byRoute.set(route, (byMethod = new Map<string, Map<number, Series>>()));
      let byStatus = byMethod.get(method);
      if (!byStatus) byMethod.set(method, (byStatus = new Map<number, Series>()));
      let s = byStatus.get(status);
      if (!s) {
        const labels = { method, route, status: String(status) };
        s = { labels, n: 0, sum: 0, buckets: LATENCY_BUCKETS.map(() => 0) };
        byStatus.set(status, s);
        series.push(s);
      }
      s.n++;
      s.sum += seconds;
      // As prom-client buckets it: the first bound the value does not exceed.
      for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
        if (seconds <= LATENCY_BUCKETS[i]!) {
          s.buckets[i]!++;
          break;
        }
      }
    },
  };
  // A failed reading leaves these at their last figures; pixvote_dependency_up says they are stale.
  new Gauge({
    name: 'pixvote_moderation_queue_depth',
    help: 'Open moderation queue items: held, reported or person-flagged uploads',
    registers: [registry],
    aggregator: 'max',
    async collect() {
      const r = await databaseReading();
      if (r) this.set(r.queueDepth);
    },
  });
  new Gauge({
    name: 'pixvote_blocklist_entries',
    help: 'Entries on the blocklist',
    registers: [registry],
    aggregator: 'max',
    async collect() {
      const r = await databaseReading();
      if (r) this.set(r.blocklistSize);
    },
  });
  new Gauge({
    name: 'pixvote_resumable_open',
    help: 'Resumable (tus) uploads still receiving bytes (created, not complete, not expired)',
    registers: [registry],
    aggregator: 'max',
    async collect() {
      const r = await databaseReading();
      if (r?.resumable) this.set(r.resumable.open);
    },
  });
  new Gauge({
    name: 'pixvote_resumable_bytes',
    help: 'Bytes held for resumable uploads still receiving (partial files or objects)',
    registers: [registry],
    aggregator: 'max',
    async collect() {
      const r = await databaseReading();
      if (r?.resumable) this.set(r.resumable.bytes);
    },
  });
  new Gauge({
    name: 'pixvote_dependency_up',
    help:
      'Whether a dependency answered at this scrape: database (the moderation figures read within ' +
      `${DATABASE_READ_MS} ms), redis (connected; 0 while the in-process fallbacks serve)`,
    labelNames: ['dependency'],
    registers: [registry],
    // Across PROCESSES>1: down when any process finds it down.
    aggregator: 'min',
    async collect() {
      const database = databaseReading();
      if (database) this.set({ dependency: 'database' }, (await database) ? 1 : 0);
      if (redisUp) this.set({ dependency: 'redis' }, redisUp() ? 1 : 0);
    },
  });
  return m;
}
