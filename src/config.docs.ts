/**
 * What each environment variable of the schema in config.ts does, one entry per variable: docs/configuration.md is
 * generated from the schema (its defaults) and these (`npm run docs:config`, scripts/docs-config.ts), and
 * test/unit/config-docs.test.ts fails when a variable has no entry here or the page differs from what the script
 * writes. Adding a variable: describe it here (markdown, one table cell: no line breaks, no `|`), then run the script.
 * `default` is written only where the schema has none (a computed default) or says more than the schema's value.
 */
export interface VariableDoc {
  /** Markdown for the default column; without it, the schema's own default (`value`, or "empty"). */
  readonly default?: string;
  readonly meaning: string;
}

/** The server's variables (config.ts's schema), in the order the page lists them. */
export const VARIABLE_DOCS: Readonly<Record<string, VariableDoc>> = {
  PORT: {
    meaning: 'listen port (`0`: any free port)',
  },
  HOST: {
    meaning: 'listen address: an IPv4 or IPv6 address (`127.0.0.1`, `::`; no brackets) or a host name (`localhost`)',
  },
  DATA_DIR: {
    meaning:
      'embedded database file, media, staging and temp files (each gateway process sets its `TMPDIR` to its ' +
      'own `tmp/<instance>` there, removed when it stops or, after a crash, by the next sweep). A relative path ' +
      "is taken from the checkout's folder (where `npm start` runs), not the current directory, by the server and " +
      '`pixvote admin`/`media` alike',
  },
  MEDIA_STORE: {
    default: 'unset → `$DATA_DIR/media` on local disk',
    meaning:
      '`s3://BUCKET[/PREFIX]`: media on S3-compatible object storage; endpoint, region and credentials ' +
      "from the AWS SDK's own variables (`AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`, `AWS_REGION`, " +
      '`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`), path-style addressing when an endpoint is set ' +
      '(see [Several machines](scaling.md#several-machines))',
  },
  MEDIA_REDIRECT: {
    meaning: 'with object storage: image GETs answer 302 to a presigned URL valid 300 s instead of streaming',
  },
  MEDIA_SWEEP_GRACE: {
    meaning:
      'with object storage: objects no row references are removed by the sweep once older than this; also the ' +
      'partial bytes of resumable uploads whose row is gone (on disk or in the bucket)',
  },
  MEDIA_STORE_TIMEOUT: {
    meaning:
      'with object storage: a request to the store that waits longer (to connect, or for an answer) ' +
      'fails: 503 `storage_unavailable`. An image GET or HEAD waits one timeout in all, retries ' +
      'included',
  },
  DATABASE_URL: {
    default: 'unset → SQLite at `$DATA_DIR/app.db`',
    meaning: '`postgres://…` selects PostgreSQL',
  },
  REDIS_URL: {
    default: 'unset → in-process limits and caches',
    meaning: '`redis://…` shares them across processes',
  },
  REDIS_PREFIX: {
    meaning: 'prefix of every Redis key (several deployments on one Redis)',
  },
  JWT_SECRET: {
    default: 'generated once into `$DATA_DIR/jwt-secret`',
    meaning: 'at least 32 characters when set; required when `NODE_ENV=production`',
  },
  NODE_ENV: {
    meaning: '`production` requires `JWT_SECRET`',
  },
  JWT_TTL: {
    meaning: 'JWT and cookie lifetime (`90s`, `15m`, `24h`, `7d`)',
  },
  WORKERS: {
    default: 'available cores ÷ `PROCESSES` (≥ 1)',
    meaning: 'media worker threads per process: the processes on one machine share its cores',
  },
  WORKER_QUEUE: {
    default: '`4 × WORKERS`',
    meaning: 'queued media tasks before 503 `busy`',
  },
  PROCESSES: {
    meaning: 'gateway processes `npm start` runs on one port (node:cluster)',
  },
  PROCESS_RESTART_DELAY_MS: {
    meaning:
      'with `PROCESSES` > 1, the wait (ms, ≤ 15000) before a dead gateway process is replaced; it doubles while ' +
      'its slot keeps dying (up to 15 s), and 5 deaths of one slot within 60 s stop the service (exit 1)',
  },
  HUMAN_POLICY: {
    meaning:
      '`reject`, `flag` (store score, accept, put in the moderation queue), `hold` (accept held until a ' +
      'moderator approves) or `off`',
  },
  AI_POLICY: {
    meaning:
      'what an image whose provenance marker (C2PA manifest, IPTC `DigitalSourceType`) says generated gets: ' +
      '`label` (accept, labelled "Made with AI"), `hold` (accept held until a moderator approves; modlog ' +
      '`auto_hold` naming the marker), `reject` (400 `ai_generated`, nothing stored) or `off` (markers neither ' +
      'stored nor acted on); see [Provenance](provenance.md)',
  },
  HUMAN_THRESHOLD: {
    default: '`0.52`; `0.15` with `HUMAN_SECOND_LOOK=off` (calibrated: [The person filter](person-filter.md))',
    meaning:
      'the "sure" person score: at or above it a person is "detected" (refused under `reject`, flagged ' +
      'or held under `flag`/`hold`; see [The person filter](person-filter.md))',
  },
  HUMAN_REVIEW_THRESHOLD: {
    default:
      '`0.3`; `0.15` with `HUMAN_SECOND_LOOK=off` (so no gray zone there by default; never above `HUMAN_THRESHOLD`)',
    meaning:
      'under `reject`, the "unsure" score: from here up to `HUMAN_THRESHOLD` an upload is accepted ' +
      '**held** for a moderator (201, `moderation: "held"`, a person flag in the queue with the ' +
      "detector's boxes) instead of refused. Equal to `HUMAN_THRESHOLD` turns this gray zone off; " +
      'above it the start fails naming it (see [The person filter](person-filter.md))',
  },
  HUMAN_INPUT_SIZE: {
    meaning:
      "long side of the detector's first look, a multiple of 32 from 128 to 1024: 320 reads the thumb " +
      'as it is (the calibrated figures are for 320)',
  },
  HUMAN_SECOND_LOOK: {
    meaning:
      '`boxes`: where the first look is unsure (score under 0.55), look again, closer, at each of its ' +
      'best 3 boxes (crops of the medium variant at 320 px); its score decides. Finds every held-out ' +
      'person with no false positive. `off`: the first look alone, about a quarter of the detection ' +
      'cost, misses small people (see [The person filter](person-filter.md))',
  },
  HUMAN_RUNTIME: {
    meaning:
      "where the detector's model runs: `onnx` (onnxruntime-node, native), `tfjs` (TensorFlow.js: " +
      'tfjs-node if installed, else wasm SIMD; 3–4× the CPU), `auto`: onnx where onnxruntime-node ' +
      'loads, else tfjs. The scores are the same',
  },
  C2PA_READER: {
    meaning:
      '`auto`: C2PA manifests found in an upload are validated by `@contentauth/c2pa-node` (an optional ' +
      'dependency) where it loads; `off`, or where it does not load: a manifest is recorded "present, not verified" ' +
      '(see [Provenance](provenance.md))',
  },
  C2PA_TRUST_ANCHORS: {
    default: 'unset: no trust list',
    meaning:
      "a PEM file of the certificates a manifest's signer must chain to for `trusted: true`; unset: signers are " +
      'not checked against a list (`trusted: null`). An untrusted signer never makes a manifest invalid',
  },
  NEAR_DUPLICATE_DISTANCE: {
    meaning: 'max Hamming distance of 64-bit perceptual hashes; `-1` turns near matching off',
  },
  NEAR_DUPLICATE_INDEX: {
    meaning:
      'or `sqlite-vec` (SQLite only): how near duplicates are looked up (see [Duplicates](architecture.md#duplicates))',
  },
  FETCH_ALLOW_PRIVATE: {
    meaning: 'allow `image_url` to loopback/private addresses (tests only)',
  },
  FETCH_TIMEOUT_MS: {
    meaning: 'the whole fetch of an `image_url`',
  },
  WEBHOOK_TIMEOUT_MS: {
    meaning: 'one webhook delivery attempt (connect, send, answer); no answer in time is a failed attempt',
  },
  WEBHOOK_INTERVAL_MS: {
    meaning: 'how often every gateway process looks for webhook deliveries that are due',
  },
  WEBHOOK_RETRY_SCHEDULE: {
    meaning:
      "waits between a delivery's attempts (durations, or `250ms`); after the last attempt fails (27.5 " +
      'h by default) the delivery is given up and its endpoint disabled until its owner enables it',
  },
  ADMIN_USERNAMES: {
    default: 'empty',
    meaning:
      'comma-separated usernames promoted to admin at startup if they already exist; never grants on ' +
      'register (see [Admins](moderation.md#admins): `pixvote admin grant USER`)',
  },
  RATE_LIMIT_AUTH: {
    meaning: 'per client IP (an IPv6 client by its /64), every `POST /api/auth`',
  },
  RATE_LIMIT_UPLOAD: {
    meaning: 'per user (idempotent replays spend nothing)',
  },
  RATE_LIMIT_VOTE: {
    meaning: 'per user',
  },
  RATE_LIMIT_GENERAL: {
    meaning:
      'per client IP, every other route (not `/healthz`, `/readyz`, `/metrics`, nor the media below), ' +
      'the pages included',
  },
  RATE_LIMIT_MEDIA: {
    meaning:
      "per client IP, image variants (`GET /api/image/{id}`) and the pages' static assets (`/assets/*`, " +
      '`/favicon.ico`), which spend no `RATE_LIMIT_GENERAL`',
  },
  RATE_LIMIT_REPORT: {
    meaning: 'reports of uploads, per user (a repeated report of the same upload spends one too)',
  },
  REPORT_HOLD_THRESHOLD: {
    meaning:
      'distinct *trusted* users (see the next three) with open reports on an upload that hold it at ' +
      'once (modlog `auto_hold`); `0` turns automatic holds off',
  },
  REPORT_TRUST_MIN_AGE: {
    meaning:
      'report trust: a reporter counts toward `REPORT_HOLD_THRESHOLD` only once the account is this old ' +
      '(`90s`, `15m`, `24h`, `7d`; `0`: any age)…',
  },
  REPORT_TRUST_MIN_UPLOADS: {
    meaning: '…and has at least this many accepted uploads (visible: not held, not removed)…',
  },
  REPORT_TRUST_MIN_VOTES: {
    meaning:
      '…or at least this many votes. A leg set to `0` is off; with both off, age alone decides; all ' +
      'three `0`: every reporter counts (see [Moderation](moderation.md))',
  },
  VOTE_MIN_ACCOUNT_AGE: {
    default: '`0` (none)',
    meaning:
      'a duration: younger accounts cannot vote (403 `account_too_new`, naming when they can); taking a ' +
      'vote back stays allowed',
  },
  REPORT_MIN_ACCOUNT_AGE: {
    default: '`0` (none)',
    meaning: 'a duration: younger accounts cannot report (403 `account_too_new`)',
  },
  MODERATION_JOB_PAUSE_MS: {
    meaning:
      "pause (ms, ≤ 5000, at most half the job's lease) between the steps of a durable moderation job (20 " +
      "removals each): spreads a large ban's removal so it never crowds out requests",
  },
  MODERATION_JOB_LEASE_MS: {
    meaning:
      'how long (ms, 100 to 600000) a process holds a durable moderation job between two of its steps: a ' +
      'process that dies mid-job leaves it to the others once this has passed (they look every 5 s, or every ' +
      'lease when shorter)',
  },
  VOTE_RING_INTERVAL: {
    meaning:
      'how often each process runs the vote-ring detector over the recent votes (a duration; `0` turns ' +
      'it off); see [Moderation](moderation.md) and [Vote rings](vote-rings.md)',
  },
  VOTE_RING_WINDOW: {
    meaning: 'how far back the detector reads votes',
  },
  VOTE_RING_MIN_ACCOUNTS: {
    meaning: 'the fewest accounts a vote ring has (2–1000)',
  },
  VOTE_RING_MIN_SCORE: {
    meaning:
      'the score (0–6) a group needs to be queued (a third of it for five accounts or more all linked by one ' +
      "network: one operator's, also when they are part of a larger group and voted in one session); tuned in " +
      '`bench/vote-rings.md` (lower finds more rings and accuses more honest voters)',
  },
  VOTE_FACTS_RETENTION: {
    meaning:
      'how long the facts the vote-ring detector reads are kept: the keyed hash of the sign-up and vote networks ' +
      '(IPv4 /24, IPv6 /48; never the address) and the user-agent family; at least `VOTE_RING_WINDOW`. See ' +
      '[Vote rings](vote-rings.md)',
  },
  VOTE_RING_RESTORE_DAYS: {
    meaning:
      "days during which a voided ring's votes are kept (out of every count) and `restore` puts them back; " +
      'after that they are deleted',
  },
  BLOCKLIST_DISTANCE: {
    meaning:
      "max Hamming distance (0–16) of an upload's perceptual hash to a blocklisted one for 400 `blocked_content`",
  },
  BLOCKLIST_PDQ_DISTANCE: {
    meaning:
      "max Hamming distance (0–128) of an upload's PDQ to a blocklisted PDQ for 400 `blocked_content`; " +
      'PDQ hashes of quality under 50 are never matched (see [Moderation](moderation.md))',
  },
  TRUST_PROXY: {
    meaning: 'trust `X-Forwarded-For` / `-Proto` / `-Host` (only behind your own proxy)',
  },
  METRICS_TOKEN: {
    default: 'unset (open)',
    meaning:
      'when set (16+ visible characters, e.g. `openssl rand -hex 32`), `/metrics` needs `Authorization: ' +
      'Bearer <METRICS_TOKEN>` and answers 401 `unauthorized` without it',
  },
  RESUMABLE_MAX_OPEN: {
    meaning:
      'resumable (tus) uploads one user may have open (created, not yet complete, not expired); creating one more ' +
      'is 429 `rate_limited`',
  },
  RESUMABLE_TTL: {
    meaning:
      'an incomplete resumable upload expires this long after its creation: 404 afterwards, its partial bytes ' +
      'removed by the housekeeping sweep (a complete one keeps its result this long after completion)',
  },
  MAX_CONNECTIONS_PER_IP: {
    meaning:
      'open connections one client address may hold (an IPv6 client by its /64), per process; past it a ' +
      'new one gets 503 `busy` and is closed (logged once a minute per address, counted in ' +
      "`pixvote_connections_refused_total`). Counted per socket peer: behind a proxy, the proxy's (see " +
      '[Running at scale](scaling.md)). `0` turns the cap off',
  },
  LOG_LEVEL: {
    meaning:
      'JSON logs to stdout (`silent` … `trace`): `info` logs start-up, shutdown, failed (4xx/5xx) and ' +
      'slow (≥ 1 s) requests; `debug` every request',
  },
  SHUTDOWN_GRACE_MS: {
    meaning: 'how long in-flight requests may finish after SIGTERM',
  },
  DATABASE_WAIT_MS: {
    meaning:
      'how long start-up keeps retrying a database that does not answer yet (PostgreSQL still starting: ' +
      'backoff 250 ms → 5 s, each retry logged); then exit 1 with one line naming `DATABASE_URL` and ' +
      'why. `0`: fail at once',
  },
  SQLITE_READERS: {
    meaning:
      'SQLite only: worker threads per process that run the listings and the other long reads (tag ' +
      "suggestions, the moderation queue, the modlog, a profile's counts), each on a read-only " +
      'connection to the same file (WAL), so the event loop only awaits their rows; writes stay on the ' +
      'main connection and a read sees every write committed before it. `0` runs them on the event loop ' +
      '(a deep listing then holds every other request while it runs: see [Benchmarks](benchmarks.md))',
  },
  PG_READERS: {
    meaning:
      'PostgreSQL only: connections per process, in a pool of their own, that run the same long reads ' +
      'as `SQLITE_READERS`. When all are busy a long read waits for one (at most 3 s, then 503 `busy`), ' +
      'so no more than this many run at once and the main pool (10 connections) stays free for writes ' +
      'and short reads. A deep listing keeps a PostgreSQL backend busy on the CPU: on a machine that ' +
      'also runs PostgreSQL, 16 of them at once kept `/healthz` waiting (see ' +
      '[Benchmarks](benchmarks.md)). Raise it when PostgreSQL has cores of its own to spare; `0` runs ' +
      'them on the main pool',
  },
  MODELS_DIR: {
    default: "the checkout's `models/`",
    meaning: 'where the person-detector weights are kept',
  },
};

/** Variables something other than the schema reads (or set for something else): the page's second table. */
export const OTHER_VARIABLE_DOCS: Readonly<Record<string, VariableDoc & { readonly readBy: string }>> = {
  MALLOC_ARENA_MAX: {
    default: '`2` (set by `npm start`)',
    readBy: 'glibc (`npm start` and the image set it)',
    meaning:
      "glibc malloc arenas: 2 keeps a worker's resident memory ~40 % lower for ~6 % fewer images/s; " +
      'unset it (or raise it) to trade back',
  },
  AWS_ENDPOINT_URL_S3: {
    readBy: 'config.ts, with `MEDIA_STORE`',
    meaning: 'the S3-compatible server to use (path-style addressing); else `AWS_ENDPOINT_URL`, else AWS S3 itself',
  },
  AWS_ENDPOINT_URL: {
    readBy: 'config.ts, with `MEDIA_STORE`',
    meaning: 'the endpoint for every AWS service, used when `AWS_ENDPOINT_URL_S3` is unset',
  },
  AWS_REGION: {
    readBy: 'config.ts, with `MEDIA_STORE`',
    meaning: "the object store's region (else `AWS_DEFAULT_REGION`, else what the AWS SDK finds)",
  },
  AWS_DEFAULT_REGION: {
    readBy: 'config.ts, with `MEDIA_STORE`',
    meaning: 'the region when `AWS_REGION` is unset',
  },
  AWS_ACCESS_KEY_ID: {
    readBy: 'config.ts, with `MEDIA_STORE`',
    meaning:
      "with `AWS_SECRET_ACCESS_KEY` (and `AWS_SESSION_TOKEN`): the object store's credentials; unset, " +
      "the AWS SDK's default chain (instance roles, profiles)",
  },
  AWS_SECRET_ACCESS_KEY: {
    readBy: 'config.ts, with `MEDIA_STORE`',
    meaning: 'the secret of `AWS_ACCESS_KEY_ID`',
  },
  AWS_SESSION_TOKEN: {
    readBy: 'config.ts, with `MEDIA_STORE`',
    meaning: "a temporary session's token, with the two above",
  },
  NPM_CONFIG_REGISTRY: {
    default: "npm's (`npm_config_registry` when run by npm)",
    readBy: '`npm run fetch-models` and the first start',
    meaning:
      "the npm registry the detector's weights are fetched from (the package `@vladmandic/human`), " +
      'verified against `models/manifest.json` whatever the registry',
  },
  PIXVOTE_URL: {
    readBy: 'the `pixvote` command',
    meaning: "the server to talk to, instead of the saved login's (`--url` wins); see [Clients](clients.md)",
  },
  PIXVOTE_TOKEN: {
    readBy: 'the `pixvote` command',
    meaning: "an API token to use instead of the saved login's (`--token` wins)",
  },
  XDG_CONFIG_HOME: {
    default: '`~/.config`',
    readBy: 'the `pixvote` command',
    meaning:
      'where `pixvote login` saves its token (`pixvote/config.json`, mode 0600) and `pixvote upload` its resume files',
  },
};
