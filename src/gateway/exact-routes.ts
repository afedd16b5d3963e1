import type Router from '@koa/router';
import type { AppContext, AppState } from './context.ts';

type Handler = (ctx: AppContext, next: () => Promise<unknown>) => unknown;
type RouteLayer = {
  path: unknown;
  methods: string[];
  paramNames: unknown[];
  stack: Handler[];
  match(path: string): boolean;
};

const done = () => Promise.resolve();

/**
 * @koa/router tests every route's pattern in turn, for every request (about fifty here, each with a debug()
 * call). GET routes with a fixed path — the hot public reads (`/api/uploads`, `/api/items-recent`) among
 * them — are found by exact path instead; everything else (parameters, a trailing slash, other methods)
 * goes through the router as before. A path enters this map only when the router would run exactly that
 * one route for it, so the answer is the same either way; the route pattern is set for metrics as the
 * router sets it.
 */
export function exactGetRoutes(router: Router<AppState>) {
  const layers = router.stack as unknown as RouteLayer[];
  const byPath = new Map<string, Handler[]>();
  for (const layer of layers) {
    const path = layer.path;
    if (
      typeof path !== 'string' ||
      layer.paramNames.length > 0 ||
      !layer.methods.includes('GET') ||
      !/^[A-Za-z0-9/_.-]+$/.test(path)
    )
      continue;
    const run = layers.filter((l) => l.match(path) && (l.methods.length === 0 || l.methods.includes('GET')));
    if (run.length === 1 && run[0] === layer) byPath.set(path, layer.stack);
  }
  const middleware = function exactGetRoutes(ctx: AppContext, next: () => Promise<unknown>) {
    const stack = ctx.method === 'GET' || ctx.method === 'HEAD' ? byPath.get(ctx.path) : undefined;
    if (!stack) return next();
    const routed = ctx as AppContext & { _matchedRoute?: string; routerPath?: string; params?: Record<string, string> };
    routed._matchedRoute = routed.routerPath = ctx.path;
    routed.params = {};
    const dispatch = (i: number): Promise<unknown> =>
      Promise.resolve(i === stack.length ? done() : stack[i]!(ctx, () => dispatch(i + 1)));
    return dispatch(0);
  };
  /** The paths served from the map (for tests and operators' curiosity). */
  return Object.assign(middleware, { paths: [...byPath.keys()] });
}

/**
 * The route pattern a request's method and path match (`/api/upload/:id`, never the raw path), or, when no
 * route serves that method there, the pattern of one that serves the path with another method (a 405); undefined
 * for an unknown path. Uses the router's own matching, so it agrees with `ctx._matchedRoute`. For requests
 * answered before routing (a 429, a malformed body): it costs one pass over the routes, as a 404 does.
 */
export function routePatterns(router: Router<AppState>) {
  const patternOf = (layers: ReadonlyArray<{ path: unknown; methods: string[] }>): string | undefined => {
    for (let i = layers.length - 1; i >= 0; i--) {
      const l = layers[i]!;
      if (l.methods.length > 0 && typeof l.path === 'string') return l.path;
    }
    return undefined;
  };
  return (method: string, path: string): string | undefined => {
    const matched = router.match(path, method);
    return patternOf(matched.pathAndMethod) ?? patternOf(matched.path);
  };
}
