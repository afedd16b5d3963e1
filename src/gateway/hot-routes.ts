import Router, { type RouterContext, type RouterMiddleware } from '@koa/router';
import type { AppContext, AppState } from './context.ts';

type Handler = RouterMiddleware<AppState>;
type Routed = AppContext & { routerPath?: string; params?: Record<string, string> };

/** The params of a fixed path: none (shared, frozen: nothing may add any). */
const NO_PARAMS: Record<string, string> = Object.freeze({});

/** A path that @koa/router matches only as itself (and with a trailing slash or other letter case). */
const FIXED_PATH = /^(?:\/[A-Za-z0-9_.-]+)+$/;

/**
 * The hot reads (feed pages, health probes): GET routes with a fixed path and one handler, declared here the
 * way routes are declared on a @koa/router Router. Why: a router dispatch (every route's pattern tested, a
 * middleware chain composed per request) costs about 1.7 µs of a cached feed read's ~19; an exact-path lookup
 * costs 0.1. Every route is also registered on `router`, a plain @koa/router Router that answers whatever the
 * lookup does not (a trailing slash, other letter case) and is what `allowedMethods()` (405 with `Allow`) and
 * `routePatterns()` see; a lookup hit sets `ctx.routerPath` and `ctx.params` as the router does.
 */
export class HotRoutes {
  readonly router = new Router<AppState>();
  readonly #byPath = new Map<string, Handler>();

  get(path: string, handler: Handler): this {
    if (!FIXED_PATH.test(path))
      throw new Error(`hot route ${path}: only fixed paths (no parameters) are looked up exactly`);
    this.router.get(path, handler);
    this.#byPath.set(path, handler);
    return this;
  }

  /** The paths answered by exact lookup. */
  get paths(): string[] {
    return [...this.#byPath.keys()];
  }

  /** One middleware serving the routes of every HotRoutes given: by exact path, else through their routers. */
  static routes(all: ReadonlyArray<HotRoutes>) {
    // The declared path goes with its handler: the route label is that string, not the one parsed per request
    // (the metrics find their series by it, and a string made once has its hash computed once).
    const byPath = new Map<string, { path: string; handler: Handler }>();
    const router = new Router<AppState>();
    for (const hot of all) {
      for (const [path, handler] of hot.#byPath) {
        if (byPath.has(path)) throw new Error(`hot route ${path} is declared twice`);
        byPath.set(path, { path, handler });
      }
      router.use(hot.router.routes());
    }
    const routed = router.routes();
    return Object.assign(
      function hotRoutes(ctx: AppContext, next: () => Promise<unknown>): unknown {
        const hit = ctx.method === 'GET' || ctx.method === 'HEAD' ? byPath.get(ctx.path) : undefined;
        if (!hit) return routed(ctx as never, next) as unknown;
        const r = ctx as Routed;
        r.routerPath = hit.path;
        r.params = NO_PARAMS;
        return hit.handler(ctx as unknown as RouterContext<AppState>, next) as unknown;
      },
      { router },
    );
  }
}

type Pattern = { path: unknown; methods: string[] };

/**
 * The route pattern a request's method and path match (`/api/upload/:id`, never the raw path), or, when no
 * route serves that method there, the pattern of one that serves the path with another method (a 405); undefined
 * for an unknown path. Asks each router in the order they are mounted, with their own matching (`match()`), so it
 * agrees with `ctx.routerPath`. For requests answered before routing (a 429, a malformed body): it costs one
 * pass over the routes, as a 404 does.
 */
export function routePatterns(routers: ReadonlyArray<Router<AppState>>) {
  const patternOf = (layers: ReadonlyArray<Pattern>): string | undefined => {
    for (let i = layers.length - 1; i >= 0; i--) {
      const l = layers[i]!;
      if (l.methods.length > 0 && typeof l.path === 'string') return l.path;
    }
    return undefined;
  };
  return (method: string, path: string): string | undefined => {
    let other: string | undefined;
    for (const router of routers) {
      const matched = router.match(path, method);
      const served = patternOf(matched.pathAndMethod);
      if (served) return served;
      other ??= patternOf(matched.path);
    }
    return other;
  };
}
