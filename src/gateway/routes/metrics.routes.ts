import { createHash, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { Registry } from 'prom-client';
import { errors } from '../../domain/errors.ts';
import type { AppContext } from '../context.ts';
import { sendWithEtag } from '../fresh.ts';
import { sharedResult } from '../shared-result.ts';
import { routes } from './route.ts';

const gzipped = promisify(gzip);

const text = { type: 'string' };

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

/** One rendering, as every scrape within its second is sent it: bytes, their tag, and their gzip once asked for. */
interface Rendering {
  body: Buffer;
  etag: string;
  contentType: string;
  gzip: Promise<Buffer> | null;
}

/**
 * `GET /metrics`: Prometheus text. With `token` (METRICS_TOKEN) set it needs `Authorization: Bearer <token>`
 * (401 otherwise); without, expose it to your scraper only (e.g. at the proxy): it is not secret but not public.
 *
 * A scrape costs what sending prepared bytes costs: the text is encoded, tagged and (for scrapers that accept it,
 * as Prometheus does) gzipped once per rendering, not per response. The text grows with the routes and statuses
 * clients have met (hundreds of KB after a scan); sent anew to each of 64 concurrent scrapers, it made uploads 3×
 * slower (bench/metrics-scrape.bench.ts).
 */
export const metricsRoutes = routes<{
  registry: () => Promise<{ text: string; contentType: string }>;
  token?: string | null;
}>((route) => [
  route({
    method: 'get',
    path: '/metrics',
    operationId: 'metrics',
    tag: 'operations',
    summary: 'Prometheus metrics',
    description:
      'Request counts and latency by route and status, worker pool size, queue depth, task time per pipeline stage, ' +
      'uploads accepted and rejected by reason. Expose it to your scraper only. With `METRICS_TOKEN` set it needs ' +
      '`Authorization: Bearer <METRICS_TOKEN>` (401 `unauthorized` otherwise). ' +
      'Scrapes arriving together share one rendering, at most one per second: ' +
      'a faster scraper sees the same numbers again (the same `ETag`). Gzipped for a scraper that accepts it.',
    auth: 'none',
    limit: null,
    responses: {
      200: {
        description: 'Prometheus text exposition format.',
        other: { 'text/plain': text },
        headers: ['ETag', 'Vary'],
        cacheControl: ['no-store'],
      },
    },
    errors: ['unauthorized'],
    handler: (deps) => {
      const expected = deps.token ? digest(deps.token) : null;
      const rendered = sharedResult(RENDER_FRESH_MS, async (): Promise<Rendering> => {
        const { text, contentType } = await deps.registry();
        const body = Buffer.from(text);
        const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
        return { body, etag, contentType, gzip: null };
      });
      return async (ctx) => {
        if (expected && !bearerMatches(ctx, expected)) {
          ctx.set('WWW-Authenticate', 'Bearer realm="metrics"');
          throw errors.unauthorized('/metrics needs Authorization: Bearer <METRICS_TOKEN>');
        }
        const r = await rendered();
        ctx.set('Vary', 'Accept-Encoding');
        if (/\bgzip\b/.test(ctx.get('accept-encoding'))) {
          // Compressed off the event loop (zlib's thread pool), once per rendering.
          const body = await (r.gzip ??= gzipped(r.body));
          sendWithEtag(ctx, body, r.contentType, `${r.etag.slice(0, -1)}-gz"`, 'no-store');
          if (ctx.status === 200) ctx.set('Content-Encoding', 'gzip');
        } else {
          sendWithEtag(ctx, r.body, r.contentType, r.etag, 'no-store');
        }
      };
    },
  }),
]);

export const registryText = (registry: Registry) => async () => ({
  text: await registry.metrics(),
  contentType: registry.contentType,
});
