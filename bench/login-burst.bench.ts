/**
 * Password hashing must not starve file work. The app runs as `npm start` runs it, with the production scrypt
 * cost; one image is stored. In interleaved rounds, image GETs one after another (`?size=medium`, read from disk)
 * are timed on an idle server, then while `logins` clients log in back to back (a 503 busy is honoured for its
 * Retry-After, as a client would). The figure is the GET p50 during the burst ÷ the idle GET p50 of the same round.
 *
 * When scrypt ran on libuv's threadpool (4 threads, shared with fs and DNS), each GET's file read queued behind the
 * burst's hashes: seconds. On the dedicated hashing threads it stays near idle. Goal ≤ 2, CI floor ≤ 3.
 *
 *   npm run bench:login-burst [-- --rounds 3 --logins 50 --gets 40]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createdId, register, uploadRequest } from './support/app-api.ts';
import { isMain, runAlone } from './support/cli.ts';
import { LoadClient } from './support/http-load.ts';
import { jpegs } from './support/images.ts';
import { figure, type Recorder, type Target } from './support/report.ts';
import { appEnv, startServer } from './support/server-process.ts';
import { quantile, ratios } from './support/stats.ts';
import { timeSequentially, whileLoaded } from './support/under-load.ts';

export interface LoginBurstOptions {
  rounds: number;
  /** Concurrent clients logging in during the burst. */
  logins: number;
  /** Image GETs timed per phase (fewer when a phase reaches its time cap). */
  gets: number;
}

/** Image GET p50 during a login burst ÷ idle: goal 2 (issue 13), CI fails above 3. */
export const LOGIN_BURST_TARGET: Target = { op: '<=', value: 3, kind: 'ci', goal: 2 };

const PHASE_CAP_MS = 20_000;
/** GETs are spread over the burst (40 take about a second) rather than squeezed into its first moment. */
const GET_GAP_MS = 25;
const PASSWORD = 'benchmark-password';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function loginBurstBench(rec: Recorder, opts: LoginBurstOptions): Promise<void> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'pixvote-bench-login-'));
  const server = await startServer({
    env: appEnv({ DATA_DIR: dataDir, HUMAN_POLICY: 'off', WORKERS: '1', LOG_LEVEL: 'warn' }),
    logFile: path.join(dataDir, 'server.log'),
  });
  const api = new LoadClient(server.url, 1);
  const burstClient = new LoadClient(server.url, opts.logins);
  try {
    const token = await register(api, 'burst_user');
    const [image] = await jpegs(2, 1);
    const up = await api.send(uploadRequest(image!, token));
    const imagePath = `/api/image/${createdId(up.status, up.body)}?size=medium`;

    /** p50 of `opts.gets` sequential image GETs, or of those done when the phase reaches its time cap. */
    const getP50 = async (): Promise<{ p50: number; n: number }> => {
      const ms = await timeSequentially(`GET ${imagePath}`, () => api.send({ method: 'GET', path: imagePath }), {
        count: opts.gets,
        gapMs: GET_GAP_MS,
        capMs: PHASE_CAP_MS,
      });
      return { p50: quantile(ms, 0.5), n: ms.length };
    };
    await getP50(); // warm-up: file cache, JIT, connection

    const statuses: Record<number, number> = {};
    const body = JSON.stringify({ action: 'login', username: 'burst_user', password: PASSWORD });
    /** Runs `fn` while `opts.logins` clients log in back to back. */
    const duringBurst = <T>(fn: () => Promise<T>): Promise<T> =>
      whileLoaded(
        opts.logins,
        async () => {
          const res = await burstClient.send({
            method: 'POST',
            path: '/api/auth',
            headers: { 'content-type': 'application/json' },
            body,
          });
          statuses[res.status] = (statuses[res.status] ?? 0) + 1;
          if (res.status === 503) await sleep(1000);
          else if (res.status !== 200) throw new Error(`login during the burst: HTTP ${res.status} ${res.body}`);
        },
        fn,
      );

    const idle: number[] = [];
    const burst: number[] = [];
    let burstGets = 0;
    for (let r = 0; r < opts.rounds; r++) {
      idle.push((await getP50()).p50);
      const b = await duringBurst(getP50);
      burst.push(b.p50);
      burstGets += b.n;
    }
    const logins = Object.entries(statuses)
      .map(([s, n]) => `${n} × ${s}`)
      .join(', ');
    rec.add(
      figure('login-burst', 'image GET p50, idle', 'ms', idle),
      figure('login-burst', `image GET p50 during ${opts.logins} concurrent logins`, 'ms', burst, {
        note: `${burstGets} GETs; logins answered ${logins}`,
      }),
      figure('login-burst', `image GET p50 during ${opts.logins} concurrent logins ÷ idle`, '×', ratios(burst, idle), {
        target: LOGIN_BURST_TARGET,
      }),
    );
  } finally {
    await api.close();
    await burstClient.close();
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) {
  await runAlone(
    'login-burst',
    {
      rounds: { type: 'string', default: '3' },
      logins: { type: 'string', default: '50' },
      gets: { type: 'string', default: '40' },
    },
    (rec, v) => loginBurstBench(rec, { rounds: Number(v.rounds), logins: Number(v.logins), gets: Number(v.gets) }),
  );
}
