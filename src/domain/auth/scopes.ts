/**
 * What an API token may do (API.md Auth, Scopes). A JWT and the cookie have every scope their user has; an API
 * token has the scopes it was made with, or, made without any, every scope its owner has.
 */
export const SCOPES = ['upload', 'vote', 'read', 'manage', 'moderate'] as const;
export type Scope = (typeof SCOPES)[number];

/** What each scope allows, as the document and the token form say it. */
export const SCOPE_MEANS: Readonly<Record<Scope, string>> = {
  upload: 'create uploads and the pre-check (`POST /api/uploads/check`)',
  vote: 'vote',
  read: "the caller's profile and own private uploads",
  manage: 'privacy, tags, deletion of uploads, reports, and the API tokens themselves',
  moderate: '`/api/admin/*` (admins only)',
};

/** The longest an API token may live. */
export const MAX_TOKEN_LIFETIME_SECONDS = 365 * 86_400;

/** Every scope a user has: `moderate` only when an admin. */
export const scopesOfUser = (isAdmin: boolean): Scope[] => SCOPES.filter((s) => isAdmin || s !== 'moderate');

/** The scopes in the contract's order, once each. */
export const canonicalScopes = (scopes: Iterable<Scope>): Scope[] => {
  const set = new Set(scopes);
  return SCOPES.filter((s) => set.has(s));
};

/** Stored form: space-separated, canonical order; null means every scope of the owner. */
export const storeScopes = (scopes: readonly Scope[] | null): string | null =>
  scopes ? canonicalScopes(scopes).join(' ') : null;

export const loadScopes = (stored: string | null): Scope[] | null =>
  stored === null
    ? null
    : canonicalScopes(stored.split(' ').filter((s): s is Scope => (SCOPES as readonly string[]).includes(s)));
