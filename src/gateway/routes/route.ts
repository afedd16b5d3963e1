/**
 * A route is declared once: one object per operation carries its method, path, auth, rate limit, schemas and
 * OpenAPI text (the `Operation` the document is built from) next to its handler, as fastify's route options do.
 * `mountRoutes` turns a list of them into the Koa routes; openapi/openapi.document.ts builds the document from
 * the same list. What the declaration says, the builder does, so the two cannot drift apart:
 * - `limit` `upload`/`vote`/`report`: the per-user limit (`userRateLimit`), after `before` and before `receive`;
 *   `auth`/`general`/`media`/null are the per-IP limits, applied before routing by the rate-limit middleware;
 * - `auth: 'required'`: the caller's user or 401 (`requireUser`); `admin`: 403 `forbidden` to a non-admin;
 * - `scope`: an API token without it gets 403 `insufficient_scope` naming it, first in the chain (before a body is
 *   received or a limit spent; after the admin check, so a non-admin hears `forbidden`); on an `optional` route the
 *   token's caller is served as anonymous;
 * - `params`, `query` and `body.json` are parsed with the declared schemas, in that order, and handed to the
 *   handler typed (with `handlerParsesBody`, e.g. a multipart upload, the body is the handler's to read).
 * Handlers are factories of the route group's dependencies, so the list itself is static: the document needs
 * no dependencies, and state a handler keeps (a cache, a shared check) is made once per app.
 */
import Router from '@koa/router';
import { LRUCache } from 'lru-cache';
import type { z } from 'zod';
import { errors } from '../../domain/errors.ts';
import type { Limiter } from '../../domain/rate-limit.ts';
import { hasScope, viewerWith, type Principal } from '../../domain/users.ts';
import type { AppContext, AppState } from '../context.ts';
import { HotRoutes } from '../hot-routes.ts';
import { requireUser } from '../middleware/authenticate.ts';
import { userRateLimit } from '../middleware/rate-limit.ts';
import type { LimitName, Operation } from '../openapi/operation.types.ts';
import { parse } from '../validate.ts';

export type Middleware = (ctx: AppContext, next: () => Promise<unknown>) => unknown;
type Auth = Operation['auth'];
type Schema = z.ZodObject | undefined;
type Body = z.ZodType | undefined;
type Parsed<S> = S extends z.ZodType ? z.output<S> : undefined;

/** The limits spent per authenticated user, by the route (the others are per IP, before routing). */
export type UserLimitName = Extract<LimitName, 'upload' | 'vote' | 'report'>;
const USER_LIMITS: ReadonlySet<LimitName | null> = new Set<UserLimitName>(['upload', 'vote', 'report']);

/** What the builder hands a handler: the caller and the request parts, parsed with the declared schemas. */
export interface RouteInput<A extends Auth, P, Q, B> {
  user: A extends 'required' ? Principal : Principal | null;
  params: Parsed<P>;
  query: Parsed<Q>;
  body: Parsed<B>;
}

type Handler<I> = (ctx: AppContext, input: I) => unknown;

/** The parts of a route that are not in its OpenAPI operation. */
interface RouteParts<D> {
  /** Admins only (the moderators): 403 `forbidden` to another user, after the 401 of `auth: 'required'`. */
  admin?: true;
  /**
   * A fixed-path GET found by exact path before the router (hot-routes.ts): its query is parsed once per
   * distinct query string.
   */
  hot?: true;
  /** Requests an API token may make without the route's `scope` (a token revoking itself). */
  scopeExempt?: (ctx: AppContext, user: Principal) => boolean;
  /** Middleware before the user rate limit (e.g. refusing uploads while shutting down). */
  before?: (deps: D) => Middleware[];
  /** Requests the user rate limit lets through without spending (an idempotent replay). */
  limitExempt?: (deps: D) => (ctx: AppContext) => Promise<boolean>;
  /** Middleware after the user rate limit, receiving the body (a multipart upload). */
  receive?: (deps: D) => Middleware;
}

/** One route as written: typed by its own auth and schemas. */
export interface RouteSpec<D, A extends Auth, P extends Schema, Q extends Schema, B extends Body, R extends boolean>
  extends Omit<Operation, 'auth' | 'params' | 'query' | 'body'>, RouteParts<D> {
  auth: A;
  params?: P;
  query?: Q;
  body?: Omit<NonNullable<Operation['body']>, 'json'> & { json?: B };
  /** The handler reads the request body itself (e.g. one schema per `action`), not through `body.json`. */
  handlerParsesBody?: R;
  /** Built once per app from the group's dependencies. */
  handler: (deps: D) => Handler<RouteInput<A, P, Q, R extends true ? undefined : B>>;
}

/** A route of a group whose dependencies are `D`, its input types erased (they were checked where it was written). */
export interface Route<D> extends Operation, RouteParts<D> {
  handlerParsesBody?: boolean;
  handler: (deps: D) => Handler<{ user: Principal | null; params: unknown; query: unknown; body: unknown }>;
}

/**
 * Declares the routes of one group (one file), whose handlers are built from dependencies `D`:
 * `export const tagRoutes = routes<TagDeps>((route) => [route({ method: 'get', … handler }), …])`.
 */
export function routes<D>(
  declare: (
    route: <
      A extends Auth,
      P extends Schema = undefined,
      Q extends Schema = undefined,
      B extends Body = undefined,
      R extends boolean = false,
    >(
      spec: RouteSpec<D, A, P, Q, B, R>,
    ) => Route<D>,
  ) => Route<D>[],
): Route<D>[] {
  return declare((spec) => spec as unknown as Route<D>);
}

/** Throws the 403 of an admin route to a user who is not an admin. */
function requireAdmin(user: Principal): void {
  if (!user.isAdmin) throw errors.forbidden('only admins (the moderators) may use this route');
}

/** The route's middleware chain, its handler last, built from the group's dependencies. */
function chainOf<D>(route: Route<D>, deps: D, limiters: Record<UserLimitName, Limiter>): Middleware[] {
  const handler = route.handler(deps);
  const params = route.params;
  const query = route.query;
  const body = route.handlerParsesBody ? undefined : route.body?.json;
  // The same few query strings arrive again and again on a hot read: each is validated once.
  const queries = query && route.hot ? new LRUCache<string, object>({ max: 1000 }) : null;
  const parseQuery = (ctx: AppContext): unknown => {
    if (!query) return undefined;
    if (!queries) return parse(query, ctx.query, 'query');
    let q = queries.get(ctx.querystring);
    if (!q) queries.set(ctx.querystring, (q = parse(query, ctx.query, 'query')));
    return q;
  };
  const required = route.auth === 'required' || route.admin;
  const scope = route.scope;
  /** The admin and scope checks of a known caller (an unknown one gets its 401 from `requireUser`). */
  const allowed = (ctx: AppContext, user: Principal) => {
    if (route.admin) requireAdmin(user);
    if (scope && !hasScope(user, scope) && !route.scopeExempt?.(ctx, user)) throw errors.insufficientScope(scope);
  };
  const last = (ctx: AppContext) => {
    let user = required ? requireUser(ctx) : ctx.state.principal;
    if (required) allowed(ctx, user!);
    // An optional route serves a token without its scope as it serves an anonymous caller.
    else if (scope) user = viewerWith(user, scope);
    return handler(ctx, {
      user,
      // Path parameters are strings by the router; the declared schema names them (and the document checks it
      // against the path).
      params: params ? (ctx as AppContext & { params: Record<string, string> }).params : undefined,
      query: parseQuery(ctx),
      body: body ? parse(body, ctx.request.body) : undefined,
    });
  };
  const chain: Middleware[] = [];
  // Refused before anything else runs (a body is received, a limit spent), when anything runs before the handler.
  if (required && (route.before || route.receive || USER_LIMITS.has(route.limit))) {
    chain.push((ctx, next) => {
      if (ctx.state.principal) allowed(ctx, ctx.state.principal);
      return next();
    });
  }
  chain.push(...(route.before?.(deps) ?? []));
  if (USER_LIMITS.has(route.limit)) {
    const exempt = route.limitExempt?.(deps);
    chain.push(userRateLimit(limiters[route.limit as UserLimitName], exempt ? { exempt } : {}));
  }
  if (route.receive) chain.push(route.receive(deps));
  chain.push(last);
  return chain;
}

/** A group's routes built with its dependencies: the middleware chain of each, its handler last. */
export type Mounted = (
  limiters: Record<UserLimitName, Limiter>,
) => Array<{ route: Operation; hot: boolean; chain: Middleware[] }>;

/** A group with the dependencies its handlers are built from (typed together: one group's deps fit no other). */
export const mounted =
  <D>(list: Route<D>[], deps: D): Mounted =>
  (limiters) =>
    list.map((route) => ({ route, hot: Boolean(route.hot), chain: chainOf(route, deps, limiters) }));

/** Mounts route groups: hot reads on `hot`, every other route on `router`, in the order given. */
export function mountRoutes(
  groups: ReadonlyArray<Mounted>,
  target: { router: Router<AppState>; hot: HotRoutes; limiters: Record<UserLimitName, Limiter> },
): void {
  for (const group of groups) {
    for (const { route, hot, chain } of group(target.limiters)) {
      if (hot) {
        if (route.method !== 'get' || chain.length !== 1) throw new Error(`hot route ${route.path}: one GET handler`);
        target.hot.get(route.path, chain[0]! as never);
      } else target.router[route.method](route.path, ...(chain as never[]));
    }
  }
}
