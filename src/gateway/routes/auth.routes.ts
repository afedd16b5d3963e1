import Router from '@koa/router';
import type { AuthService, Session } from '../../domain/auth/auth.service.ts';
import type { AppContext, AppState } from '../context.ts';
import { AUTH_COOKIE, requireUser } from '../middleware/authenticate.ts';
import { parse } from '../validate.ts';
import { AuthAction, LoginBody, LogoutBody, RegisterBody, TokenCreateBody } from '../schemas/auth.schemas.ts';
import { errors } from '../../domain/errors.ts';
import { isUuid } from '../../domain/ids.ts';

function setSessionCookie(ctx: AppContext, session: Session | null): void {
  ctx.cookies.set(AUTH_COOKIE, session?.token ?? '', {
    httpOnly: true,
    sameSite: 'lax',
    path: '/',
    secure: ctx.secure,
    overwrite: true,
    ...(session ? { maxAge: session.expiresAt.getTime() - Date.now() } : { maxAge: 0, expires: new Date(0) }),
  });
}

const sessionBody = (s: Session) => ({ token: s.token, expires_at: s.expiresAt.toISOString(), user: s.user });

export function authRoutes(deps: { auth: AuthService }): Router<AppState> {
  const router = new Router<AppState>();

  router.post('/api/auth', async (ctx) => {
    const { action } = parse(AuthAction, ctx.request.body);
    if (action === 'register') {
      const session = await deps.auth.register(parse(RegisterBody, ctx.request.body));
      setSessionCookie(ctx, session);
      ctx.status = 201;
      ctx.body = sessionBody(session);
    } else if (action === 'login') {
      const session = await deps.auth.login(parse(LoginBody, ctx.request.body));
      setSessionCookie(ctx, session);
      ctx.body = sessionBody(session);
    } else {
      parse(LogoutBody, ctx.request.body);
      setSessionCookie(ctx, null);
      ctx.body = { success: true };
    }
  });

  router.post('/api/auth/tokens/generate', async (ctx) => {
    const user = requireUser(ctx);
    const { name } = parse(TokenCreateBody, ctx.request.body);
    ctx.status = 201;
    ctx.body = await deps.auth.generateToken(user, name);
  });

  router.get('/api/auth/tokens', async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { tokens: await deps.auth.listTokens(requireUser(ctx)) };
  });

  router.delete('/api/auth/tokens/:id', async (ctx) => {
    const user = requireUser(ctx);
    if (!isUuid(ctx.params.id)) throw errors.notFound(`no API token ${ctx.params.id} of yours`);
    await deps.auth.revokeToken(user, ctx.params.id);
    ctx.body = { success: true, id: ctx.params.id };
  });

  router.get('/api/me', async (ctx) => {
    ctx.set('Cache-Control', 'private, no-store');
    ctx.body = { user: await deps.auth.me(requireUser(ctx)) };
  });

  return router;
}
