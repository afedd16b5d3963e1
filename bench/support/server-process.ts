/**
 * The system under test runs in a process of its own, started exactly as `npm start` starts it
 * (`node src/main.ts` with environment variables), so that its CPU time and memory can be read from /proc
 * and the load generator in this process does not share its event loop.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { APP_ENTRY, NODE_TS, launch, type AppProcess } from '../../test/support/process.ts';

export { APP_ENTRY, NODE_TS };
export const HELLO_ENTRY = fileURLToPath(new URL('./hello-world.server.ts', import.meta.url));

/** A 48-character secret: benchmarks mint JWTs for seeded users with it. */
export const BENCH_JWT_SECRET = 'pixvote-bench-secret-pixvote-bench-secret-000000';

/** A server under measurement; `stop()` sends SIGTERM, then SIGKILL after 30 s. */
export interface BenchServer extends AppProcess {
  /** Current and peak resident memory, MB (null off Linux). */
  memory(): { rssMb: number; peakMb: number } | null;
  /** CPU time used so far (user + system, all threads), ms (NaN off Linux). */
  cpuMs(): number;
}

/** Servers still running: killed if this process exits without stopping them (a crash must not leave orphans). */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

let ticks: number | undefined;
export const clockTicks = (): number => {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
};

/** User and system CPU time used so far by a process (all its threads), ms (NaN off Linux). */
export function processCpu(pid: number): { userMs: number; sysMs: number } {
  try {
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { userMs: (Number(fields[11]) * 1000) / clockTicks(), sysMs: (Number(fields[12]) * 1000) / clockTicks() };
  } catch {
    return { userMs: Number.NaN, sysMs: Number.NaN };
  }
}

export function processCpuMs(pid: number): number {
  const { userMs, sysMs } = processCpu(pid);
  return userMs + sysMs;
}

export function processMemory(pid: number): { rssMb: number; peakMb: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
  } catch {
    return null;
  }
}

async function waitReady(url: string, child: ChildProcess, logFile: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  // Set by the exit listener: typed so that the checks below do not narrow it to null.
  let exited = null as number | null;
  child.once('exit', (code) => (exited = code ?? -1));
  while (Date.now() < until) {
    if (exited !== null) break;
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const log = readFileSync(logFile, 'utf8').split('\n').slice(-20).join('\n');
  child.kill('SIGKILL');
  throw new Error(
    `${url} did not answer 200 within ${timeoutMs / 1000} s` +
      (exited !== null ? ` (the process exited with ${exited})` : '') +
      `; its last output:\n${log}`,
  );
}

/**
 * Starts `entry` (default: the app) with `env` on a free port and resolves once `readyPath` answers 200.
 * Its stdout and stderr go to `logFile`, so the JSON access log costs what it costs in production.
 */
export async function startServer(opts: {
  entry?: string;
  env: Record<string, string>;
  logFile: string;
  readyPath?: string;
  timeoutMs?: number;
}): Promise<BenchServer> {
  const port = await freePort();
  const fd = openSync(opts.logFile, 'a');
  const app = launch(
    process.execPath,
    [...NODE_TS, opts.entry ?? APP_ENTRY],
    { ...process.env, ...opts.env, PORT: String(port), HOST: '127.0.0.1' },
    ['ignore', fd, fd],
  );
  const child = app.proc;
  closeSync(fd);
  live.add(child);
  child.once('exit', () => live.delete(child));
  const url = `http://127.0.0.1:${port}`;
  await waitReady(url + (opts.readyPath ?? '/readyz'), child, opts.logFile, opts.timeoutMs ?? 180_000);
  return { ...app, url, memory: () => processMemory(app.pid), cpuMs: () => processCpuMs(app.pid) };
}

/** The app's environment for benchmarks: production mode, limits out of the way, one process. */
export function appEnv(env: Record<string, string>): Record<string, string> {
  return {
    NODE_ENV: 'production',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    JWT_SECRET: BENCH_JWT_SECRET,
    PROCESSES: '1',
    // What `npm start` sets (package.json): two malloc arenas keep a worker's resident memory ~40 % lower.
    MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2',
    RATE_LIMIT_AUTH: '1000000/15m',
    RATE_LIMIT_GENERAL: '1000000000/15m',
    RATE_LIMIT_MEDIA: '1000000000/15m',
    RATE_LIMIT_UPLOAD: '1000000/1h',
    RATE_LIMIT_VOTE: '1000000000/1h',
    // The load comes from one address, over more connections than a client should hold.
    MAX_CONNECTIONS_PER_IP: '0',
    ...env,
  };
}
