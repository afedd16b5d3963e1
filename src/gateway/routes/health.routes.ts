import Router from '@koa/router';
import type { Logger } from 'pino';
import type { AppState } from '../context.ts';
import { sharedResult } from '../shared-result.ts';

/** A named dependency check for /readyz: resolves with details, rejects when the dependency does not answer. */
export interface ReadinessCheck {
  name: string;
  check(): Promise<Record<string, unknown> | void>;
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

/** Every check once, side by side, each bounded by CHECK_TIMEOUT_MS; never rejects. */
async function runChecks(checks: ReadinessCheck[], log: Logger | undefined) {
  const results = await Promise.all(
    checks.map(async (c): Promise<readonly [string, CheckResult | CheckFailure]> => {
      try {
        const details = await withTimeout(c.check(), CHECK_TIMEOUT_MS);
        return [c.name, { status: 'ok', ...(details ?? {}) }];
      } catch (e) {
        // The driver's own text (host names, auth messages) goes to the log, not to whoever asks.
        log?.warn({ check: c.name, err: (e as Error).message }, 'readiness check failed');
        return [c.name, { status: 'down', reason: e instanceof CheckTimeout ? e.message : 'not reachable' }];
      }
    }),
  );
  const down = results.filter(([, r]) => r.status !== 'ok').map(([n, r]) => `${n}: ${'reason' in r ? String(r.reason) : 'down'}`);
  return { checks: Object.fromEntries(results), down };
}

export function healthRoutes(deps: { checks: ReadinessCheck[]; isShuttingDown: () => boolean }): Router<AppState> {
  const router = new Router<AppState>();

  router.get('/healthz', (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { status: 'ok' };
  });

  // The process logger, known from the first request (checks shared by many requests belong to none of them).
  let log: Logger | undefined;
  const checked = sharedResult(CHECK_FRESH_MS, () => runChecks(deps.checks, log));

  router.get('/readyz', async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    log ??= ctx.state.log;
    const { checks, down } = await checked();
    // Draining is this process's own state: it shows at once, never from a shared result.
    const reasons = deps.isShuttingDown() ? ['shutting down', ...down] : down;
    if (reasons.length) {
      ctx.status = 503;
      ctx.set('Retry-After', '5');
      ctx.body = { error: 'busy', message: `not ready: ${reasons.join('; ')}`, checks };
    } else {
      ctx.body = { status: 'ok', checks };
    }
  });

  return router;
}
