/**
 * `pixvote`: the command-line client. `main()` parses the command line, runs one command and returns the
 * exit status: 0 done, 1 something failed, 2 usage or configuration error. bin/pixvote.js calls it.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ApiClient, ApiError, NetworkError } from './api.client.ts';
import { CliError, loadConfig, normalizeUrl, parseCommandArgs as parse, resolveTarget } from './cli-config.store.ts';
import { runAdmin } from './admin.command.ts';
import { runMedia } from './media.command.ts';
import { runLogin, runLogout } from './login.command.ts';
import { MOD_USAGE, parseModArgs } from './mod-args.ts';
import { runMod } from './mod.command.ts';
import { DEFAULT_RETRY, WaitTooLongError } from './retry.policy.ts';
import { defaultResumePath } from './resume.store.ts';
import { runTokens } from './tokens.command.ts';
import { runWebhooks, WEBHOOKS_USAGE_LINE } from './webhooks.command.ts';
import { normalizeTags, runUpload } from './upload.command.ts';
import { DEFAULT_CHUNK, parseChunkSize } from './resumable.sender.ts';

const UPLOAD_USAGE = `usage: pixvote upload <files or folders…> [options]

  Uploads every .jpg, .jpeg, .png, .gif and .webp file (folders are walked; hidden entries skipped).
  A re-run never uploads a file twice; the files a run finished are kept in a resume file, and the next run
  of the same command skips them without a request. First the files' SHA-256 digests are sent (a thousand a
  request): files whose bytes the server already has, or refuses, are not sent at all.
  --tags a,b            tags for every file (at most 10)
  --private             unlisted uploads
  --concurrency N       files sent at once (default 4)
  --max-wait SECONDS    the longest Retry-After (429/503) waited out, exactly
                        (default ${DEFAULT_RETRY.maxWaitMs / 1000});
                        a longer one stops the run at once (exit 75), leaving the resume file
  --retries N           retries of a network error or 502/503/504 without Retry-After (default ${DEFAULT_RETRY.retries})
  --timeout SECONDS     per attempt (default 120)
  --resume FILE         the resume file (default: one per server, paths and options, under
                        $XDG_CONFIG_HOME/pixvote/resume/); it is removed once every file is done
  --no-check            send every file without asking first which ones the server has
  --resumable WHEN      auto (default): files larger than one chunk go through the resumable (tus) endpoint,
                        in chunks, and a cut connection or a killed run continues from the server's offset;
                        smaller files go in one request. always: every file resumably; never: none
  --chunk-size SIZE     bytes per chunk of a resumable upload, 64k to 10m (default 1m)
  --url URL, --token TOKEN
  Ctrl-C stops the run and prints the summary (exit 130). Exit 0: all done; 1: some file failed.
`;

const LOGIN_USAGE = `usage: pixvote login --url URL (--email E | --username U) [--password-stdin] [--jwt]
                     [--token-name NAME] [--scopes LIST|all] [--expires-in DURATION]

  Logs in (the password is asked for without echo, or read from the first line of stdin) and saves an API token
  (or with --jwt the JWT) in $XDG_CONFIG_HOME/pixvote/config.json (~/.config/pixvote/config.json), mode 0600.
  When the server's login limit is reached it says how long to wait, and saves nothing.

  --scopes     what the saved token may do, comma-separated from upload, vote, read, manage, moderate
               (default: what this CLI's commands use: upload,read,manage, and moderate for an admin, for
               \`pixvote mod\`); \`all\`: every scope you have, now and later.
  --expires-in how long the token works, e.g. 30d, 12h (at most 365d; default: until \`pixvote logout\`).
`;

const LOGOUT_USAGE = `usage: pixvote logout [--url URL]

  Revokes the saved API token and forgets it (default: the current server).
`;

const TOKENS_USAGE = `usage: pixvote tokens create <name> [--scopes LIST] [--expires-in DURATION] | list | revoke <id>
                      [--url URL] [--token TOKEN]

  The logged-in user's API tokens: create prints the secret once. --scopes (comma-separated from upload, vote,
  read, manage, moderate; default every scope you have) and --expires-in (e.g. 30d; at most 365d) as for login.
  Managing tokens needs a token with the scope manage (any token may revoke itself).
`;

const WEBHOOKS_USAGE = `${WEBHOOKS_USAGE_LINE}
                      [--url URL] [--token TOKEN]

  The logged-in user's webhook endpoints: add prints the signing secret (whsec_…) once; --events is comma-separated
  from upload.processed, upload.held, upload.removed, upload.restored, upload.vote_milestone (admins also
  report.created, moderation.item_created). rotate prints a new secret (the old one signs too for 24 hours);
  deliveries shows the newest 50 deliveries; enable turns on again an endpoint disabled after persistent failure.
  Needs a token with the scope manage.
`;

const USAGE = `usage: pixvote <command> [options]     (pixvote <command> --help for its options)

  upload <files or folders…> [--tags a,b] [--private] [--concurrency N] [--max-wait S] [--resume FILE]
        Uploads every .jpg, .jpeg, .png, .gif and .webp file (folders are walked). Waits out 429/503 exactly as
        Retry-After says (or stops, resumable, when it is longer than --max-wait); a re-run never uploads a
        file twice and skips what an earlier run finished.
  login --url URL (--email E | --username U) [--password-stdin] [--jwt] [--token-name NAME] [--scopes LIST]
        [--expires-in DURATION]
        Logs in (the password is asked for without echo, or read from stdin) and saves an API token
        (or with --jwt the JWT) in $XDG_CONFIG_HOME/pixvote/config.json (~/.config/pixvote/config.json).
        The token gets the scopes the CLI uses (upload, read, manage; moderate for admins) unless --scopes.
  logout [--url URL]     Revokes the saved API token and forgets it.
  tokens create <name> [--scopes LIST] [--expires-in DURATION] | list | revoke <id>
  webhooks add <url> --events LIST | list | rm|rotate|deliveries|enable|disable <id>
        Signed webhooks for events on your uploads. See \`pixvote webhooks --help\`.
  mod queue | approve|hold|remove ID | ban|unban USER | blocklist import|export FILE | modlog
        Moderation, for admins: the queue of reported, held and flagged uploads, decisions, bans, the
        blocklist as a CSV or JSON file, the moderation log. See \`pixvote mod --help\`.

  upload, tokens, webhooks and mod take --url URL and --token TOKEN (or PIXVOTE_URL, PIXVOTE_TOKEN); by default the
  saved login.

  admin grant USERNAME | admin revoke USERNAME
        Operator command, run on the server's machine with its environment: changes the stored role in the
        server's database directly (DATABASE_URL, or $DATA_DIR/app.db). See \`pixvote admin --help\`.

  media migrate --to s3|disk | media backfill-pdq
        Operator commands: copy every stored image variant to object storage or to local disk, verified by
        SHA-256, resumable, while the service serves; compute the PDQ of images stored before pixvote did (and
        hold the blocklisted ones). See \`pixvote media --help\`.

  tune-workers [options] | bench [options] | fetch-models [DIR]
        Operator scripts of the checkout (also \`npm run <name>\`): the worker-count tuner, the benchmarks,
        the person-detector weights. Each explains itself with --help.
`;

/** Operator scripts of the checkout (also npm scripts), run as pixvote commands too: their own --help explains them. */
const SCRIPTS: Readonly<Record<string, string>> = {
  'tune-workers': '../../bench/tune-workers.ts',
  bench: '../../bench/run-all.ts',
  'fetch-models': '../../scripts/fetch-models.ts',
};

/** Runs one of SCRIPTS under this Node, with the given arguments and this terminal; its exit status is ours. */
function runScript(name: string, args: string[]): Promise<number> {
  const file = fileURLToPath(new URL(SCRIPTS[name]!, import.meta.url));
  const child = spawn(process.execPath, ['--experimental-strip-types', file, ...args], { stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal === 'SIGINT' ? 130 : 1)));
  });
}

const common = { url: { type: 'string' }, token: { type: 'string' }, help: { type: 'boolean', short: 'h' } } as const;

function intOption(name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max)
    throw new CliError(`--${name} must be an integer from ${min} to ${max} (got "${value}")`);
  return Number(value);
}

const version = () =>
  (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

async function run(argv: string[], out: NodeJS.WriteStream): Promise<number> {
  const [command, ...rest] = argv;
  if (!command) {
    process.stderr.write(USAGE);
    return 2;
  }
  if (command === 'help' || command === '--help' || command === '-h') {
    out.write(USAGE);
    return 0;
  }
  if (command === '--version') {
    out.write(`${version()}\n`);
    return 0;
  }
  const clientFor = (
    url: string,
    token?: string,
    extra: { retries?: number; maxWaitMs?: number; timeoutMs?: number } = {},
  ) =>
    new ApiClient({
      baseUrl: url,
      token,
      retry: {
        ...DEFAULT_RETRY,
        ...(extra.retries !== undefined ? { retries: extra.retries } : {}),
        ...(extra.maxWaitMs ? { maxWaitMs: extra.maxWaitMs } : {}),
      },
      ...(extra.timeoutMs ? { timeoutMs: extra.timeoutMs } : {}),
    });

  if (command === 'upload') {
    const { values: v, positionals } = parse('upload', {
      args: rest,
      allowPositionals: true,
      options: {
        ...common,
        resume: { type: 'string' },
        tags: { type: 'string' },
        private: { type: 'boolean', default: false },
        concurrency: { type: 'string' },
        retries: { type: 'string' },
        'max-wait': { type: 'string' },
        timeout: { type: 'string' },
        'no-check': { type: 'boolean', default: false },
        resumable: { type: 'string' },
        'chunk-size': { type: 'string' },
      },
    });
    if (v.help) return (out.write(UPLOAD_USAGE), 0);
    const resumable = v.resumable ?? 'auto';
    if (resumable !== 'auto' && resumable !== 'always' && resumable !== 'never')
      throw new CliError(`--resumable must be auto, always or never (got "${resumable}")`);
    const chunkSize = v['chunk-size'] === undefined ? DEFAULT_CHUNK : parseChunkSize(v['chunk-size']);
    if (chunkSize === null)
      throw new CliError(`--chunk-size must be a size from 64k to 10m, e.g. 512k or 2m (got "${v['chunk-size']}")`);
    if (!positionals.length) throw new CliError('upload: no files or folders given (see `pixvote upload --help`)');
    const tags = normalizeTags((v.tags ?? '').split(','));
    const { url, token } = await resolveTarget(v, { needToken: true });
    const client = clientFor(url, token, {
      retries: intOption('retries', v.retries, DEFAULT_RETRY.retries, 0, 100),
      maxWaitMs: intOption('max-wait', v['max-wait'], DEFAULT_RETRY.maxWaitMs / 1000, 1, 86_400) * 1000,
      timeoutMs: intOption('timeout', v.timeout, 120, 1, 86_400) * 1000,
    });
    const concurrency = intOption('concurrency', v.concurrency, 4, 1, 64);
    const resumePath = v.resume ?? defaultResumePath({ server: url, paths: positionals, tags, isPrivate: v.private });
    return runUpload(
      client,
      {
        paths: positionals,
        tags,
        isPrivate: v.private,
        concurrency,
        resumePath,
        preCheck: !v['no-check'],
        resumable,
        chunkSize,
        onInterrupt: onSigint,
      },
      out,
    );
  }

  if (command === 'login') {
    const { values: v } = parse('login', {
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
        scopes: { type: 'string' },
        'expires-in': { type: 'string' },
      },
    });
    if (v.help) return (out.write(LOGIN_USAGE), 0);
    const url = v.url ?? process.env.PIXVOTE_URL;
    if (!url) throw new CliError('login: --url URL is required (see `pixvote login --help`)');
    return runLogin(
      {
        url,
        email: v.email,
        username: v.username,
        passwordStdin: v['password-stdin'],
        jwt: v.jwt,
        tokenName: v['token-name'],
        scopes: v.scopes,
        expiresIn: v['expires-in'],
      },
      out,
      (u) => clientFor(u),
    );
  }

  if (command === 'logout') {
    const { values: v } = parse('logout', { args: rest, options: { url: common.url, help: common.help } });
    if (v.help) return (out.write(LOGOUT_USAGE), 0);
    const url = v.url ?? process.env.PIXVOTE_URL ?? (await loadConfig()).current;
    if (!url) throw new CliError('not logged in anywhere');
    return runLogout(normalizeUrl(url), out, (u, t) => clientFor(u, t));
  }

  if (command === 'tokens') {
    const { values: v, positionals } = parse('tokens', {
      args: rest,
      allowPositionals: true,
      options: { ...common, scopes: { type: 'string' }, 'expires-in': { type: 'string' } },
    });
    if (v.help) return (out.write(TOKENS_USAGE), 0);
    const { url, token } = await resolveTarget(v, { needToken: true });
    return runTokens(clientFor(url, token), positionals, out, { scopes: v.scopes, expiresIn: v['expires-in'] });
  }

  if (command === 'webhooks') {
    const { values: v, positionals } = parse('webhooks', {
      args: rest,
      allowPositionals: true,
      options: { ...common, events: { type: 'string' }, description: { type: 'string' } },
    });
    if (v.help) return (out.write(WEBHOOKS_USAGE), 0);
    const { url, token } = await resolveTarget(v, { needToken: true });
    return runWebhooks(clientFor(url, token), positionals, out, { events: v.events, description: v.description });
  }

  if (command === 'mod') {
    const { request, target } = parseModArgs(rest);
    if (request.kind === 'help') return (out.write(MOD_USAGE), 0);
    const { url, token, login } = await resolveTarget(target, { needToken: request.kind !== 'modlog' });
    const username = login && token === login.token ? login.username : undefined;
    return runMod(clientFor(url, token), request, out, { url, username });
  }

  if (command === 'admin') return runAdmin(rest, out);
  if (command === 'media') return runMedia(rest, out);

  if (Object.hasOwn(SCRIPTS, command)) return runScript(command, rest);
  throw new CliError(`unknown command "${command}" (see \`pixvote --help\`)`);
}

/** SIGINT while a run can stop cleanly: the first asks it to stop (summary, exit 130), a second exits at once. */
function onSigint(stop: () => void): () => void {
  let stopping = false;
  const handler = () => {
    if (stopping) process.exit(130);
    stopping = true;
    stop();
  };
  process.on('SIGINT', handler);
  return () => process.off('SIGINT', handler);
}

export async function main(
  argv: string[],
  out: NodeJS.WriteStream = process.stdout,
  err: NodeJS.WriteStream = process.stderr,
): Promise<number> {
  try {
    return await run(argv, out);
  } catch (e) {
    if (e instanceof CliError) err.write(`pixvote: ${e.message}\n`);
    else if (e instanceof ApiError) err.write(`pixvote: the server said ${e.status} ${e.code}: ${e.message}\n`);
    else if (e instanceof NetworkError) err.write(`pixvote: cannot reach the server: ${e.message}\n`);
    else if (e instanceof WaitTooLongError) err.write(`pixvote: ${e.message}\n`);
    else if ((e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      err.write(`pixvote: ${(e as Error).message.split('. ')[0]} (see \`pixvote --help\`)\n`);
      return 2;
    } else throw e;
    return e instanceof CliError ? e.exitCode : e instanceof WaitTooLongError ? 75 : 1;
  }
}
