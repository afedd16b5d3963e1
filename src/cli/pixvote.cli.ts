/**
 * `pixvote`: the command-line client. `main()` parses the command line, runs one command and returns the
 * exit status: 0 done, 1 something failed, 2 usage or configuration error. bin/pixvote.js calls it.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ApiClient, ApiError, NetworkError } from './api.client.ts';
import { CliError, loadConfig, normalizeUrl, resolveTarget } from './cli-config.store.ts';
import { runAdmin } from './admin.command.ts';
import { runLogin, runLogout } from './login.command.ts';
import { DEFAULT_RETRY } from './retry.policy.ts';
import { runTokens } from './tokens.command.ts';
import { normalizeTags, runUpload } from './upload.command.ts';

const USAGE = `usage: pixvote <command> [options]

  upload <files or folders…> [--tags a,b] [--private] [--concurrency N]
        Uploads every .jpg, .jpeg, .png, .gif and .webp file (folders are walked). Retries on 429/503
        (honouring Retry-After) and on network errors; a re-run never uploads a file twice.
        --retries N (default ${DEFAULT_RETRY.retries})  --max-wait SECONDS (default ${DEFAULT_RETRY.maxWaitMs / 1000})  --timeout SECONDS (default 120)
  login --url URL (--email E | --username U) [--password-stdin] [--jwt] [--token-name NAME]
        Logs in (the password is asked for without echo, or read from stdin) and saves an API token
        (or with --jwt the JWT) in $XDG_CONFIG_HOME/pixvote/config.json (~/.config/pixvote/config.json).
  logout [--url URL]     Revokes the saved API token and forgets it.
  tokens create <name> | list | revoke <id>

  Every command above takes --url URL and --token TOKEN (or PIXVOTE_URL, PIXVOTE_TOKEN); by default the saved login.

  admin grant USERNAME | admin revoke USERNAME
        Operator command, run on the server's machine with its environment: changes the stored role in the
        server's database directly (DATABASE_URL, or $DATA_DIR/app.db). See \`pixvote admin --help\`.
`;

const common = { url: { type: 'string' }, token: { type: 'string' }, help: { type: 'boolean', short: 'h' } } as const;

function intOption(name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw new CliError(`--${name} must be an integer from ${min} to ${max} (got "${value}")`);
  return Number(value);
}

const version = () => (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

async function run(argv: string[], out: NodeJS.WriteStream): Promise<number> {
  const [command, ...rest] = argv;
  if (!command) throw new CliError(USAGE.trimEnd());
  if (command === 'help' || command === '--help' || command === '-h') {
    out.write(USAGE);
    return 0;
  }
  if (command === '--version') {
    out.write(`${version()}\n`);
    return 0;
  }
  const clientFor = (url: string, token?: string, extra: { retries?: number; maxWaitMs?: number; timeoutMs?: number } = {}) =>
    new ApiClient({
      baseUrl: url,
      token,
      retry: { ...DEFAULT_RETRY, ...(extra.retries !== undefined ? { retries: extra.retries } : {}), ...(extra.maxWaitMs ? { maxWaitMs: extra.maxWaitMs } : {}) },
      ...(extra.timeoutMs ? { timeoutMs: extra.timeoutMs } : {}),
    });

  if (command === 'upload') {
    const { values: v, positionals } = parseArgs({
      args: rest,
      allowPositionals: true,
      options: {
        ...common,
        tags: { type: 'string' },
        private: { type: 'boolean', default: false },
        concurrency: { type: 'string' },
        retries: { type: 'string' },
        'max-wait': { type: 'string' },
        timeout: { type: 'string' },
      },
    });
    if (v.help) return (out.write(USAGE), 0);
    if (!positionals.length) throw new CliError('usage: pixvote upload <files or folders…> [--tags a,b] [--private] [--concurrency N]');
    const tags = normalizeTags((v.tags ?? '').split(','));
    const { url, token } = await resolveTarget(v, { needToken: true });
    const client = clientFor(url, token, {
      retries: intOption('retries', v.retries, DEFAULT_RETRY.retries, 0, 100),
      maxWaitMs: intOption('max-wait', v['max-wait'], DEFAULT_RETRY.maxWaitMs / 1000, 1, 86_400) * 1000,
      timeoutMs: intOption('timeout', v.timeout, 120, 1, 86_400) * 1000,
    });
    return runUpload(client, { paths: positionals, tags, isPrivate: v.private, concurrency: intOption('concurrency', v.concurrency, 4, 1, 64) }, out);
  }

  if (command === 'login') {
    const { values: v, positionals } = parseArgs({
      args: rest,
      allowPositionals: false,
      options: {
        url: common.url,
        help: common.help,
        email: { type: 'string' },
        username: { type: 'string' },
        'password-stdin': { type: 'boolean', default: false },
        jwt: { type: 'boolean', default: false },
        'token-name': { type: 'string' },
      },
    });
    if (v.help || positionals.length) return (out.write(USAGE), v.help ? 0 : 2);
    const url = v.url ?? process.env.PIXVOTE_URL;
    if (!url) throw new CliError('usage: pixvote login --url URL (--email E | --username U)');
    return runLogin({ url, email: v.email, username: v.username, passwordStdin: v['password-stdin'], jwt: v.jwt, tokenName: v['token-name'] }, out, (u) => clientFor(u));
  }

  if (command === 'logout') {
    const { values: v } = parseArgs({ args: rest, options: { url: common.url, help: common.help } });
    if (v.help) return (out.write(USAGE), 0);
    const url = v.url ?? process.env.PIXVOTE_URL ?? (await loadConfig()).current;
    if (!url) throw new CliError('not logged in anywhere');
    return runLogout(normalizeUrl(url), out, (u, t) => clientFor(u, t));
  }

  if (command === 'tokens') {
    const { values: v, positionals } = parseArgs({ args: rest, allowPositionals: true, options: common });
    if (v.help) return (out.write(USAGE), 0);
    const { url, token } = await resolveTarget(v, { needToken: true });
    return runTokens(clientFor(url, token), positionals, out);
  }

  if (command === 'admin') return runAdmin(rest, out);

  throw new CliError(`unknown command "${command}"\n${USAGE}`);
}

export async function main(argv: string[], out: NodeJS.WriteStream = process.stdout, err: NodeJS.WriteStream = process.stderr): Promise<number> {
  try {
    return await run(argv, out);
  } catch (e) {
    if (e instanceof CliError) err.write(`pixvote: ${e.message}\n`);
    else if (e instanceof ApiError) err.write(`pixvote: the server said ${e.status} ${e.code}: ${e.message}\n`);
    else if (e instanceof NetworkError) err.write(`pixvote: cannot reach the server: ${e.message}\n`);
    else if ((e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) err.write(`pixvote: ${(e as Error).message}\n${USAGE}`);
    else throw e;
    return e instanceof CliError ? e.exitCode : (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? 2 : 1;
  }
}
