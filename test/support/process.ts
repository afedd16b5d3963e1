/**
 * Runs the server as a real OS process (`node src/main.ts`, what `npm start` runs), for tests of
 * signals, crashes and several gateways. The port is chosen by the OS (PORT=0) and read from the log.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { client, type Client } from './http.ts';

export const APP_ENTRY = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * As `npm start` runs it: TypeScript (Node 22.17 needs the flag; later versions accept it silently) and
 * AsyncLocalStorage without promise hooks.
 */
export const NODE_TS = ['--experimental-strip-types', '--experimental-async-context-frame'];

/** A server process this process started (the tests' and the benchmarks'). */
export interface AppProcess {
  proc: ChildProcess;
  pid: number;
  url: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

/** Spawns `command args` in the checkout with exactly `env`; everything of an AppProcess but its URL. */
export function launch(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  stdio: StdioOptions,
): Omit<AppProcess, 'url'> {
  const proc = spawn(command, args, { cwd: ROOT, env, stdio });
  const exited = once(proc, 'exit').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  return {
    proc,
    pid: proc.pid!,
    exited,
    kill: (s) => proc.kill(s),
    async stop(graceMs = 30_000) {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      const killer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(killer);
    },
  };
}

/** A server started by spawnServer: a client for it and its log. */
export interface ServerProcess extends AppProcess {
  api: Client;
  /** Every JSON log line so far. */
  logs: Array<Record<string, unknown>>;
  /**
   * Resolves once `count` log lines (so far or to come) match `match`; rejects if the process exits first. No
   * deadline: a busy machine makes the wait longer, not wrong (a hang meets the runner's per-file timeout).
   */
  logged(match: (entry: Record<string, unknown>) => boolean, count?: number): Promise<void>;
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
      : [process.execPath, [...NODE_TS, APP_ENTRY]];
  const app = launch(command, args, { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env }, [
    'ignore',
    'pipe',
    'pipe',
  ]);
  const { proc, exited } = app;
  const logs: Array<Record<string, unknown>> = [];
  const waiters = new Set<() => void>();
  let stderr = '';
  proc.stderr!.on('data', (d) => (stderr += d));
  const port = await new Promise<number>((resolve, reject) => {
    // No deadline unless a test sets one: a start is awaited until it listens or exits (a busy machine makes it
    // slower, not wrong; a start that hangs meets the runner's per-file timeout).
    const timer =
      opts.timeoutMs === undefined
        ? undefined
        : setTimeout(
            () => reject(new Error(`server did not start in time; stderr: ${stderr.slice(-2000)}`)),
            opts.timeoutMs,
          );
    let buf = '';
    proc.stdout!.on('data', (chunk: Buffer) => {
      buf += chunk.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          logs.push(entry);
          opts.onLog?.(entry);
          for (const check of [...waiters]) check();
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
  const logged = (match: (entry: Record<string, unknown>) => boolean, count = 1) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (logs.filter(match).length < count) return false;
        waiters.delete(check);
        resolve();
        return true;
      };
      if (check()) return;
      waiters.add(check);
      void exited.then(({ code, signal }) => {
        if (!waiters.delete(check)) return;
        reject(
          new Error(`server exited (${code ?? signal}) before the awaited log line; stderr: ${stderr.slice(-2000)}`),
        );
      });
    });
  return { ...app, url, api: client(url), logs, logged };
}
