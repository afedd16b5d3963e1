import Router from '@koa/router';
import type { AppState } from '../context.ts';

/** A named dependency check for /readyz: resolves with details, rejects when the dependency does not answer. */
export interface ReadinessCheck {
  name: string;
  check(): Promise<Record<string, unknown> | void>;
}

const CHECK_TIMEOUT_MS = 2000;

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

export function healthRoutes(deps: { checks: ReadinessCheck[]; isShuttingDown: () => boolean }): Router<AppState> {
  const router = new Router<AppState>();

  router.get('/healthz', (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { status: 'ok' };
  });

  router.get('/readyz', async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    const results = await Promise.all(
      deps.checks.map(async (c) => {
        try {
          const details = await withTimeout(c.check(), CHECK_TIMEOUT_MS);
          return [c.name, { status: 'ok', ...(details ?? {}) }] as const;
        } catch (e) {
          // The driver's own text (host names, auth messages) goes to the log, not to whoever asks.
          ctx.state.log?.warn({ reqId: ctx.state.requestId, check: c.name, err: (e as Error).message }, 'readiness check failed');
          return [c.name, { status: 'down', reason: e instanceof CheckTimeout ? e.message : 'not reachable' }] as const;
        }
      }),
    );
    const checks = Object.fromEntries(results);
    const down = results.filter(([, r]) => r.status !== 'ok').map(([n, r]) => `${n}: ${'reason' in r ? r.reason : 'down'}`);
    if (deps.isShuttingDown()) down.unshift('shutting down');
    if (down.length) {
      ctx.status = 503;
      ctx.set('Retry-After', '5');
      ctx.body = { error: 'busy', message: `not ready: ${down.join('; ')}`, checks };
    } else {
      ctx.body = { status: 'ok', checks };
    }
  });

  return router;
}
