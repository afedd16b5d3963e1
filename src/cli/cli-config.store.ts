/**
 * The CLI's saved logins: `$XDG_CONFIG_HOME/pixvote/config.json` (default `~/.config/pixvote/config.json`),
 * mode 0600 in a 0700 directory, since it holds credentials. One entry per server; `current` is the default.
 */
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';

export interface ServerLogin {
  token: string;
  /** `api_token` (pv_…, revocable, no expiry) or `jwt` (expires with JWT_TTL). */
  kind: 'api_token' | 'jwt';
  token_id?: string;
  username: string;
  saved_at: string;
}

export interface CliConfig {
  current?: string;
  servers: Record<string, ServerLogin>;
}

export class CliError extends Error {
  /** 2: usage or configuration; 1: the work itself failed. */
  readonly exitCode: number;
  constructor(message: string, exitCode = 2) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}

/** parseArgs, with the command named in its one-line errors: `upload: unknown option '--frob' (see …)`, exit 2. */
export function parseCommandArgs<T extends ParseArgsConfig>(
  command: string,
  config: T,
): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (e) {
    if (!(e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) throw e;
    const first = (e as Error).message.split('. ')[0]!;
    const what = `${first.charAt(0).toLowerCase()}${first.slice(1)}`;
    throw new CliError(`${command}: ${what} (see \`pixvote ${command} --help\`)`);
  }
}

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const base =
    env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/')
      ? env.XDG_CONFIG_HOME
      : join(env.HOME || homedir(), '.config');
  return join(base, 'pixvote', 'config.json');
}

export async function loadConfig(path = configPath()): Promise<CliConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { servers: {} };
    throw e;
  }
  try {
    const c = JSON.parse(text) as CliConfig;
    return { ...c, servers: c.servers ?? {} };
  } catch {
    throw new CliError(`${path} is not valid JSON; fix or delete it`);
  }
}

/**
 * Written to a temporary file created 0600 and renamed over the old one,
 * so it is never readable by others, even briefly.
 */
export async function saveConfig(config: CliConfig, path = configPath()): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, path);
}

export const normalizeUrl = (url: string): string => {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new CliError(`--url ${url} is not a URL (e.g. https://pixvote.example.com)`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new CliError(`--url must be http or https, not ${u.protocol}`);
  return u.href.replace(/\/+$/, '');
};

/** The server and credential a command uses: flags, then PIXVOTE_URL / PIXVOTE_TOKEN, then the saved login. */
export async function resolveTarget(
  flags: { url?: string | undefined; token?: string | undefined },
  opts: { needToken: boolean },
): Promise<{ url: string; token: string | undefined; login?: ServerLogin }> {
  const config = await loadConfig();
  const rawUrl = flags.url ?? process.env.PIXVOTE_URL ?? config.current;
  if (!rawUrl)
    throw new CliError('no server: pass --url URL, set PIXVOTE_URL, or run `pixvote login --url URL …` first');
  const url = normalizeUrl(rawUrl);
  const login = config.servers[url];
  const token = flags.token ?? process.env.PIXVOTE_TOKEN ?? login?.token;
  if (opts.needToken && !token)
    throw new CliError(
      `no credentials for ${url}: pass --token TOKEN, set PIXVOTE_TOKEN, or run \`pixvote login --url ${url} …\``,
    );
  return { url, token, ...(login ? { login } : {}) };
}
