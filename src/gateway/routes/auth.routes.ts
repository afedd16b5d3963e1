import { z } from 'zod';
import type { AuthService, Session } from '../../domain/auth/auth.service.ts';
import type { AppContext } from '../context.ts';
import type { ClientFactsReader } from '../client-facts.ts';
import { AUTH_COOKIE } from '../middleware/authenticate.ts';
import { parse } from '../validate.ts';
import {
  AuthAction,
  AuthRequest,
  LoginBody,
  LogoutBody,
  Me,
  RegisterBody,
  SessionResponse,
  TokenCreateBody,
  TokenCreated,
  TokenList,
  TokenRevoked,
} from '../schemas/auth.schemas.ts';
import { Success } from '../schemas/common.schemas.ts';
import { errors } from '../../domain/errors.ts';
import { isUuid } from '../../domain/ids.ts';
import { routes } from './route.ts';

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

const TokenIdParam = z.object({
  id: z
    .string()
    .describe('The API token id (a UUID).')
    .meta({ examples: ['9d7c4b2a-1e3f-4a5b-8c6d-7e8f9a0b1c2d'] }),
});

export const authRoutes = routes<{ auth: AuthService; facts: ClientFactsReader }>((route) => [
  route({
    method: 'post',
    path: '/api/auth',
    operationId: 'auth',
    tag: 'auth',
    summary: 'Register, log in or log out',
    description:
      'One endpoint, three actions. Register and login answer with a JWT and set the `auth-token` cookie ' +
      '(HttpOnly, SameSite=Lax, Path=/, Secure over HTTPS, Max-Age = JWT lifetime); logout clears it. ' +
      'Every request counts toward RATE_LIMIT_AUTH (per client IP), whatever its action or outcome. ' +
      'A wrong email and a wrong password get the same 401; the right password of a banned user gets 403 `banned`. ' +
      'Passwords are hashed on a small pool of their own; ' +
      'when its queue is full, register and login answer 503 `busy` with Retry-After.',
    auth: 'none',
    limit: 'auth',
    body: { json: AuthRequest },
    responses: {
      200: {
        description: 'Logged in (`login`) or logged out (`logout`).',
        json: [SessionResponse, Success],
        headers: ['Set-Cookie'],
      },
      201: { description: 'Registered (`register`).', json: SessionResponse, headers: ['Set-Cookie'] },
    },
    errors: ['invalid_request', 'unauthorized', 'banned', 'conflict'],
    // One schema per action, so each answers with its own field errors.
    handlerParsesBody: true,
    handler: (deps) => async (ctx) => {
      const { action } = parse(AuthAction, ctx.request.body);
      if (action === 'register') {
        // The sign-up's network hash and user-agent family, kept as vote-ring evidence (docs/vote-rings.md).
        const session = await deps.auth.register(parse(RegisterBody, ctx.request.body), deps.facts.of(ctx));
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
    },
  }),
  route({
    method: 'post',
    path: '/api/auth/tokens/generate',
    operationId: 'createApiToken',
    tag: 'auth',
    summary: 'Create an API token',
    description:
      'The secret (`pv_…`) is shown only in this response; the server keeps only its hash. ' +
      'A token has the `scopes` asked for (`moderate` only for admins, else 403 `forbidden`), or every scope of its ' +
      'owner; it works until revoked, or until `expires_at` (from `expires_in`, at most a year), then gets 401. ' +
      'Tokens are managed with a JWT, the cookie, or a token with `manage`; a token made by a token has at most ' +
      "that token's scopes and expiry (403 `forbidden` beyond them).",
    auth: 'required',
    scope: 'manage',
    limit: 'general',
    body: { json: TokenCreateBody },
    responses: { 201: { description: 'The new token, with its secret.', json: TokenCreated } },
    errors: ['invalid_request', 'forbidden'],
    handler:
      (deps) =>
      async (ctx, { user, body }) => {
        ctx.status = 201;
        ctx.body = await deps.auth.generateToken(user, {
          name: body.name,
          scopes: body.scopes,
          expiresIn: body.expires_in,
          expiresAt: body.expires_at,
        });
      },
  }),
  route({
    method: 'get',
    path: '/api/auth/tokens',
    operationId: 'listApiTokens',
    tag: 'auth',
    summary: "List the caller's API tokens",
    auth: 'required',
    scope: 'manage',
    limit: 'general',
    responses: { 200: { description: 'Tokens without their secrets.', json: TokenList, cacheControl: ['no-store'] } },
    handler:
      (deps) =>
      async (ctx, { user }) => {
        ctx.set('Cache-Control', 'no-store');
        ctx.body = { tokens: await deps.auth.listTokens(user) };
      },
  }),
  route({
    method: 'delete',
    path: '/api/auth/tokens/:id',
    operationId: 'revokeApiToken',
    tag: 'auth',
    summary: 'Revoke an API token',
    description: 'A revoked token gets 401 at once. Any API token may revoke itself, whatever its scopes.',
    auth: 'required',
    scope: 'manage',
    limit: 'general',
    params: TokenIdParam,
    scopeExempt: (ctx, user) => user.token?.id === (ctx as AppContext & { params: { id?: string } }).params.id,
    responses: { 200: { description: 'Revoked.', json: TokenRevoked } },
    errors: ['not_found'],
    handler:
      (deps) =>
      async (ctx, { user, params }) => {
        if (!isUuid(params.id)) throw errors.notFound(`no API token ${String(params.id)} of yours`);
        await deps.auth.revokeToken(user, params.id);
        ctx.body = { success: true, id: params.id };
      },
  }),
  route({
    method: 'get',
    path: '/api/me',
    operationId: 'me',
    tag: 'auth',
    summary: 'The authenticated user',
    auth: 'required',
    scope: 'read',
    limit: 'general',
    responses: { 200: { description: 'The caller, with their email.', json: Me, cacheControl: ['private, no-store'] } },
    handler:
      (deps) =>
      async (ctx, { user }) => {
        ctx.set('Cache-Control', 'private, no-store');
        ctx.body = { user: await deps.auth.me(user) };
      },
  }),
]);
