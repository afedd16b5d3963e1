/**
 * `pixvote login`: logs in once, then keeps an API token (or, with --jwt, the JWT itself) in the config
 * file, so later commands need neither --url nor --token. `pixvote logout` revokes and forgets it.
 */
import { hostname } from 'node:os';
import { ApiClient } from './api.client.ts';
import { WaitTooLongError, formatWait } from './retry.policy.ts';
import { CliError, configPath, loadConfig, normalizeUrl, saveConfig } from './cli-config.store.ts';
import { promptPassword, readPasswordFromStdin } from './password.prompt.ts';
import type { Output } from './progress.reporter.ts';

export interface LoginOptions {
  url: string;
  email?: string | undefined;
  username?: string | undefined;
  passwordStdin: boolean;
  /** Keep the JWT (expires with the server's JWT_TTL) instead of creating an API token. */
  jwt: boolean;
  tokenName?: string | undefined;
  /** `--scopes`: comma-separated, or `all`; default CLI_SCOPES (+ moderate for an admin). */
  scopes?: string | undefined;
  /** `--expires-in`: a duration such as 30d. */
  expiresIn?: string | undefined;
}

/** What the CLI's own commands use: upload (upload and its pre-check), read (who am I), manage (tokens). */
export const CLI_SCOPES = ['upload', 'read', 'manage'] as const;
const KNOWN_SCOPES = ['upload', 'vote', 'read', 'manage', 'moderate'];

/**
 * The `scopes` of a token request from `--scopes`: undefined when not given, null for `all` (every scope of the
 * user, now and later), else the list; unknown names are refused here, before the password is asked for.
 */
export function scopesOption(text: string | undefined): string[] | null | undefined {
  if (text === undefined) return undefined;
  if (text.trim() === 'all') return null;
  const list = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = list.find((s) => !KNOWN_SCOPES.includes(s));
  if (unknown || !list.length)
    throw new CliError(
      `--scopes: ${unknown ? `unknown scope "${unknown}"; ` : ''}name some of ${KNOWN_SCOPES.join(', ')}, or all`,
    );
  return list;
}

/** The longest Retry-After a login waits out before saying so instead. */
const LOGIN_MAX_WAIT_MS = 5_000;

export async function runLogin(opts: LoginOptions, out: Output, clientOf: (url: string) => ApiClient): Promise<number> {
  if (!opts.email === !opts.username) throw new CliError('pass exactly one of --email or --username');
  const url = normalizeUrl(opts.url);
  const asked = opts.jwt ? undefined : scopesOption(opts.scopes);
  const password = opts.passwordStdin
    ? await readPasswordFromStdin()
    : await promptPassword(`password for ${opts.email ?? opts.username} at ${url}: `);
  const client = clientOf(url);
  const who = opts.email !== undefined ? { email: opts.email } : { username: opts.username };
  // Every login attempt counts toward the server's limit: a short Retry-After (a busy server) is waited out,
  // a rate limit is reported at once, with its wait, instead of sitting through it.
  const session = await client
    .call('POST', '/api/auth', { json: { action: 'login', ...who, password }, maxWaitMs: LOGIN_MAX_WAIT_MS })
    .catch((e) => {
      if (!(e instanceof WaitTooLongError)) throw e;
      const at = e.until.toISOString().slice(11, 19);
      throw new CliError(
        `login refused for now (${e.reason}); ` + `try again in ${formatWait(e.waitMs)}, after ${at} UTC`,
        75,
      );
    });
  const username: string = session.user.username;

  let login;
  let what: string;
  if (opts.jwt) {
    login = { token: session.token as string, kind: 'jwt' as const, username, saved_at: new Date().toISOString() };
    what = `a JWT (valid until ${session.expires_at})`;
  } else {
    const name = opts.tokenName ?? `pixvote cli on ${hostname()}`;
    // By default the scopes the CLI's commands use: `pixvote mod` needs moderate, which only an admin may have.
    const cliScopes = session.user.role === 'admin' ? [...CLI_SCOPES, 'moderate'] : [...CLI_SCOPES];
    const scopes = asked === undefined ? cliScopes : asked;
    const json = {
      name,
      ...(scopes ? { scopes } : {}),
      ...(opts.expiresIn !== undefined ? { expires_in: opts.expiresIn } : {}),
    };
    const created = await client.call('POST', '/api/auth/tokens/generate', { json, token: session.token });
    login = {
      token: created.token as string,
      kind: 'api_token' as const,
      token_id: created.id as string,
      username,
      saved_at: new Date().toISOString(),
    };
    what =
      `API token "${name}" (${login.token_id}; scopes ${(created.scopes as string[]).join(',')}; ` +
      `${created.expires_at ? `expires ${created.expires_at}` : 'never expires'})`;
  }
  const config = await loadConfig();
  config.servers[url] = login;
  config.current = url;
  await saveConfig(config);
  out.write(`logged in to ${url} as ${username}; ${what} saved in ${configPath()}\n`);
  return 0;
}

export async function runLogout(
  url: string,
  out: Output,
  clientOf: (url: string, token: string) => ApiClient,
): Promise<number> {
  const config = await loadConfig();
  const login = config.servers[url];
  if (!login) throw new CliError(`not logged in to ${url}`);
  if (login.kind === 'api_token' && login.token_id) {
    const r = await clientOf(url, login.token).request('DELETE', `/api/auth/tokens/${login.token_id}`);
    // Already revoked elsewhere: forgetting it is all that is left to do.
    if (r.status !== 200 && r.status !== 401 && r.status !== 404)
      throw new CliError(`could not revoke the API token: HTTP ${r.status}`, 1);
  }
  delete config.servers[url];
  if (config.current === url) delete config.current;
  await saveConfig(config);
  out.write(`logged out of ${url}${login.kind === 'api_token' ? '; the API token is revoked' : ''}\n`);
  return 0;
}
