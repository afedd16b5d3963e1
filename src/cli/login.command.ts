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
}

/** The longest Retry-After a login waits out before saying so instead. */
const LOGIN_MAX_WAIT_MS = 5_000;

export async function runLogin(opts: LoginOptions, out: Output, clientOf: (url: string) => ApiClient): Promise<number> {
  if (!opts.email === !opts.username) throw new CliError('pass exactly one of --email or --username');
  const url = normalizeUrl(opts.url);
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
  if (opts.jwt) {
    login = { token: session.token as string, kind: 'jwt' as const, username, saved_at: new Date().toISOString() };
  } else {
    const name = opts.tokenName ?? `pixvote cli on ${hostname()}`;
    const created = await client.call('POST', '/api/auth/tokens/generate', { json: { name }, token: session.token });
    login = {
      token: created.token as string,
      kind: 'api_token' as const,
      token_id: created.id as string,
      username,
      saved_at: new Date().toISOString(),
    };
  }
  const config = await loadConfig();
  config.servers[url] = login;
  config.current = url;
  await saveConfig(config);
  const what = opts.jwt
    ? `a JWT (valid until ${session.expires_at})`
    : `API token "${opts.tokenName ?? `pixvote cli on ${hostname()}`}" (${login.token_id})`;
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
