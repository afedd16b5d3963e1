/**
 * The environment, validated once into a frozen, typed Config.
 * Every bad variable is reported in one error, e.g. `WORKERS=abc: expected a positive integer`.
 */
import { availableParallelism } from 'node:os';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import { parseDuration, parseRate, type Rate } from './domain/durations.ts';

export type { Rate };
import {
  CALIBRATED_BOXES_THRESHOLD,
  CALIBRATED_FIRST_LOOK_REVIEW_THRESHOLD,
  CALIBRATED_FIRST_LOOK_THRESHOLD,
  CALIBRATED_REVIEW_THRESHOLD,
  type HumanPolicy,
} from './domain/person-policy.ts';
import type { AiPolicy } from './domain/uploads/ai-label.ts';
import { pathProblem, reasonOf } from './path-problem.ts';
import { resolveDataDir } from './data-dir.ts';
import { DEFAULT_MODELS_DIR } from './workers/detector/model-files.fetch.ts';
export type { HumanPolicy };

export interface Config {
  readonly nodeEnv: string;
  readonly port: number;
  readonly host: string;
  /** Absolute: a relative DATA_DIR (default `./data`) is taken from the checkout's folder, not the cwd. */
  readonly dataDir: string;
  /**
   * Where image variants live: null for `$DATA_DIR/media` on local disk, else an S3 bucket and key prefix
   * (`MEDIA_STORE=s3://BUCKET[/PREFIX]`; endpoint, region and credentials are the AWS SDK's own variables).
   */
  readonly mediaStore: Readonly<S3Settings> | null;
  /** With object storage: image GETs answer 302 to a short-lived presigned URL. */
  readonly mediaRedirect: boolean;
  /** With object storage: objects no row references are swept once older than this (upload in flight before). */
  readonly mediaSweepGraceSeconds: number;
  /** With object storage: how long a request may wait on the store (to connect, or in silence) before it fails. */
  readonly mediaStoreTimeoutMs: number;
  readonly databaseUrl: string | null;
  readonly redisUrl: string | null;
  /** Prefix for every Redis key, so several deployments (or test runs) can share one Redis. */
  readonly redisPrefix: string;
  readonly jwtSecret: string;
  readonly jwtTtlSeconds: number;
  readonly workers: number;
  readonly workerQueue: number;
  readonly humanPolicy: HumanPolicy;
  /** AI_POLICY: what an upload whose provenance marker says generated gets (ai-label.ts). */
  readonly aiPolicy: AiPolicy;
  /** HUMAN_THRESHOLD: the "sure" person score (refused under `reject`). */
  readonly humanThreshold: number;
  /** HUMAN_REVIEW_THRESHOLD (≤ humanThreshold): under `reject`, from here up to the sure score, held for review. */
  readonly humanReviewThreshold: number;
  /** Long side of the person detector's input: 320 (the thumb, no resize) or larger for more accuracy. */
  readonly humanInputSize: number;
  /** HUMAN_SECOND_LOOK: `boxes` looks closer at each box of an unsure first look. */
  readonly humanSecondLook: 'off' | 'boxes';
  /** HUMAN_RUNTIME: where the detector's model runs; `auto` is onnxruntime-node where it loads, else TF.js. */
  readonly humanRuntime: 'auto' | 'onnx' | 'tfjs';
  /** C2PA_READER: `auto` validates C2PA manifests with @contentauth/c2pa-node where it loads; `off` never loads it. */
  readonly c2paReader: 'auto' | 'off';
  /** C2PA_TRUST_ANCHORS: the PEM text of the file it names (the signers' trust anchors), or null. */
  readonly c2paTrustAnchors: string | null;
  readonly nearDuplicateDistance: number;
  readonly nearDuplicateIndex: 'multi-index-hashing' | 'sqlite-vec';
  /** Distinct trusted reporters that hold an upload automatically; 0 turns it off. */
  readonly reportHoldThreshold: number;
  /** Vote-ring detection (API.md Moderation, "Vote rings"): how often the job runs (ms; 0: off), over which window. */
  readonly voteRings: Readonly<{
    intervalMs: number;
    windowMs: number;
    minAccounts: number;
    minScore: number;
    /** VOTE_FACTS_RETENTION: how long the client facts (network hash, user-agent family) are kept (ms). */
    factsRetentionMs: number;
    /** VOTE_RING_RESTORE_DAYS: how long a void can be restored, and its votes are kept for it (ms). */
    restoreMs: number;
  }>;
  /** Which reporters count toward it (REPORT_TRUST_MIN_AGE, _MIN_UPLOADS, _MIN_VOTES). */
  readonly reportTrust: Readonly<{ minAgeSeconds: number; minUploads: number; minVotes: number }>;
  /** VOTE_MIN_ACCOUNT_AGE / REPORT_MIN_ACCOUNT_AGE in seconds: younger accounts cannot vote / report (0: none). */
  readonly voteMinAccountAgeSeconds: number;
  readonly reportMinAccountAgeSeconds: number;
  /** MODERATION_JOB_PAUSE_MS: a pause between the steps (20 removals) of a durable moderation job (0: none). */
  readonly moderationJobPauseMs: number;
  /** MODERATION_JOB_LEASE_MS: a claimed job's lease; a process killed mid-job leaves it to others once it expires. */
  readonly moderationJobLeaseMs: number;
  /** Max Hamming distance of a perceptual hash to a blocklisted one. */
  readonly blocklistDistance: number;
  /** BLOCKLIST_PDQ_DISTANCE: max Hamming distance of a PDQ (quality ≥ 50) to a blocklisted one. */
  readonly blocklistPdqDistance: number;
  readonly fetchAllowPrivate: boolean;
  readonly fetchTimeoutMs: number;
  /**
   * Webhook deliveries: each request's timeout (WEBHOOK_TIMEOUT_MS), how often every process looks for due ones
   * (WEBHOOK_INTERVAL_MS), and the waits between attempts (WEBHOOK_RETRY_SCHEDULE, ms; after the last one fails the
   * delivery is given up and its endpoint disabled).
   */
  readonly webhooks: Readonly<{ timeoutMs: number; intervalMs: number; retryScheduleMs: readonly number[] }>;
  readonly adminUsernames: ReadonlySet<string>;
  readonly rateLimits: Readonly<{ auth: Rate; upload: Rate; vote: Rate; general: Rate; media: Rate; report: Rate }>;
  readonly trustProxy: boolean;
  /** Bearer token `GET /metrics` requires; null leaves it open. */
  readonly metricsToken: string | null;
  /** Open connections one client address (socket peer; IPv6 by its /64) may hold; 0: no cap. */
  readonly maxConnectionsPerIp: number;
  /** RESUMABLE_MAX_OPEN: resumable uploads one user may have open at once. */
  readonly resumableMaxOpen: number;
  /** RESUMABLE_TTL: an incomplete resumable upload expires after this (ms). */
  readonly resumableTtlMs: number;
  readonly logLevel: string;
  readonly shutdownGraceMs: number;
  /** How long start-up keeps retrying a database that does not answer yet (0: fail at once). */
  readonly databaseWaitMs: number;
  /** SQLite: reader threads that run listings and other long reads off the event loop (0: on it). */
  readonly sqliteReaders: number;
  /** PostgreSQL: connections of their own for listings and other long reads, at most this many at once (0: none). */
  readonly pgReaders: number;
  readonly modelsDir: string;
  /** Gateway processes started by `npm start` (1 = no cluster). */
  readonly processes: number;
  /** PROCESS_RESTART_DELAY_MS: the first wait before a dead gateway process is replaced (doubling, up to 15 s). */
  readonly processRestartDelayMs: number;
}

/** Object storage as MEDIA_STORE and the AWS SDK's variables name it (null: what the SDK finds by itself). */
export interface S3Settings {
  bucket: string;
  /** Key prefix, empty or ending in `/`. */
  prefix: string;
  /** AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL: an S3-compatible server, addressed path-style. */
  endpoint: string | null;
  region: string | null;
  /** AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN); null: the SDK's default chain. */
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | null;
}

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

const positiveInt = z
  .string()
  .regex(/^\d+$/, 'expected a positive integer')
  .transform(Number)
  .refine((n) => n >= 1 && Number.isSafeInteger(n), 'expected a positive integer');
const port = z
  .string()
  .regex(/^\d+$/, 'expected a port number 0-65535')
  .transform(Number)
  .refine((n) => n <= 65535, 'expected a port number 0-65535');
const bool = z.enum(['true', 'false', '1', '0'], 'expected true or false').transform((v) => v === 'true' || v === '1');
const duration = z.string().transform((v, ctx) => {
  const s = parseDuration(v);
  if (s === null) ctx.addIssue({ code: 'custom', message: 'expected a duration like 90s, 15m, 24h or 7d' });
  return s ?? 0;
});
/** A duration that may also be 0 (`0`, `0s`, `0h`…): for rules that 0 turns off. */
const durationOrZero = z.string().transform((v, ctx) => {
  const s = /^\s*0+\s*[smhd]?\s*$/.test(v) ? 0 : parseDuration(v);
  if (s === null) ctx.addIssue({ code: 'custom', message: 'expected a duration like 0, 90s, 15m, 24h or 7d' });
  return s ?? 0;
});
const nonNegativeInt = z
  .string()
  .regex(/^\d+$/, 'expected a non-negative integer')
  .transform(Number)
  .refine((n) => Number.isSafeInteger(n), 'expected a non-negative integer');
/** An integer from 0 to `max` (the blocklist's distances). */
const intUpTo = (max: number) =>
  z
    .string()
    .regex(/^\d+$/, `expected an integer from 0 to ${max}`)
    .transform(Number)
    .refine((n) => n <= max, `expected an integer from 0 to ${max}`);
const rate = z.string().transform((v, ctx) => {
  const r = parseRate(v);
  if (!r) ctx.addIssue({ code: 'custom', message: 'expected N/window, e.g. 20/1h (window units s, m, h)' });
  return r ?? { points: 0, seconds: 0 };
});
const url = (schemes: string[]) =>
  z.string().refine(
    (v) => {
      try {
        return schemes.includes(new URL(v).protocol.replace(/:$/, ''));
      } catch {
        return false;
      }
    },
    `expected a ${schemes.join(' or ')} URL`,
  );

/**
 * A listen address: an IPv4 address in its four-part decimal form, an IPv6 address (without brackets; a zone such
 * as `%eth0` allowed), or a host name by RFC 1123 (labels of letters, digits and inner hyphens, at most 63
 * characters each and 253 in all; the last label not all digits, so `127.1` or `999.1.1.1` is no host name).
 */
export function isListenHost(v: string): boolean {
  if (ipaddr.IPv4.isValidFourPartDecimal(v) || ipaddr.IPv6.isValid(v)) return true;
  const name = v.endsWith('.') ? v.slice(0, -1) : v;
  if (name.length < 1 || name.length > 253) return false;
  const labels = name.split('.');
  return (
    labels.every((l) => /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i.test(l)) && !/^\d+$/.test(labels[labels.length - 1]!)
  );
}

/** A URL as it may be printed: its password (if any) replaced by `***`. Anything unparsable is left as it is. */
export function maskPassword(value: string): string {
  try {
    const u = new URL(value);
    if (!u.password) return value;
    u.password = '***';
    return u.toString();
  } catch {
    return value.replace(/(\/\/[^/:@]*:)[^@/]*@/, '$1***@');
  }
}

/** Variables whose values may hold a password: never echoed back as they are. */
const SECRET_URLS = new Set(['DATABASE_URL', 'REDIS_URL']);

const schema = z.object({
  NODE_ENV: z.string().default('development'),
  PORT: port.prefault('3000'),
  HOST: z
    .string()
    .refine(isListenHost, 'expected an IP address (e.g. 0.0.0.0, 127.0.0.1, ::) or a host name (e.g. localhost)')
    .prefault('0.0.0.0'),
  DATA_DIR: z.string().min(1).default('./data'),
  MEDIA_STORE: z
    .string()
    .regex(
      /^s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/[\w!.*'()/-]*)?$/,
      'expected s3://BUCKET or s3://BUCKET/PREFIX (or unset for local disk)',
    )
    .optional(),
  MEDIA_REDIRECT: bool.prefault('false'),
  MEDIA_STORE_TIMEOUT: duration.prefault('15s'),
  MEDIA_SWEEP_GRACE: z
    .string()
    .transform((v, ctx) => {
      const s = /^0+[smhd]?$/.test(v) ? 0 : parseDuration(v);
      if (s === null) ctx.addIssue({ code: 'custom', message: 'expected a duration like 0s, 90s, 15m or 1h' });
      return s ?? 0;
    })
    .prefault('1h'),
  DATABASE_URL: url(['postgres', 'postgresql']).optional(),
  REDIS_URL: url(['redis', 'rediss']).optional(),
  REDIS_PREFIX: z
    .string()
    .regex(/^[\w:.-]{0,64}$/, 'expected up to 64 letters, digits, _ : . -')
    .prefault('pixvote:'),
  JWT_SECRET: z.string().min(32, 'expected at least 32 characters').optional(),
  JWT_TTL: duration.prefault('24h'),
  WORKERS: positiveInt.optional(),
  WORKER_QUEUE: positiveInt.optional(),
  HUMAN_POLICY: z.enum(['reject', 'flag', 'hold', 'off'], 'expected reject, flag, hold or off').prefault('reject'),
  AI_POLICY: z.enum(['label', 'hold', 'reject', 'off'], 'expected label, hold, reject or off').prefault('label'),
  HUMAN_THRESHOLD: z
    .string()
    .transform(Number)
    .refine((n) => Number.isFinite(n) && n > 0 && n <= 1, 'expected a number in (0, 1]')
    .optional(),
  HUMAN_REVIEW_THRESHOLD: z
    .string()
    .transform(Number)
    .refine((n) => Number.isFinite(n) && n > 0 && n <= 1, 'expected a number in (0, 1]')
    .optional(),
  HUMAN_INPUT_SIZE: z
    .string()
    .regex(/^\d+$/, 'expected a multiple of 32 from 128 to 1024')
    .transform(Number)
    .refine((n) => n % 32 === 0 && n >= 128 && n <= 1024, 'expected a multiple of 32 from 128 to 1024')
    .prefault('320'),
  HUMAN_SECOND_LOOK: z.enum(['off', 'boxes'], 'expected off or boxes').prefault('boxes'),
  HUMAN_RUNTIME: z.enum(['auto', 'onnx', 'tfjs'], 'expected auto, onnx or tfjs').prefault('auto'),
  C2PA_READER: z.enum(['auto', 'off'], 'expected auto or off').prefault('auto'),
  C2PA_TRUST_ANCHORS: z
    .string()
    .transform((file, ctx) => {
      try {
        const pem = readFileSync(resolve(file), 'utf8');
        if (pem.includes('-----BEGIN CERTIFICATE-----')) return pem;
        ctx.addIssue({ code: 'custom', message: `expected a PEM file of certificates; ${file} holds none` });
      } catch (e) {
        ctx.addIssue({ code: 'custom', message: `cannot read ${file}: ${pathProblem(file) ?? reasonOf(e)}` });
      }
      return z.NEVER;
    })
    .optional(),
  NEAR_DUPLICATE_DISTANCE: z
    .string()
    .regex(/^-?\d+$/, 'expected an integer from -1 to 32')
    .transform(Number)
    .refine((n) => n >= -1 && n <= 32, 'expected an integer from -1 to 32')
    .prefault('4'),
  REPORT_HOLD_THRESHOLD: z
    .string()
    .regex(/^\d+$/, 'expected a non-negative integer (0 turns automatic holds off)')
    .transform(Number)
    .prefault('3'),
  VOTE_RING_INTERVAL: durationOrZero.prefault('10m'),
  VOTE_RING_WINDOW: duration.prefault('14d'),
  VOTE_RING_MIN_ACCOUNTS: z
    .string()
    .regex(/^\d+$/, 'expected an integer from 2 to 1000')
    .transform(Number)
    .refine((n) => n >= 2 && n <= 1000, 'expected an integer from 2 to 1000')
    .prefault('3'),
  VOTE_FACTS_RETENTION: duration.prefault('30d'),
  VOTE_RING_RESTORE_DAYS: z
    .string()
    .regex(/^\d+$/, 'expected a whole number of days from 1 to 3650')
    .transform(Number)
    .refine((n) => n >= 1 && n <= 3650, 'expected a whole number of days from 1 to 3650')
    .prefault('30'),
  VOTE_RING_MIN_SCORE: z
    .string()
    .transform(Number)
    .refine((n) => Number.isFinite(n) && n >= 0 && n <= 6, 'expected a number from 0 to 6')
    .prefault('1.5'),
  REPORT_TRUST_MIN_AGE: durationOrZero.prefault('24h'),
  REPORT_TRUST_MIN_UPLOADS: nonNegativeInt.prefault('1'),
  REPORT_TRUST_MIN_VOTES: nonNegativeInt.prefault('10'),
  VOTE_MIN_ACCOUNT_AGE: durationOrZero.prefault('0'),
  REPORT_MIN_ACCOUNT_AGE: durationOrZero.prefault('0'),
  MODERATION_JOB_PAUSE_MS: nonNegativeInt
    .refine((n) => n <= 5000, 'expected an integer from 0 to 5000 (milliseconds)')
    .prefault('0'),
  MODERATION_JOB_LEASE_MS: positiveInt
    .refine((n) => n >= 100 && n <= 600_000, 'expected an integer from 100 to 600000 (milliseconds)')
    .prefault('10000'),
  BLOCKLIST_DISTANCE: intUpTo(16).prefault('8'),
  BLOCKLIST_PDQ_DISTANCE: intUpTo(128).prefault('31'),
  NEAR_DUPLICATE_INDEX: z
    .enum(['multi-index-hashing', 'sqlite-vec'], 'expected multi-index-hashing or sqlite-vec')
    .default('multi-index-hashing'),
  FETCH_ALLOW_PRIVATE: bool.prefault('false'),
  FETCH_TIMEOUT_MS: positiveInt.prefault('10000'),
  WEBHOOK_TIMEOUT_MS: positiveInt.prefault('10000'),
  WEBHOOK_INTERVAL_MS: positiveInt.prefault('1000'),
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .transform((v, ctx) => {
      // Each wait: a duration (90s, 5m, 2h, 1d), or milliseconds (`250ms`, for tests).
      const waits = v.split(',').map((w) => {
        const ms = /^\s*(\d+)\s*ms\s*$/.exec(w);
        if (ms) return Number(ms[1]);
        const seconds = /^\s*0+\s*[smhd]?\s*$/.test(w) ? 0 : parseDuration(w);
        return seconds === null ? null : seconds * 1000;
      });
      if (waits.length > 30 || waits.some((w) => w === null)) {
        ctx.addIssue({ code: 'custom', message: 'expected up to 30 durations separated by commas, e.g. 5s,5m,30m,2h' });
        return [];
      }
      return waits.map((w) => w ?? 0);
    })
    .prefault('5s,5m,30m,2h,5h,10h,10h'),
  ADMIN_USERNAMES: z.string().prefault(''),
  RATE_LIMIT_AUTH: rate.prefault('5/15m'),
  RATE_LIMIT_UPLOAD: rate.prefault('20/1h'),
  RATE_LIMIT_VOTE: rate.prefault('20/1h'),
  RATE_LIMIT_GENERAL: rate.prefault('600/15m'),
  RATE_LIMIT_MEDIA: rate.prefault('6000/15m'),
  RATE_LIMIT_REPORT: rate.prefault('20/1h'),
  TRUST_PROXY: bool.prefault('false'),
  METRICS_TOKEN: z
    .string()
    .regex(
      /^[\x21-\x7e]{16,512}$/,
      'expected 16 to 512 visible ASCII characters (no spaces), e.g. openssl rand -hex 32',
    )
    .optional(),
  RESUMABLE_MAX_OPEN: z
    .string()
    .regex(/^[1-9]\d{0,5}$/, 'expected a positive integer')
    .transform(Number)
    .prefault('10'),
  RESUMABLE_TTL: duration.prefault('24h'),
  MAX_CONNECTIONS_PER_IP: z
    .string()
    .regex(/^\d+$/, 'expected a non-negative integer (0 turns the cap off)')
    .transform(Number)
    .refine((n) => Number.isSafeInteger(n), 'expected a non-negative integer (0 turns the cap off)')
    .prefault('64'),
  LOG_LEVEL: z
    .enum(
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      'expected fatal, error, warn, info, debug, trace or silent',
    )
    .prefault('info'),
  SHUTDOWN_GRACE_MS: z.string().regex(/^\d+$/, 'expected a non-negative integer').transform(Number).prefault('25000'),
  DATABASE_WAIT_MS: z.string().regex(/^\d+$/, 'expected a non-negative integer').transform(Number).prefault('60000'),
  SQLITE_READERS: nonNegativeInt.refine((n) => n <= 64, 'expected an integer from 0 to 64').prefault('2'),
  PG_READERS: nonNegativeInt.refine((n) => n <= 64, 'expected an integer from 0 to 64').prefault('2'),
  MODELS_DIR: z.string().min(1).optional(),
  PROCESSES: positiveInt.prefault('1'),
  PROCESS_RESTART_DELAY_MS: positiveInt
    .refine((n) => n <= 15_000, 'expected an integer from 1 to 15000 (milliseconds)')
    .prefault('1000'),
});

/** The schema, for the generated docs/configuration.md (scripts/docs-config.ts); descriptions: config.docs.ts. */
export const configSchema = schema;

/**
 * HUMAN_THRESHOLD and HUMAN_REVIEW_THRESHOLD, each the calibrated default of the HUMAN_SECOND_LOOK mode when unset
 * (person-policy.ts); an unset review bound never exceeds the sure one (an operator's lower HUMAN_THRESHOLD alone
 * narrows the gray zone instead of failing).
 */
function humanThresholds(e: {
  HUMAN_THRESHOLD?: number | undefined;
  HUMAN_REVIEW_THRESHOLD?: number | undefined;
  HUMAN_SECOND_LOOK: 'off' | 'boxes';
}): { sure: number; review: number } {
  const boxes = e.HUMAN_SECOND_LOOK === 'boxes';
  const sure = e.HUMAN_THRESHOLD ?? (boxes ? CALIBRATED_BOXES_THRESHOLD : CALIBRATED_FIRST_LOOK_THRESHOLD);
  const review =
    e.HUMAN_REVIEW_THRESHOLD ??
    Math.min(sure, boxes ? CALIBRATED_REVIEW_THRESHOLD : CALIBRATED_FIRST_LOOK_REVIEW_THRESHOLD);
  return { sure, review };
}

/**
 * Parses the environment. Throws ConfigError listing every bad variable.
 * `JWT_SECRET` is generated once into `$DATA_DIR/jwt-secret` unless NODE_ENV=production, where it is required.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const input: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const v = env[key];
    if (v !== undefined && v !== '') input[key] = v;
  }
  const parsed = schema.safeParse(input);
  const problems = parsed.success
    ? []
    : parsed.error.issues.map((i) => {
        const key = String(i.path[0]);
        const value = input[key] ?? '';
        return `${key}=${SECRET_URLS.has(key) ? maskPassword(value) : value}: ${i.message}`;
      });
  // Rules between variables, in the same one message as the rest.
  if (input.NODE_ENV === 'production' && !input.JWT_SECRET && !problems.some((p) => p.startsWith('JWT_SECRET='))) {
    problems.push('JWT_SECRET=: required when NODE_ENV=production (at least 32 characters)');
  }
  if (input.NEAR_DUPLICATE_INDEX === 'sqlite-vec' && input.DATABASE_URL) {
    problems.push('NEAR_DUPLICATE_INDEX=sqlite-vec: only available on SQLite (DATABASE_URL selects PostgreSQL)');
  }
  if (input.MEDIA_REDIRECT && bool.safeParse(input.MEDIA_REDIRECT).data && !input.MEDIA_STORE) {
    problems.push('MEDIA_REDIRECT=true: needs object storage (MEDIA_STORE=s3://BUCKET[/PREFIX])');
  }
  // Each of the three on its own, so that this rule is checked alongside any other bad variable.
  const human = humanThresholds({
    HUMAN_THRESHOLD: schema.shape.HUMAN_THRESHOLD.safeParse(input.HUMAN_THRESHOLD).data,
    HUMAN_REVIEW_THRESHOLD: schema.shape.HUMAN_REVIEW_THRESHOLD.safeParse(input.HUMAN_REVIEW_THRESHOLD).data,
    HUMAN_SECOND_LOOK: schema.shape.HUMAN_SECOND_LOOK.safeParse(input.HUMAN_SECOND_LOOK).data ?? 'boxes',
  });
  if (input.HUMAN_REVIEW_THRESHOLD !== undefined && human.review > human.sure) {
    problems.push(
      `HUMAN_REVIEW_THRESHOLD=${input.HUMAN_REVIEW_THRESHOLD}: must not be above HUMAN_THRESHOLD (${human.sure}` +
        `${input.HUMAN_THRESHOLD ? '' : ', the default'}); equal turns the gray zone off`,
    );
  }
  // The detector reads the facts of its whole window: they must be kept at least that long.
  const retention = schema.shape.VOTE_FACTS_RETENTION.safeParse(input.VOTE_FACTS_RETENTION ?? '30d').data;
  const ringWindow = schema.shape.VOTE_RING_WINDOW.safeParse(input.VOTE_RING_WINDOW ?? '14d').data;
  if (retention && ringWindow && retention < ringWindow) {
    problems.push(
      `VOTE_FACTS_RETENTION=${input.VOTE_FACTS_RETENTION ?? '30d'}: must be at least VOTE_RING_WINDOW ` +
        `(${input.VOTE_RING_WINDOW ?? '14d'}), the votes the detector reads`,
    );
  }
  if (!parsed.success || problems.length) throw new ConfigError(problems);
  const e = parsed.data;
  const nodeEnv = e.NODE_ENV;
  // Relative to the checkout, not the current directory (as `npm start` runs): see src/data-dir.ts.
  const dataDir = resolveDataDir(e.DATA_DIR);
  // "Available cores": those of the machine, shared by the PROCESSES gateways on it (each has its own pool).
  const workers = e.WORKERS ?? Math.max(1, Math.floor(availableParallelism() / e.PROCESSES));
  return Object.freeze({
    nodeEnv,
    port: e.PORT,
    host: e.HOST,
    dataDir,
    mediaStore: e.MEDIA_STORE ? mediaStoreOf(e.MEDIA_STORE, env) : null,
    mediaRedirect: e.MEDIA_REDIRECT,
    mediaSweepGraceSeconds: e.MEDIA_SWEEP_GRACE,
    mediaStoreTimeoutMs: e.MEDIA_STORE_TIMEOUT * 1000,
    databaseUrl: e.DATABASE_URL ?? null,
    redisUrl: e.REDIS_URL ?? null,
    redisPrefix: e.REDIS_PREFIX,
    jwtSecret: e.JWT_SECRET ?? embeddedJwtSecret(dataDir),
    jwtTtlSeconds: e.JWT_TTL,
    workers,
    workerQueue: e.WORKER_QUEUE ?? 4 * workers,
    humanPolicy: e.HUMAN_POLICY,
    aiPolicy: e.AI_POLICY,
    humanThreshold: human.sure,
    humanReviewThreshold: human.review,
    humanInputSize: e.HUMAN_INPUT_SIZE,
    humanSecondLook: e.HUMAN_SECOND_LOOK,
    humanRuntime: e.HUMAN_RUNTIME,
    c2paReader: e.C2PA_READER,
    c2paTrustAnchors: e.C2PA_TRUST_ANCHORS ?? null,
    nearDuplicateDistance: e.NEAR_DUPLICATE_DISTANCE,
    nearDuplicateIndex: e.NEAR_DUPLICATE_INDEX,
    reportHoldThreshold: e.REPORT_HOLD_THRESHOLD,
    voteRings: Object.freeze({
      intervalMs: e.VOTE_RING_INTERVAL * 1000,
      windowMs: e.VOTE_RING_WINDOW * 1000,
      minAccounts: e.VOTE_RING_MIN_ACCOUNTS,
      minScore: e.VOTE_RING_MIN_SCORE,
      factsRetentionMs: e.VOTE_FACTS_RETENTION * 1000,
      restoreMs: e.VOTE_RING_RESTORE_DAYS * 86_400_000,
    }),
    reportTrust: Object.freeze({
      minAgeSeconds: e.REPORT_TRUST_MIN_AGE,
      minUploads: e.REPORT_TRUST_MIN_UPLOADS,
      minVotes: e.REPORT_TRUST_MIN_VOTES,
    }),
    voteMinAccountAgeSeconds: e.VOTE_MIN_ACCOUNT_AGE,
    reportMinAccountAgeSeconds: e.REPORT_MIN_ACCOUNT_AGE,
    moderationJobPauseMs: e.MODERATION_JOB_PAUSE_MS,
    moderationJobLeaseMs: e.MODERATION_JOB_LEASE_MS,
    blocklistDistance: e.BLOCKLIST_DISTANCE,
    blocklistPdqDistance: e.BLOCKLIST_PDQ_DISTANCE,
    fetchAllowPrivate: e.FETCH_ALLOW_PRIVATE,
    fetchTimeoutMs: e.FETCH_TIMEOUT_MS,
    webhooks: Object.freeze({
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      intervalMs: e.WEBHOOK_INTERVAL_MS,
      retryScheduleMs: Object.freeze(e.WEBHOOK_RETRY_SCHEDULE),
    }),
    adminUsernames: new Set(
      e.ADMIN_USERNAMES.split(',')
        .map((s) => s.trim().toLowerCase())
        .filter(Boolean),
    ),
    rateLimits: Object.freeze({
      auth: e.RATE_LIMIT_AUTH,
      upload: e.RATE_LIMIT_UPLOAD,
      vote: e.RATE_LIMIT_VOTE,
      general: e.RATE_LIMIT_GENERAL,
      media: e.RATE_LIMIT_MEDIA,
      report: e.RATE_LIMIT_REPORT,
    }),
    trustProxy: e.TRUST_PROXY,
    metricsToken: e.METRICS_TOKEN ?? null,
    maxConnectionsPerIp: e.MAX_CONNECTIONS_PER_IP,
    resumableMaxOpen: e.RESUMABLE_MAX_OPEN,
    resumableTtlMs: e.RESUMABLE_TTL * 1000,
    logLevel: e.LOG_LEVEL,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    databaseWaitMs: e.DATABASE_WAIT_MS,
    sqliteReaders: e.SQLITE_READERS,
    pgReaders: e.PG_READERS,
    modelsDir: e.MODELS_DIR ? resolve(e.MODELS_DIR) : DEFAULT_MODELS_DIR,
    processes: e.PROCESSES,
    processRestartDelayMs: e.PROCESS_RESTART_DELAY_MS,
  });
}

/**
 * `s3://BUCKET[/PREFIX]` → the bucket, a key prefix ending in `/` (or empty), and what the AWS SDK's own
 * variables say of the endpoint, region and credentials (read here, from the environment given).
 */
export function mediaStoreOf(value: string, env: NodeJS.ProcessEnv): S3Settings {
  const rest = value.slice('s3://'.length);
  const slash = rest.indexOf('/');
  const trimmed = slash < 0 ? '' : rest.slice(slash + 1).replace(/^\/+|\/+$/g, '');
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  return Object.freeze({
    bucket: slash < 0 ? rest : rest.slice(0, slash),
    prefix: trimmed ? `${trimmed}/` : '',
    endpoint: env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || null,
    region: env.AWS_REGION || env.AWS_DEFAULT_REGION || null,
    credentials:
      accessKeyId && secretAccessKey
        ? { accessKeyId, secretAccessKey, ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}) }
        : null,
  });
}

/** The embedded default: a random secret created on first start and kept in DATA_DIR. */
function embeddedJwtSecret(dataDir: string): string {
  const file = join(dataDir, 'jwt-secret');
  try {
    const existing = readFileSync(file, 'utf8').trim();
    if (existing.length >= 32) return existing;
  } catch {
    // first start: fall through and create it
  }
  // A DATA_DIR this user cannot write is said here, naming it, rather than as an fs error later.
  const cannot = (e: unknown, what = 'create') =>
    new ConfigError([
      `DATA_DIR=${dataDir}: cannot ${what} ${file}: ${pathProblem(file) ?? reasonOf(e)}; ` +
        'make DATA_DIR writable by the user the server runs as, or set JWT_SECRET',
    ]);
  try {
    mkdirSync(dataDir, { recursive: true });
  } catch (e) {
    throw cannot(e);
  }
  const secret = randomBytes(48).toString('base64url');
  try {
    // 'wx' fails if another process won the race (or a short file is there); then read what it wrote.
    writeFileSync(file, secret + '\n', { mode: 0o600, flag: 'wx' });
    return secret;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw cannot(e);
    // The winner may be between creating and writing it: a moment's patience, then a file cut short (a
    // crash while it was written) or edited by hand must not become a weak secret.
    let theirs = '';
    try {
      for (let i = 0; i < 20 && (theirs = readFileSync(file, 'utf8').trim()).length < 32; i++)
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
    } catch (e) {
      throw cannot(e, 'read');
    }
    if (theirs.length < 32)
      throw new ConfigError([
        `JWT_SECRET=: ${file} holds ${theirs.length} characters, fewer than 32; ` +
          'delete it to have a new one made, or set JWT_SECRET',
      ]);
    return theirs;
  }
}
