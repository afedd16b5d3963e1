import Router from '@koa/router';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Registry } from 'prom-client';
import { errors } from '../../domain/errors.ts';
import type { AppContext, AppState } from '../context.ts';
import { sharedResult } from '../shared-result.ts';

/** API.md Operations: concurrent scrapes share one rendering, at most one per second. */
const RENDER_FRESH_MS = 1000;

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * Whether the request carries `Authorization: Bearer <token>`. Compared as SHA-256 digests in constant
 * time, so neither the token's length nor its first differing character shows in the answer's timing.
 */
function bearerMatches(ctx: AppContext, expected: Buffer): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'));
  return timingSafeEqual(digest(m?.[1] ?? ''), expected) && m !== null;
}

/**
 * `GET /metrics`: Prometheus text. With `token` (METRICS_TOKEN) set it needs `Authorization: Bearer <token>`
 * (401 otherwise); without, expose it to your scraper only (e.g. at the proxy): it is not secret but not public.
 */
export function metricsRoutes(deps: {
  registry: () => Promise<{ text: string; contentType: string }>;
  token?: string | null;
}): Router<AppState> {
  const router = new Router<AppState>();
  const expected = deps.token ? digest(deps.token) : null;
  const rendered = sharedResult(RENDER_FRESH_MS, deps.registry);
  router.get('/metrics', async (ctx) => {
    if (expected && !bearerMatches(ctx, expected)) {
      ctx.set('WWW-Authenticate', 'Bearer realm="metrics"');
      throw errors.unauthorized('/metrics needs Authorization: Bearer <METRICS_TOKEN>');
    }
    const { text, contentType } = await rendered();
    ctx.set('Cache-Control', 'no-store');
    ctx.type = contentType;
    ctx.body = text;
  });
  return router;
}

export const registryText = (registry: Registry) => async () => ({
  text: await registry.metrics(),
  contentType: registry.contentType,
});
