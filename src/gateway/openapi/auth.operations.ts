import { z } from 'zod';
import {
  AuthRequest,
  Me,
  SessionResponse,
  TokenCreateBody,
  TokenCreated,
  TokenList,
  TokenRevoked,
} from '../schemas/auth.schemas.ts';
import { Success } from '../schemas/common.schemas.ts';
import type { Operation } from './operation.types.ts';

const TokenIdParam = z.object({
  id: z
    .string()
    .describe('The API token id (a UUID).')
    .meta({ examples: ['9d7c4b2a-1e3f-4a5b-8c6d-7e8f9a0b1c2d'] }),
});

export const authOperations: Operation[] = [
  {
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
  },
  {
    method: 'post',
    path: '/api/auth/tokens/generate',
    operationId: 'createApiToken',
    tag: 'auth',
    summary: 'Create an API token',
    description:
      'The secret (`pv_…`) is shown only in this response; the server keeps only its hash. ' +
      'API tokens do not expire; revoke them.',
    auth: 'required',
    limit: 'general',
    body: { json: TokenCreateBody },
    responses: { 201: { description: 'The new token, with its secret.', json: TokenCreated } },
    errors: ['invalid_request'],
  },
  {
    method: 'get',
    path: '/api/auth/tokens',
    operationId: 'listApiTokens',
    tag: 'auth',
    summary: "List the caller's API tokens",
    auth: 'required',
    limit: 'general',
    responses: { 200: { description: 'Tokens without their secrets.', json: TokenList, cacheControl: ['no-store'] } },
  },
  {
    method: 'delete',
    path: '/api/auth/tokens/:id',
    operationId: 'revokeApiToken',
    tag: 'auth',
    summary: 'Revoke an API token',
    description: 'A revoked token gets 401 at once.',
    auth: 'required',
    limit: 'general',
    params: TokenIdParam,
    responses: { 200: { description: 'Revoked.', json: TokenRevoked } },
    errors: ['not_found'],
  },
  {
    method: 'get',
    path: '/api/me',
    operationId: 'me',
    tag: 'auth',
    summary: 'The authenticated user',
    auth: 'required',
    limit: 'general',
    responses: { 200: { description: 'The caller, with their email.', json: Me, cacheControl: ['private, no-store'] } },
  },
];
