/**
 * Registration, login, and turning a presented credential (JWT or API token) into a Principal.
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { errors } from '../errors.ts';
import type { Clock } from '../clock.ts';
import type { ClientFacts } from '../client-facts.ts';
import { banRefusal, isAdminUser, toUserView, type Principal, type UserRecord, type UserView } from '../users.ts';
import { decoyHash, hashPassword, verifyPassword, type ScryptKdf, type ScryptParams } from './passwords.ts';
import type { JwtIssuer } from './jwt.ts';
import { MAX_TOKEN_LIFETIME_SECONDS, canonicalScopes, scopesOfUser, type Scope } from './scopes.ts';

export interface UserStore {
  /**
   * Inserts a user (with the client facts of its sign-up, when known: issue 45); returns 'username' or 'email'
   * when that key is already taken.
   */
  create(user: UserRecord & { passwordHash: string }, client?: ClientFacts): Promise<UserRecord | 'username' | 'email'>;
  findById(id: string): Promise<UserRecord | null>;
  findForLogin(by: { email: string } | { username: string }): Promise<(UserRecord & { passwordHash: string }) | null>;
  exists(by: { email: string } | { username: string }): Promise<boolean>;
  /** Sets the role of the user with this username (any case); the user as it was before, or null when there is none. */
  setRole(username: string, role: UserRecord['role']): Promise<UserRecord | null>;
}

export interface ApiTokenRecord {
  id: string;
  userId: string;
  name: string;
  tokenHash: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  /** The scopes it was made with; null: every scope its owner has. */
  scopes: Scope[] | null;
  /** When it stops working; null: never. */
  expiresAt: Date | null;
}

/** What a new API token asks for, beyond its name (API.md Auth, Scopes). */
export interface TokenRequest {
  name: string;
  /** Absent: every scope the caller has. */
  scopes?: Scope[] | undefined;
  /** Seconds from now (`expires_in`), at most a year. */
  expiresIn?: number | undefined;
  /** An instant (`expires_at`), in the future and at most a year away. */
  expiresAt?: Date | undefined;
}

export interface ApiTokenStore {
  create(token: ApiTokenRecord): Promise<void>;
  listForUser(userId: string): Promise<ApiTokenRecord[]>;
  /** Deletes the user's token; false when there is no such token of that user. */
  delete(userId: string, id: string): Promise<boolean>;
  findByHash(tokenHash: string): Promise<{ token: ApiTokenRecord; user: UserRecord } | null>;
  touch(id: string, at: Date): Promise<void>;
}

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(password: string, stored: string): Promise<boolean>;
  /** A hash no password matches that costs what a real one costs to check (unknown users are checked against it). */
  decoy?(): string;
}

export const scryptHasher = (params?: ScryptParams, kdf?: ScryptKdf): PasswordHasher => ({
  hash: (p) => hashPassword(p, params, kdf),
  verify: (p, stored) => verifyPassword(p, stored, kdf),
  decoy: () => decoyHash(params),
});

export interface Session {
  token: string;
  expiresAt: Date;
  user: UserView;
}

export interface TokenView {
  id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
  /** What the token may do now (a token made without scopes: every scope its owner has). */
  scopes: Scope[];
  expires_at: string | null;
}

const API_TOKEN_PREFIX = 'pv_';
/** last_used_at is written at most this often per token, so a busy upload bot costs no extra writes. */
const TOUCH_INTERVAL_MS = 60_000;

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

export class AuthService {
  readonly #users: UserStore;
  readonly #tokens: ApiTokenStore;
  readonly #jwt: JwtIssuer;
  readonly #clock: Clock;
  readonly #passwords: PasswordHasher;
  /**
   * What unknown users are checked against, so both failures take the same time: the hasher's decoy (costs
   * nothing to make), else a real hash of a random password made at start.
   */
  #decoyHash: Promise<string>;

  constructor(deps: {
    users: UserStore;
    tokens: ApiTokenStore;
    jwt: JwtIssuer;
    clock: Clock;
    /** Defaults to scrypt with DEFAULT_SCRYPT; tests pass cheaper parameters or a spy. */
    passwords?: PasswordHasher;
    scrypt?: ScryptParams;
    /** Where scrypt runs (the server's dedicated hashing pool); default Node's own, on libuv's threadpool. */
    kdf?: ScryptKdf;
  }) {
    this.#users = deps.users;
    this.#tokens = deps.tokens;
    this.#jwt = deps.jwt;
    this.#clock = deps.clock;
    this.#passwords = deps.passwords ?? scryptHasher(deps.scrypt, deps.kdf);
    const passwords = this.#passwords;
    this.#decoyHash = passwords.decoy
      ? Promise.resolve(passwords.decoy())
      : passwords.hash(randomBytes(16).toString('hex'));
  }

  /** `client`: what the gateway saw of the client (network hash, user-agent family), kept as evidence. */
  async register(input: { email: string; username: string; password: string }, client?: ClientFacts): Promise<Session> {
    const email = input.email.trim();
    const username = input.username.trim();
    // Friendly messages for the common case; the unique indexes still decide under races.
    if (await this.#users.exists({ username })) throw errors.conflict(`username "${username}" is already taken`);
    if (await this.#users.exists({ email })) throw errors.conflict('email is already registered');
    const user: UserRecord = {
      id: randomUUID(),
      username,
      email,
      role: 'user',
      createdAt: this.#clock.now(),
      bannedUntil: null,
    };
    const created = await this.#users.create(
      { ...user, passwordHash: await this.#passwords.hash(input.password) },
      client,
    );
    if (created === 'username') throw errors.conflict(`username "${username}" is already taken`);
    if (created === 'email') throw errors.conflict('email is already registered');
    return this.#session(created);
  }

  async login(input: { email?: string; username?: string; password: string }): Promise<Session> {
    const by = input.email !== undefined ? { email: input.email.trim() } : { username: (input.username ?? '').trim() };
    const found = await this.#users.findForLogin(by);
    const ok = await this.#passwords.verify(input.password, found?.passwordHash ?? (await this.#decoyHash));
    if (!found || !ok) throw errors.unauthorized('invalid credentials: check the email/username and password');
    this.#assertNotBanned(found);
    return this.#session(found);
  }

  /** Resolves a Bearer or cookie credential. Null when it is not valid (bad, expired, revoked, user gone). */
  async authenticate(credential: string, viaCookie: boolean): Promise<Principal | null> {
    if (credential.startsWith(API_TOKEN_PREFIX)) {
      const hash = sha256(credential);
      const found = await this.#tokens.findByHash(hash);
      if (!found || !timingSafeEqual(Buffer.from(found.token.tokenHash), Buffer.from(hash))) return null;
      const now = this.#clock.now();
      // An expired token is no credential at all: 401 where a user is needed, anonymous elsewhere.
      if (found.token.expiresAt && found.token.expiresAt.getTime() <= now.getTime()) return null;
      if (!found.token.lastUsedAt || now.getTime() - found.token.lastUsedAt.getTime() > TOUCH_INTERVAL_MS) {
        await this.#tokens.touch(found.token.id, now);
      }
      this.#assertNotBanned(found.user);
      const principal = this.#principal(found.user, 'api_token', viaCookie);
      principal.token = {
        id: found.token.id,
        scopes: effectiveScopes(found.token, principal.isAdmin),
        expiresAt: found.token.expiresAt,
      };
      return principal;
    }
    const userId = this.#jwt.verify(credential);
    if (!userId) return null;
    const user = await this.#users.findById(userId);
    if (user) this.#assertNotBanned(user);
    return user ? this.#principal(user, 'jwt', viaCookie) : null;
  }

  async me(principal: Principal): Promise<UserView> {
    const user = await this.#users.findById(principal.userId);
    if (!user) throw errors.unauthorized('token is no longer valid: the user does not exist');
    return toUserView(user, principal);
  }

  /**
   * A new API token. `moderate` only for an admin (403 `forbidden`). A token made by an API token (one with
   * `manage`) gets no more than that token has: its scopes at most (all of them when none are asked), and its
   * expiry at the latest, so no token widens itself by minting another.
   */
  async generateToken(principal: Principal, req: TokenRequest): Promise<TokenView & { token: string }> {
    const now = this.#clock.now();
    let scopes = req.scopes ? canonicalScopes(req.scopes) : null;
    if (scopes?.includes('moderate') && !principal.isAdmin)
      throw errors.forbidden('only admins (the moderators) may create a token with the scope "moderate"');
    let expiresAt: Date | null = null;
    if (req.expiresIn !== undefined) {
      if (req.expiresIn > MAX_TOKEN_LIFETIME_SECONDS) throw errors.invalid('expires_in must be at most a year (365d)');
      expiresAt = new Date(now.getTime() + req.expiresIn * 1000);
    } else if (req.expiresAt !== undefined) {
      if (req.expiresAt.getTime() <= now.getTime()) throw errors.invalid('expires_at must be in the future');
      if (req.expiresAt.getTime() > now.getTime() + MAX_TOKEN_LIFETIME_SECONDS * 1000)
        throw errors.invalid('expires_at must be at most a year (365 days) away');
      expiresAt = req.expiresAt;
    }
    const minter = principal.token;
    if (minter) {
      const beyond = (scopes ?? []).find((s) => !minter.scopes.includes(s));
      if (beyond)
        throw errors.forbidden(`a token made by an API token cannot have the scope "${beyond}" that token lacks`);
      scopes ??= [...minter.scopes];
      if (minter.expiresAt) {
        if (expiresAt && expiresAt.getTime() > minter.expiresAt.getTime())
          throw errors.forbidden(
            `a token made by an API token cannot outlive it: that token expires at ${minter.expiresAt.toISOString()}`,
          );
        expiresAt ??= minter.expiresAt;
      }
    }
    const secret = API_TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const record: ApiTokenRecord = {
      id: randomUUID(),
      userId: principal.userId,
      name: req.name.trim(),
      tokenHash: sha256(secret),
      createdAt: now,
      lastUsedAt: null,
      scopes,
      expiresAt,
    };
    await this.#tokens.create(record);
    return { token: secret, ...tokenView(record, principal.isAdmin) };
  }

  async listTokens(principal: Principal): Promise<TokenView[]> {
    return (await this.#tokens.listForUser(principal.userId)).map((t) => tokenView(t, principal.isAdmin));
  }

  async revokeToken(principal: Principal, id: string): Promise<void> {
    if (!(await this.#tokens.delete(principal.userId, id))) throw errors.notFound(`no API token ${id} of yours`);
  }

  /** A banned user's every authenticated request and login: 403 `banned` (read with the user each time). */
  #assertNotBanned(user: UserRecord): void {
    const refusal = banRefusal(user, this.#clock.now());
    if (refusal) throw errors.banned(refusal);
  }

  #session(user: UserRecord): Session {
    const { token, expiresAt } = this.#jwt.sign(user.id);
    const principal = this.#principal(user, 'jwt', false);
    return { token, expiresAt, user: toUserView(user, principal) };
  }

  #principal(user: UserRecord, method: Principal['method'], viaCookie: boolean): Principal {
    return {
      userId: user.id,
      username: user.username,
      isAdmin: isAdminUser(user),
      accountCreatedAt: user.createdAt,
      method,
      viaCookie,
    };
  }
}

/** What a token may do for an owner who is (or is not) an admin now: `moderate` needs both. */
function effectiveScopes(t: Pick<ApiTokenRecord, 'scopes'>, ownerIsAdmin: boolean): Scope[] {
  const owner = scopesOfUser(ownerIsAdmin);
  return t.scopes ? t.scopes.filter((s) => owner.includes(s)) : owner;
}

function tokenView(t: ApiTokenRecord, ownerIsAdmin: boolean): TokenView {
  return {
    id: t.id,
    name: t.name,
    created_at: t.createdAt.toISOString(),
    last_used_at: t.lastUsedAt ? t.lastUsedAt.toISOString() : null,
    scopes: effectiveScopes(t, ownerIsAdmin),
    expires_at: t.expiresAt ? t.expiresAt.toISOString() : null,
  };
}
