import { errors } from '../../domain/errors.ts';
import type { AuthService } from '../../domain/auth/auth.service.ts';
import type { Principal } from '../../domain/users.ts';
import type { AppContext } from '../context.ts';

export const AUTH_COOKIE = 'auth-token';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Where a client with a stale token signs in again (register, login, logout). */
const SIGN_IN_PATH = '/api/auth';

/**
 * Resolves the caller from `Authorization: Bearer <JWT or API token>` or, failing that, the auth-token
 * cookie. A Bearer token that does not verify (invalid, expired, revoked) is 401 `unauthorized` on every route,
 * public ones included (as most APIs answer, and API.md's table says): a client learns its token is bad on its
 * first request, not only on a route that needs a user. Two exceptions stay anonymous with `authError` set (routes
 * that need a user throw it): `POST /api/auth` (signing in again is how a client replaces a stale token), and a
 * cookie that does not verify (an expired session still browses the pages and signs in again); another scheme
 * (`Basic` from a proxy in front) is not ours to judge on a public route.
 */
export function authenticate(opts: { auth: AuthService }) {
  const resolve = async (ctx: AppContext, next: () => Promise<unknown>) => {
    const header = ctx.get('authorization');
    // Parse cookies only when ours may be there (most API calls carry none).
    const cookie = header || !ctx.get('cookie').includes(`${AUTH_COOKIE}=`) ? undefined : ctx.cookies.get(AUTH_COOKIE);
    if (header) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
      ctx.state.principal = m ? await opts.auth.authenticate(m[1]!, false) : null;
      if (!ctx.state.principal) {
        ctx.state.authError = errors.unauthorized(
          m ? 'token is invalid, expired or revoked' : 'Authorization header must be "Bearer <token>"',
        );
        if (m && !(ctx.method === 'POST' && ctx.path === SIGN_IN_PATH)) {
          ctx.set('WWW-Authenticate', 'Bearer error="invalid_token"');
          throw ctx.state.authError;
        }
      }
    } else if (cookie) {
      ctx.state.principal = await opts.auth.authenticate(cookie, true);
      if (!ctx.state.principal) ctx.state.authError = errors.unauthorized('auth-token cookie is invalid or expired');
    }
    if (ctx.state.principal?.viaCookie && !SAFE_METHODS.has(ctx.method) && isCrossSite(ctx)) {
      throw errors.forbidden(
        'cross-site request refused: a state-changing request authenticated by cookie must come from this site',
      );
    }
    await next();
  };
  return function authenticate(ctx: AppContext, next: () => Promise<unknown>) {
    ctx.state.principal = null;
    ctx.state.authError = null;
    // Most reads carry no credential at all: no async frame for them.
    const { authorization, cookie } = ctx.req.headers;
    return authorization || cookie ? resolve(ctx, next) : next();
  };
}

/** `Sec-Fetch-Site: cross-site`, or an Origin that is not this service's own. */
function isCrossSite(ctx: AppContext): boolean {
  if (ctx.get('sec-fetch-site') === 'cross-site') return true;
  const origin = ctx.get('origin');
  if (!origin) return false;
  return origin !== `${ctx.protocol}://${ctx.host}`;
}

/** The caller, or a 401 saying why there is none. */
export function requireUser(ctx: AppContext): Principal {
  if (ctx.state.principal) return ctx.state.principal;
  throw ctx.state.authError ?? errors.unauthorized();
}
