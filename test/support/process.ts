/**
 * Runs the server as a real OS process (`node src/main.ts`, what `npm start` runs), for tests of
 * signals, crashes and several gateways. The port is chosen by the OS (PORT=0) and read from the log.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { client, type Client } from './http.ts';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ServerProcess {
  proc: ChildProcess;
  url: string;
  api: Client;
  /** Every JSON log line so far. */
  logs: Array<Record<string, unknown>>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal: NodeJS.Signals): void;
}

/**
 * `via: 'npm-start'` runs `npm start` in the checkout instead (the README's command), with npm's own
 * signal handling in between; the npm that runs the tests is used when known. `argv` runs that command line
 * in the checkout (`node` in it is this Node), e.g. the Dockerfile's CMD.
 */
export async function spawnServer(
  env: Record<string, string>,
  opts: {
    timeoutMs?: number;
    expectListeners?: number;
    via?: 'node' | 'npm-start';
    argv?: string[];
    onLog?: (entry: Record<string, unknown>) => void;
  } = {},
): Promise<ServerProcess> {
  const npmCli = process.env.npm_execpath;
  const [command, args] = opts.argv
    ? [opts.argv[0] === 'node' ? process.execPath : opts.argv[0]!, opts.argv.slice(1)]
    : opts.via === 'npm-start'
      ? npmCli
        ? [process.execPath, [npmCli, 'start', '--silent']]
        : ['npm', ['start', '--silent']]
      : [process.execPath, ['--experimental-strip-types', '--experimental-async-context-frame', MAIN]];
  const proc = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  proc.stderr.on('data', (d) => (stderr += d));
  const exited = once(proc, 'exit').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`server did not start in time; stderr: ${stderr.slice(-2000)}`)),
      opts.timeoutMs ?? 60_000,
    );
    let buf = '';
    proc.stdout.on('data', (chunk: Buffer) => {
      buf += chunk.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          logs.push(entry);
          opts.onLog?.(entry);
          const address = entry.address as { port?: number } | undefined;
          if (entry.msg === 'pixvote listening' && address?.port) {
            clearTimeout(timer);
            resolve(address.port);
          }
        } catch {
          // not a log line
        }
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code ?? signal}) before listening; stderr: ${stderr.slice(-2000)}`));
    });
  });
  const url = `http://127.0.0.1:${port}`;
  return { proc, url, api: client(url), logs, exited, kill: (s) => proc.kill(s) };
}
