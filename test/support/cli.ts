/**
 * Runs the `pixvote` command (bin/pixvote.js, as `npm link`/`npx` would) in a child process with
 * its own config directory.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const PIXVOTE_BIN = fileURLToPath(new URL('../../bin/pixvote.js', import.meta.url));

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  /** XDG_CONFIG_HOME (and HOME) of the run. */
  home: string;
  stdin?: string;
  env?: Record<string, string>;
  /** The directory it runs in (default: this process's). */
  cwd?: string;
  /** Called with each chunk of stdout as it arrives, and the process (to signal it). */
  onStdout?: (chunk: string, child: ChildProcess) => void;
}

export function pixvote(args: string[], opts: CliOptions): Promise<CliRun> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('PIXVOTE_')) env[k] = v;
  Object.assign(env, { HOME: opts.home, XDG_CONFIG_HOME: opts.home, NO_COLOR: '1' }, opts.env);
  const child = spawn(process.execPath, [PIXVOTE_BIN, ...args], {
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(opts.cwd ? { cwd: opts.cwd } : {}),
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    stdout += c;
    opts.onStdout?.(c, child);
  });
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  child.stdin.end(opts.stdin ?? '');
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
