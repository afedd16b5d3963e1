import Router from '@koa/router';
import type { Registry } from 'prom-client';
import type { AppState } from '../context.ts';

/** `GET /metrics`: Prometheus text. Expose it to your scraper only (e.g. at the proxy); it is not secret but not public. */
export function metricsRoutes(deps: { registry: () => Promise<{ text: string; contentType: string }> }): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/metrics', async (ctx) => {
    const { text, contentType } = await deps.registry();
    ctx.set('Cache-Control', 'no-store');
    ctx.type = contentType;
    ctx.body = text;
  });
  return router;
}

export const registryText = (registry: Registry) => async () => ({ text: await registry.metrics(), contentType: registry.contentType });
