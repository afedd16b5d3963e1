import { z } from 'zod';
import { MAX_TOKEN_LIFETIME_SECONDS, SCOPES, SCOPE_MEANS } from '../../domain/auth/scopes.ts';
import { parseDuration } from '../../domain/durations.ts';
import { Success, boundedText } from './common.schemas.ts';

export const USERNAME_RE = /^[A-Za-z0-9_]{3,32}$/;
export const MIN_PASSWORD = 8;
export const MAX_TOKEN_NAME = 100;

const email = z
  .string({ error: 'email must be a string' })
  .trim()
  .max(254, { error: 'email must be at most 254 characters' })
  .pipe(z.email({ error: 'email is not a valid email address' }));
const username = z
  .string({ error: 'username must be a string' })
  .trim()
  .regex(USERNAME_RE, { error: 'username must be 3 to 32 letters, digits or underscores' });
const password = boundedText('password', {
  max: 256,
  min: MIN_PASSWORD,
  minMessage: `password must be at least ${MIN_PASSWORD} characters`,
});

export const RegisterBody = z
  .object({
    action: z.literal('register'),
    email: email
      .describe('A valid email address, at most 254 characters; unique, case-insensitive.')
      .meta({ examples: ['ada@example.com'] }),
    username: username
      .describe('3 to 32 letters, digits or underscores; unique, case-insensitive.')
      .meta({ examples: ['ada_lovelace'] }),
    password: password.describe(`${MIN_PASSWORD} to 256 characters.`).meta({ examples: ['correct-horse-battery'] }),
  })
  .meta({
    examples: [
      { action: 'register', email: 'ada@example.com', username: 'ada_lovelace', password: 'correct-horse-battery' },
    ],
  });

// Login checks no format (a wrong one is simply a wrong credential), only lengths.
const loginEmail = z
  .string({ error: 'email must be a string' })
  .max(254)
  .meta({ examples: ['ada@example.com'] });
const loginUsername = z
  .string({ error: 'username must be a string' })
  .max(32)
  .meta({ examples: ['ada_lovelace'] });
const loginPassword = boundedText('password', { max: 256 }).meta({ examples: ['correct-horse-battery'] });

/** What the route parses a login with: email or username (email wins when both are sent) and password. */
export const LoginBody = z
  .object({
    action: z.literal('login'),
    email: loginEmail.optional(),
    username: loginUsername.optional(),
    password: loginPassword,
  })
  .refine((b) => b.email !== undefined || b.username !== undefined, {
    error: 'email or username is required',
    path: ['email'],
  });

/*
 * The two shapes a login takes, as the document shows them (closed objects, so a generated client gets one
 * typed object per way of logging in). LoginBody above accepts exactly these bodies (and is lenient beyond them).
 */
export const LoginWithEmail = z
  .strictObject({
    action: z.literal('login'),
    email: loginEmail.describe('Matches case-insensitively.'),
    password: loginPassword,
  })
  .meta({ examples: [{ action: 'login', email: 'ada@example.com', password: 'correct-horse-battery' }] });
export const LoginWithUsername = z
  .strictObject({
    action: z.literal('login'),
    username: loginUsername.describe('Matches case-insensitively.'),
    password: loginPassword,
  })
  .meta({ examples: [{ action: 'login', username: 'ada_lovelace', password: 'correct-horse-battery' }] });
export const LoginRequest = z.xor([LoginWithEmail, LoginWithUsername]).meta({
  description: 'Email or username, and password.',
  // Stated on the union too, so that the `action` discriminator of AuthRequest can point at an object schema.
  type: 'object',
  properties: { action: { type: 'string', const: 'login' } },
  required: ['action'],
  examples: [{ action: 'login', username: 'ada_lovelace', password: 'correct-horse-battery' }],
});

export const LogoutBody = z.object({ action: z.literal('logout') }).meta({ examples: [{ action: 'logout' }] });

/**
 * The body of `POST /api/auth` as documented (exactly one alternative, told apart by `action`: the document gets a
 * discriminator); the route reads `action` first, then parses with the matching schema.
 */
export const AuthRequest = z.xor([RegisterBody, LoginRequest, LogoutBody]).meta({
  discriminator: { propertyName: 'action' },
  examples: [{ action: 'login', username: 'ada_lovelace', password: 'correct-horse-battery' }],
});

export const AuthAction = z.object({
  action: z.enum(['register', 'login', 'logout'], { error: 'action must be register, login or logout' }),
});

const SCOPE_LIST = SCOPES.join(', ');

/** One scope of an API token (API.md Auth, Scopes). */
export const ScopeName = z
  .enum(SCOPES, { error: `unknown scope; the scopes are ${SCOPE_LIST}` })
  .describe(
    'What an API token may do: ' +
      SCOPES.map((s) => `\`${s}\` ${SCOPE_MEANS[s]}`).join('; ') +
      '. A JWT and the cookie have every scope their user has.',
  )
  .meta({ examples: ['upload'] });

const DURATION_HELP = 'a duration such as 30d, 12h, 90m or 3600 (seconds)';

export const TokenCreateBody = z
  .object({
    name: boundedText('name', { max: MAX_TOKEN_NAME, min: 1, minMessage: 'name must not be empty', trim: true }).meta({
      examples: ['ci uploader'],
    }),
    scopes: z
      .array(ScopeName, { error: `scopes must be an array of scope names (${SCOPE_LIST})` })
      .min(1, { error: `scopes must name at least one scope (${SCOPE_LIST}); leave it out for every scope` })
      .max(SCOPES.length * 2, { error: `scopes must name each scope at most once (${SCOPE_LIST})` })
      .optional()
      .describe(
        'The scopes the token has, a subset of ' +
          SCOPE_LIST +
          ' (`moderate` only for admins, else 403 `forbidden`). Without it the token has every scope its owner has. ' +
          "A token made by an API token (one with `manage`) gets at most that token's scopes and expiry.",
      )
      .meta({ examples: [['upload', 'read']] }),
    expires_in: z
      .string({ error: `expires_in must be ${DURATION_HELP}` })
      .transform((text, ctx) => {
        const seconds = parseDuration(text);
        if (seconds === null) {
          ctx.addIssue({ code: 'custom', message: `expires_in must be ${DURATION_HELP}` });
          return z.NEVER;
        }
        if (seconds > MAX_TOKEN_LIFETIME_SECONDS) {
          ctx.addIssue({ code: 'custom', message: 'expires_in must be at most a year (365d)' });
          return z.NEVER;
        }
        return seconds;
      })
      .optional()
      .describe(
        `How long the token works: ${DURATION_HELP}, at most a year (365d). ` +
          'Without it (and `expires_at`) it never expires.',
      )
      .meta({ examples: ['30d'] }),
    expires_at: z.iso
      .datetime({ error: 'expires_at must be an ISO-8601 UTC timestamp such as 2026-12-31T00:00:00.000Z' })
      .transform((s) => new Date(s))
      .optional()
      .describe('When the token stops working, in the future and at most a year away; instead of `expires_in`.')
      .meta({ examples: ['2026-12-31T00:00:00.000Z'] }),
  })
  .refine((b) => b.expires_in === undefined || b.expires_at === undefined, {
    error: 'expires_at: send expires_in or expires_at, not both',
    path: ['expires_at'],
  })
  .meta({
    examples: [{ name: 'ci uploader' }, { name: 'ci uploader', scopes: ['upload', 'read'], expires_in: '90d' }],
  });

export const UserSchema = z.object({
  id: z.uuid(),
  username: z.string(),
  email: z.string().optional().describe('Only to the user themself and to admins.'),
  role: z.enum(['user', 'admin']),
  created_at: z.iso.datetime(),
});

export const SessionResponse = z.object({
  token: z.string().describe('HS256 JWT (claims sub, iat, exp); also set as the auth-token cookie.'),
  expires_at: z.iso.datetime(),
  user: UserSchema,
});
export const TokenView = z.object({
  id: z.uuid(),
  name: z.string(),
  created_at: z.iso.datetime(),
  last_used_at: z.iso.datetime().nullable(),
  scopes: z
    .array(ScopeName)
    .describe(
      'What the token may do now; a token made without scopes has every scope its owner has ' +
        '(`moderate` while an admin).',
    ),
  expires_at: z.iso.datetime().nullable().describe('When the token stops working (401 from then on); null: never.'),
});
export const TokenCreated = TokenView.extend({
  token: z
    .string()
    .regex(/^pv_[A-Za-z0-9_-]+$/)
    .describe('The API token secret, shown only in this response; send it as `Authorization: Bearer pv_…`.'),
});
export const TokenList = z.object({ tokens: z.array(TokenView) });
export const TokenRevoked = Success.extend({ id: z.uuid() });
export const Me = z.object({ user: UserSchema });
