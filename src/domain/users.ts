import type { Scope } from './auth/scopes.ts';

/** A stored user as the domain sees it. */
export interface UserRecord {
  id: string;
  username: string;
  email: string;
  role: 'user' | 'admin';
  createdAt: Date;
  /** Banned until then (API.md Moderation, Bans); null or past: not banned. */
  bannedUntil: Date | null;
}

/** The authenticated caller of a request. */
export interface Principal {
  userId: string;
  username: string;
  isAdmin: boolean;
  /** When the account was registered (the minimum-age rules read it). */
  accountCreatedAt: Date;
  /** How the request proved who it is. */
  method: 'jwt' | 'api_token';
  /** True when the credential came only from the auth-token cookie (browser requests). */
  viaCookie: boolean;
  /**
   * The API token the request came with (`method: 'api_token'`): its id, the scopes it has (those it was made
   * with, or every scope of its owner when made without) and when it expires. Absent for a JWT or the cookie,
   * which have every scope.
   */
  token?: { id: string; scopes: readonly Scope[]; expiresAt: Date | null };
}

/** Whether the caller's credential allows `scope` (a JWT and the cookie allow every one). */
export function hasScope(principal: Principal, scope: Scope): boolean {
  return !principal.token || principal.token.scopes.includes(scope);
}

/**
 * Whom a read that takes an optional caller serves (issue 44): the caller when their credential allows `scope`, else
 * no one (an API token without it reads what anyone may). The API's optional routes (gateway/routes/route.ts) and
 * the pages (gateway/routes/web.routes.ts) resolve their viewer with it, so a page shows a token what the API would.
 */
export function viewerWith(principal: Principal | null, scope: Scope): Principal | null {
  return principal && hasScope(principal, scope) ? principal : null;
}

/** API.md's User object. `email` only to the user themself or an admin. */
export interface UserView {
  id: string;
  username: string;
  email?: string;
  role: 'user' | 'admin';
  created_at: string;
}

/**
 * Admin is the stored role, read from the database with the user on every authenticated request, so a revoke
 * (`pixvote admin revoke`) takes effect from the next request. A name alone never makes an admin: ADMIN_USERNAMES
 * only promotes accounts that already exist when the server starts.
 */
export function isAdminUser(user: Pick<UserRecord, 'role'>): boolean {
  return user.role === 'admin';
}

export function toUserView(user: UserRecord, viewer: Principal | null): UserView {
  const view: UserView = {
    id: user.id,
    username: user.username,
    role: isAdminUser(user) ? 'admin' : 'user',
    created_at: user.createdAt.toISOString(),
  };
  if (viewer && (viewer.userId === user.id || viewer.isAdmin)) view.email = user.email;
  return view;
}

/** The 403 `banned` of a user banned at `now`, or null when the user is not banned. */
export function banRefusal(user: Pick<UserRecord, 'bannedUntil'>, now: Date): string | null {
  const until = user.bannedUntil;
  if (!until || until.getTime() <= now.getTime()) return null;
  return until.getUTCFullYear() >= 9999
    ? 'this account is banned permanently'
    : `this account is banned until ${until.toISOString()}`;
}
