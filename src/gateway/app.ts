/**
 * The Koa application, built from its dependencies so tests can drive `app.callback()` with no port.
 * Middleware order: request metrics + access log → request id + security headers → error mapper (and ETag/304
 * on the way back) → rate limit → declared body size, body, auth → hot read routes → allowed methods (405) → routes.
 */
import Koa from 'koa';
import { koaBody } from 'koa-body';
import type { Logger } from 'pino';
import type { AuthService } from '../domain/auth/auth.service.ts';
import type { ClientFactsReader } from './client-facts.ts';
import type { Limiter } from '../domain/rate-limit.ts';
import type { AppError, ErrorCode } from '../domain/errors.ts';
import type { AppState } from './context.ts';
import { requestMetrics, routeLabel } from './middleware/request-metrics.ts';
import { requestHeaders } from './middleware/request-headers.ts';
import { errorHandler } from './middleware/error-handler.ts';
import { applyConditionalGet } from './middleware/conditional-get.ts';
import type { Metrics } from '../metrics.ts';
import { ipRateLimit } from './middleware/rate-limit.ts';
import { authenticate } from './middleware/authenticate.ts';
import { HotRoutes, routePatterns } from './hot-routes.ts';
import { JSON_LIMIT_BYTES, refuseDeclaredOversize } from './limits.ts';
import type { ReadinessCheck } from './routes/health.routes.ts';
import { buildRoutes, ipLimitedRoutes, type RouteDeps } from './routes/index.ts';
import { tusHeaders } from './routes/resumable.routes.ts';
import { WEB_ERROR_PAGE } from './routes/web.routes.ts';
import { openApiDocument } from './openapi/openapi.document.ts';

/** The operational probes, the routes declared never rate limited: never authenticated as a user either. */
const PROBE_PATHS = ipLimitedRoutes.unlimited;

export interface AppDeps {
  log: Logger;
  trustProxy: boolean;
  auth: AuthService;
  /** Turns a request into the client facts kept as vote-ring evidence (sign-up, votes): client-facts.ts. */
  clientFacts: ClientFactsReader;
  limiters: { auth: Limiter; general: Limiter; media: Limiter; upload: Limiter; vote: Limiter; report: Limiter };
  readiness: ReadinessCheck[];
  isShuttingDown: () => boolean;
  /** The dependencies of the route groups (routes/index.ts) beyond those above (auth, health, docs). */
  routes: Omit<RouteDeps, 'auth' | 'health' | 'docs'>;
  onError?: (code: ErrorCode) => void;
  /** Maps infrastructure errors (e.g. the database is unreachable) to contract errors (503 busy). */
  classifyError?: (err: unknown) => AppError | null;
  metrics?: Metrics;
}

export function createApp(deps: AppDeps): Koa<AppState> {
  // Behind our proxy only the address it appended to X-Forwarded-For is trusted, not what the client wrote before it.
  const app = new Koa<AppState>({ proxy: deps.trustProxy, maxIpsCount: 1 });
  // Koa would print every error to stderr; the error handler logs what matters, as JSON, with the request id.
  app.silent = true;

  // Every route, mounted here only: the hot reads (feed pages, probes) found by exact path first; every other route
  // in one router (a request is matched once, not once per route file).
  const routes = buildRoutes(
    {
      ...deps.routes,
      auth: { auth: deps.auth, facts: deps.clientFacts },
      health: { checks: deps.readiness, isShuttingDown: deps.isShuttingDown },
      docs: { document: openApiDocument },
    },
    deps.limiters,
  );
  const hot = HotRoutes.routes([routes.hot]);
  const root = routes.router;

  // Requests refused before routing (429, a malformed or oversized body) are labelled by their route too.
  const route = routeLabel(routePatterns([hot.router, root]));
  // Outermost: times the whole request and sees its final status (metrics by route pattern, the access log).
  app.use(requestMetrics({ log: deps.log, metrics: deps.metrics, route }));
  // Request id, security headers, Connection: close while draining: on every response, whatever fails below.
  app.use(requestHeaders({ log: deps.log, isShuttingDown: deps.isShuttingDown }));
  // The contract's error body for anything thrown below, and the JSON 404 / 405.
  const onError = deps.onError ? { onError: deps.onError } : {};
  app.use(
    errorHandler({
      ...onError,
      ...(deps.classifyError ? { classify: deps.classifyError } : {}),
      route,
      page: WEB_ERROR_PAGE,
      // ETag / 304 on GET JSON answers, once the routes have answered (errors never reach it).
      answered: applyConditionalGet,
    }),
  );
  const { limiters } = deps;
  app.use(
    ipRateLimit({ auth: limiters.auth, general: limiters.general, media: limiters.media, routes: ipLimitedRoutes }),
  );
  const jsonBody = koaBody({
    json: true,
    jsonLimit: JSON_LIMIT_BYTES,
    jsonStrict: true,
    multipart: false,
    urlencoded: false,
    text: false,
  });
  const auth = authenticate({ auth: deps.auth });
  app.use(function bodyThenAuth(ctx, next) {
    // A body declared larger than any route reads: 413 before a byte of it is read (in this layer, not one of its
    // own: a layer costs every request ~0.2 µs of dispatch for a check of one header).
    refuseDeclaredOversize(ctx);
    // Only methods that carry a body pay for content-type checks (one layer for both: each costs).
    if (ctx.method === 'GET' || ctx.method === 'HEAD') {
      // Probes need no user (the /metrics route checks METRICS_TOKEN itself) and are not rate limited: resolving
      // their Authorization as a user credential would verify a JWT, or look an API token up, on every probe.
      if (PROBE_PATHS.has(ctx.path)) {
        ctx.state.principal = null;
        ctx.state.authError = null;
        return next();
      }
      return auth(ctx, next);
    }
    return jsonBody(ctx, () => auth(ctx, next)) as Promise<void>;
  });

  app.use(hot);
  // tus 1.0: OPTIONS and the Tus-Resumable check for the resumable-upload paths (resumable.routes.ts); after the hot
  // reads, which never reach it.
  app.use(tusHeaders);
  // A known path called with another method: a bare 405 (501 for a method the router does not know) with
  // `Allow` (from the routes either router matched), which the error mapper turns into the contract's 405
  // method_not_allowed (or 404 for an unknown path). After the hot routes, so the hot reads do not pass through it.
  app.use(root.allowedMethods());
  app.use(root.routes());
  return app;
}
