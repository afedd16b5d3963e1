/**
 * The route table: every route group, in the order the OpenAPI document lists them and the app mounts them.
 * Adding a route is adding one declaration (route.ts) to a group here; a new group is one line below.
 */
import Router from '@koa/router';
import type { Limiter } from '../../domain/rate-limit.ts';
import type { AppState } from '../context.ts';
import { HotRoutes } from '../hot-routes.ts';
import type { Operation } from '../openapi/operation.types.ts';
import { authRoutes } from './auth.routes.ts';
import { docsRoutes } from './docs.routes.ts';
import { feedRoutes } from './feeds.routes.ts';
import { healthRoutes } from './health.routes.ts';
import { imageRoutes } from './images.routes.ts';
import { metricsRoutes } from './metrics.routes.ts';
import { moderationRoutes } from './moderation.routes.ts';
import { oembedRoutes } from './oembed.routes.ts';
import { mounted, mountRoutes, type Route, type UserLimitName } from './route.ts';
import { resumableRoutes } from './resumable.routes.ts';
import { tagRoutes } from './tags.routes.ts';
import { uploadRoutes } from './uploads.routes.ts';
import { voteRoutes } from './votes.routes.ts';
import { webhookRoutes } from './webhooks.routes.ts';
import { WEB_MEDIA_PATHS, webRoutes } from './web.routes.ts';

const groups = {
  auth: authRoutes,
  uploads: uploadRoutes,
  resumable: resumableRoutes,
  images: imageRoutes,
  votes: voteRoutes,
  feeds: feedRoutes,
  oembed: oembedRoutes,
  tags: tagRoutes,
  moderation: moderationRoutes,
  webhooks: webhookRoutes,
  health: healthRoutes,
  metrics: metricsRoutes,
  docs: docsRoutes,
};

/** Every API operation (and the reference page's), declared once: the document is built from these. */
export const operations: readonly Operation[] = Object.values(groups).flat();

/**
 * The per-IP limits the routes declare: the paths never limited (the probes), the routes spending `auth`, and the
 * GETs spending `media` (image variants, and the pages' static assets); every other route spends `general`.
 */
export const ipLimitedRoutes = {
  unlimited: new Set(operations.filter((op) => op.limit === null).map((op) => op.path)),
  auth: operations.filter((op) => op.limit === 'auth'),
  media: [
    ...operations.filter((op) => op.limit === 'media'),
    ...WEB_MEDIA_PATHS.map((path) => ({ method: 'get', path })),
  ],
};

type DepsOf<T> = T extends Route<infer D>[] ? D : never;

/** The dependencies of every route group, by group; `web`: the pages (no API operations, not in the document). */
export type RouteDeps = { [K in keyof typeof groups]: DepsOf<(typeof groups)[K]> } & {
  web: Parameters<typeof webRoutes>[0];
};

/**
 * Every route of the app: the hot reads (found by exact path, hot-routes.ts) and one router for the rest, the web
 * pages last. Built from each group's dependencies and the per-user limiters the declared limits name.
 */
export function buildRoutes(deps: RouteDeps, limiters: Record<UserLimitName, Limiter>) {
  const hot = new HotRoutes();
  const router = new Router<AppState>();
  mountRoutes(
    (Object.keys(groups) as Array<keyof typeof groups>).map((name) =>
      mounted<never>(groups[name], deps[name] as never),
    ),
    { router, hot, limiters },
  );
  router.use(webRoutes(deps.web).routes());
  return { hot, router };
}
