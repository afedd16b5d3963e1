import { errors } from '../../domain/errors.ts';
import type { AuthService } from '../../domain/auth/auth.service.ts';
import type { Principal } from '../../domain/users.ts';
import type { AppContext } from '../context.ts';

export const AUTH_COOKIE = 'auth-token';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Resolves the caller from `Authorization: Bearer <JWT or API token>` or, failing that, the auth-token
 * cookie. A credential that does not verify leaves an anonymous request with `authError` set: public
 * routes still answer, routes that need a user throw it (401).
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
