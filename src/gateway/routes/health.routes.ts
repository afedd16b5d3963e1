import type { Logger } from 'pino';
import { sharedResult } from '../shared-result.ts';
import { Health, NotReady, Readiness as ReadinessBody } from '../schemas/common.schemas.ts';
import { routes } from './route.ts';

/** A named dependency check for /readyz: resolves with details, rejects when the dependency does not answer. */
export interface ReadinessCheck {
  name: string;
  check(): Promise<Record<string, unknown> | void>;
  /**
   * false: the service still serves without it, on in-process fallbacks (Redis), so its being down makes the
   * process `degraded`, not unready. Default true: without it (database, workers, media store) it cannot serve.
   */
  critical?: boolean;
}

const CHECK_TIMEOUT_MS = 2000;
/** API.md Operations: concurrent /readyz calls share one check, at most one per second per process. */
const CHECK_FRESH_MS = 1000;

class CheckTimeout extends Error {}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let t: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(t)),
    new Promise<T>((_, reject) => {
      t = setTimeout(() => reject(new CheckTimeout(`no answer within ${ms} ms`)), ms);
    }),
  ]);
}

type CheckResult = { status: 'ok' } & Record<string, unknown>;
type CheckFailure = { status: 'down'; reason: string };

export interface Readiness {
  /** 200 `ok` or `degraded`, or 503 `down`. */
  status: 'ok' | 'degraded' | 'down';
  /** Why not `ok`: each dependency that is down, and a shutdown. */
  reasons: string[];
}

/**
 * API.md Operations: ready (200) while the dependencies the service cannot serve without answer — `degraded`
 * when one it can do without (Redis, whose limits and cache fall back to in-process ones) is down; 503 when a
 * critical one is down or the process is shutting down.
 */
export function readinessOf(
  results: ReadonlyArray<{ name: string; critical: boolean; result: { status: 'ok' | 'down'; reason?: string } }>,
  shuttingDown: boolean,
): Readiness {
  const down = (critical: boolean) =>
    results
      .filter((r) => r.critical === critical && r.result.status !== 'ok')
      .map((r) => `${r.name}: ${r.result.reason ?? 'down'}`);
  const critical = down(true);
  const optional = down(false);
  if (shuttingDown || critical.length) {
    return { status: 'down', reasons: [...(shuttingDown ? ['shutting down'] : []), ...critical, ...optional] };
  }
  return { status: optional.length ? 'degraded' : 'ok', reasons: optional };
}

/** Every check once, side by side, each bounded by CHECK_TIMEOUT_MS; never rejects. */
async function runChecks(checks: ReadinessCheck[], log: Logger | undefined) {
  const results = await Promise.all(
    checks.map(async (c) => {
      const critical = c.critical ?? true;
      try {
        const details = await withTimeout(c.check(), CHECK_TIMEOUT_MS);
        return { name: c.name, critical, result: { status: 'ok', ...(details ?? {}) } as CheckResult };
      } catch (e) {
        // The driver's own text (host names, auth messages) goes to the log, not to whoever asks.
        log?.warn({ check: c.name, err: (e as Error).message }, 'readiness check failed');
        const reason = e instanceof CheckTimeout ? e.message : 'not reachable';
        return { name: c.name, critical, result: { status: 'down', reason } as CheckFailure };
      }
    }),
  );
  return { results, checks: Object.fromEntries(results.map((r) => [r.name, r.result])) };
}

// Hot reads: found by exact path (hot-routes.ts).
export const healthRoutes = routes<{ checks: ReadinessCheck[]; isShuttingDown: () => boolean }>((route) => [
  route({
    method: 'get',
    path: '/healthz',
    operationId: 'health',
    tag: 'operations',
    summary: 'Liveness: 200 while the process runs',
    auth: 'none',
    limit: null,
    responses: { 200: { description: 'Alive.', json: Health, cacheControl: ['no-store'] } },
    hot: true,
    handler: () => (ctx) => {
      ctx.set('Cache-Control', 'no-store');
      ctx.body = { status: 'ok' };
    },
  }),
  route({
    method: 'get',
    path: '/readyz',
    operationId: 'ready',
    tag: 'operations',
    summary: 'Readiness: the database, Redis (if configured) and the worker pool answer',
    description:
      'Turns 503 as soon as a graceful shutdown starts. ' +
      'Calls arriving together share one check, at most one per second.',
    auth: 'none',
    limit: null,
    responses: {
      200: { description: 'Ready.', json: ReadinessBody, cacheControl: ['no-store'] },
      503: {
        description: 'Not ready: a dependency did not answer, or the process is shutting down.',
        json: NotReady,
        cacheControl: ['no-store'],
      },
    },
    hot: true,
    handler: (deps) => {
      // The process logger, known from the first request (checks shared by many requests belong to none of them).
      let log: Logger | undefined;
      const checked = sharedResult(CHECK_FRESH_MS, () => runChecks(deps.checks, log));
      return async (ctx) => {
        ctx.set('Cache-Control', 'no-store');
        log ??= ctx.state.log;
        const { results, checks } = await checked();
        // Draining is this process's own state: it shows at once, never from a shared result.
        const { status, reasons } = readinessOf(results, deps.isShuttingDown());
        if (status === 'down') {
          ctx.status = 503;
          ctx.set('Retry-After', '5');
          ctx.body = { error: 'busy', message: `not ready: ${reasons.join('; ')}`, status, checks };
        } else {
          ctx.body = { status, checks };
        }
      };
    },
  }),
]);
