import ipaddr from 'ipaddr.js';
import { errors } from '../../domain/errors.ts';
import type { LimitDecision, Limiter } from '../../domain/rate-limit.ts';
import { listHeader } from '../listed-headers.ts';
import type { AppContext } from '../context.ts';
import { requireUser } from './authenticate.ts';

/** Operational probes must never be throttled: a load balancer polling /readyz would lock itself out. */

const describe = (l: Limiter) => `${l.rate.points} requests per ${windowText(l.rate.seconds)}`;

function windowText(seconds: number): string {
  if (seconds % 3600 === 0) return seconds === 3600 ? 'hour' : `${seconds / 3600} hours`;
  if (seconds % 60 === 0) return seconds === 60 ? 'minute' : `${seconds / 60} minutes`;
  return `${seconds} seconds`;
}

/** Sets the RateLimit-* headers; throws 429 rate_limited when the limit is spent. */
function stamp(ctx: AppContext, limiter: Limiter, d: LimitDecision): void {
  // Listed on the response (listed-headers.ts): a cached page writes them with its own in one writeHead.
  const { res } = ctx;
  listHeader(res, 'RateLimit-Limit', String(d.limit));
  listHeader(res, 'RateLimit-Remaining', String(d.remaining));
  listHeader(res, 'RateLimit-Reset', String(d.resetSeconds));
  if (!d.allowed) {
    throw errors.rateLimited(
      `${limiter.name} rate limit exceeded (${describe(limiter)}); retry in ${d.resetSeconds} s`,
      d.resetSeconds,
    );
  }
}

/**
 * The one decision path of both limit middlewares: consumes one point of `key`, sets the RateLimit-* headers
 * (429 rate_limited when the limit is spent), then continues with `then`. The limiter decides synchronously when
 * the count held in process settles it (most requests): continuing at once then spares those requests an async
 * frame and a microtask; a decision still waiting for the store continues through the same `go`.
 */
export function applyLimit<T>(ctx: AppContext, limiter: Limiter, key: string, then: () => T): T | Promise<T> {
  const decided = limiter.consume(key);
  const go = (d: LimitDecision): T => {
    stamp(ctx, limiter, d);
    return then();
  };
  return decided instanceof Promise ? decided.then(go) : go(decided);
}

/** An IPv4 address as it stands, or as the tail of an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`). */
const PLAIN_IPV4 = /^(?:::ffff:)?(\d{1,3}(?:\.\d{1,3}){3})$/i;

/**
 * The key a client IP is limited under (API.md Rate limits): an IPv4 address as such (IPv4-mapped IPv6
 * included), an IPv6 address by its /64, the smallest network one subscriber is given, so rotating
 * addresses inside it buys no fresh budget. Anything unparseable is keyed as it stands.
 */
export function clientIpKey(ip: string): string {
  const v4 = PLAIN_IPV4.exec(ip);
  if (v4) return v4[1]!;
  if (!ipaddr.isValid(ip)) return ip;
  const addr = ipaddr.process(ip);
  if (addr.kind() === 'ipv4') return addr.toString();
  const prefix = (addr as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...prefix, 0, 0, 0, 0]).toString()}/64`;
}

/** Which routes spend which per-IP limit, as the routes declare it (routes/index.ts). */
export interface IpLimitedRoutes {
  /** Paths never limited (the probes), as requested. */
  unlimited: ReadonlySet<string>;
  /** Method and path of each route spending the auth limit (`POST /api/auth`). */
  auth: ReadonlyArray<{ method: string; path: string }>;
  /**
   * Method and path (Koa form: `:name` is one path segment) of each GET spending the media limit: the image
   * variants and the pages' static assets.
   */
  media: ReadonlyArray<{ method: string; path: string }>;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A Koa route path as one source of a RegExp: each `:name` segment matches one path segment, as the router's do. */
const pathPattern = (path: string) =>
  path
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : escapeRegExp(segment)))
    .join('/');

/**
 * Per client IP (IPv6 by its /64), before the body is read: the routes declared with the auth limit
 * (`POST /api/auth`) spend it (every attempt counts, whatever its outcome); the GETs (and HEADs) declared with the
 * media limit (image variants, page assets) spend it, so browsing does not use up the general budget; every other
 * route spends the general limit, but those declared unlimited (the probes).
 */
export function ipRateLimit(opts: { auth: Limiter; general: Limiter; media: Limiter; routes: IpLimitedRoutes }) {
  const { unlimited } = opts.routes;
  for (const path of [...unlimited, ...opts.routes.auth.map((r) => r.path)])
    if (path.includes(':')) throw new Error(`${path}: the auth limit and no limit are for fixed paths only`);
  for (const r of opts.routes.media)
    if (r.method.toUpperCase() !== 'GET') throw new Error(`${r.method} ${r.path}: the media limit is for GETs only`);
  // As the router matches them: any letter case, with or without a trailing slash.
  const authRoutes = opts.routes.auth.map((r) => ({
    method: r.method.toUpperCase(),
    path: new RegExp(`^${escapeRegExp(r.path)}/?$`, 'i'),
  }));
  // One test for every media route (the router answers HEAD with its GET routes too).
  const mediaPaths = opts.routes.media.length
    ? new RegExp(`^(?:${opts.routes.media.map((r) => pathPattern(r.path)).join('|')})/?$`, 'i')
    : null;
  // Each address's key made once (not a fresh string per request, for the limiter to hash again): as many as the
  // clients seen lately, started over past 10k.
  const ipKeys = new Map<string, string>();
  const keyOf = (ip: string): string => {
    let key = ipKeys.get(ip);
    if (key === undefined) {
      if (ipKeys.size >= 10_000) ipKeys.clear();
      ipKeys.set(ip, (key = clientIpKey(ip)));
    }
    return key;
  };
  const limiterOf = (method: string, path: string): Limiter =>
    authRoutes.some((r) => method === r.method && r.path.test(path))
      ? opts.auth
      : (method === 'GET' || method === 'HEAD') && mediaPaths?.test(path)
        ? opts.media
        : opts.general;
  // Which limit a method and path spend, decided once per pair (the route tests are regular expressions): by
  // method, then path, as many paths as were asked lately, started over past 10k.
  const chosen = new Map<string, Map<string, Limiter>>();
  const choose = (method: string, path: string): Limiter => {
    let byPath = chosen.get(method);
    if (!byPath) chosen.set(method, (byPath = new Map<string, Limiter>()));
    let limiter = byPath.get(path);
    if (!limiter) {
      if (byPath.size >= 10_000) byPath.clear();
      byPath.set(path, (limiter = limiterOf(method, path)));
    }
    return limiter;
  };
  return function ipRateLimit(ctx: AppContext, next: () => Promise<unknown>) {
    const path = ctx.path;
    if (unlimited.has(path)) return next();
    // ctx.ip as Koa computes it; with no proxy trusted it is the socket's address, without Koa building two arrays
    // from X-Forwarded-For it then ignores.
    const ip = ctx.app.proxy ? ctx.ip : (ctx.req.socket.remoteAddress ?? '');
    return applyLimit(ctx, choose(ctx.method, path), keyOf(ip), next);
  };
}

/**
 * Per authenticated user, for routes with their own budget (uploads, votes). Refuses an anonymous caller with
 * the 401 requireUser gives.
 * `exempt`: requests that cannot create anything new (an idempotent replay) spend nothing.
 */
export function userRateLimit(limiter: Limiter, opts: { exempt?: (ctx: AppContext) => Promise<boolean> } = {}) {
  return async function userRateLimit(ctx: AppContext, next: () => Promise<unknown>) {
    // Why the caller has no user (a bad token says which) is the 401 they get.
    const user = requireUser(ctx);
    if (await opts.exempt?.(ctx)) return next();
    return applyLimit(ctx, limiter, user.userId, next);
  };
}
