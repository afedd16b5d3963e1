/**
 * `npm run bench:gateway`: the gateway's own CPU per cached feed read, in process — no sockets and no load
 * generator sharing the cores — against Koa sending the same bytes and a Koa hello-world, in interleaved
 * rounds. The feeds benchmark measures the same thing end to end through the network (requests/s), where
 * a 2-core machine adds a lot of noise; this one isolates what the gateway code costs. And a cost line per
 * middleware: the cached read with that one passed through, in the same rounds (issue 48), so a feature that makes
 * every request dearer shows under its own name in bench:ci's table. Where the µs go inside: `npm run profile:gateway`.
 *
 *   npm run bench:gateway [-- --rounds 15 --requests 3000]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import Koa from 'koa';
import { loadConfig } from '../src/config.ts';
import { ListedHeadersResponse } from '../src/gateway/listed-headers.ts';
import { compose } from '../src/main.ts';
import { isMain, runAlone } from './support/cli.ts';
import { cpuPerRequest, inject } from './support/inject.ts';
import { figure, Recorder, type Figure } from './support/report.ts';
import { quantile } from './support/stats.ts';
import { TARGETS } from './support/targets.ts';

/** The app as bench:gateway and profile:gateway run it in process: its own DATA_DIR, limits out of the way. */
export async function composeForGateway(prefix: string) {
  const dataDir = await mkdtemp(path.join(tmpdir(), prefix));
  const composed = await compose(
    loadConfig({
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      WORKERS: '1',
      HUMAN_POLICY: 'off',
      RATE_LIMIT_GENERAL: '1000000000/1m',
      RATE_LIMIT_MEDIA: '1000000000/1m',
      RATE_LIMIT_UPLOAD: '1000/1m',
    }),
  );
  return { dataDir, composed };
}

/** A page of twelve uploads, made through the API (so a write has run, as in production); their author's JWT. */
export async function seedGatewayPage(app: Parameters<typeof inject>[0]): Promise<string> {
  const registered = await inject(app, {
    method: 'POST',
    path: '/api/auth',
    body: JSON.stringify({
      action: 'register',
      username: 'bench_gateway',
      email: 'bench@example.com',
      password: 'correct horse battery staple',
    }),
  });
  const { token } = JSON.parse(registered.body) as { token: string };
  for (let i = 0; i < 12; i++) {
    const made = await inject(app, {
      method: 'POST',
      path: '/api/upload',
      headers: { authorization: `Bearer ${token}` },
      body: JSON.stringify({
        upload_type: 'link',
        external_url: `https://www.youtube.com/watch?v=bench${String(i).padStart(6, '0')}`,
        description: 'a'.repeat(100),
        tags: 'bench,gateway,feeds',
      }),
    });
    if (made.status !== 201) throw new Error(`seeding failed: ${made.status} ${made.body}`);
  }
  return token;
}

/** What each middleware of the app (src/gateway/app.ts) does, by its function's name. */
const FEATURES: Record<string, string> = {
  requestMetrics: 'request metrics and access log',
  requestHeaders: 'request id and security headers',
  errorHandler: 'error mapper (404/405, error bodies), ETag / 304 of JSON answers',
  ipRateLimit: 'per-IP rate limit (RateLimit-* headers)',
  bodyThenAuth: 'declared body size, body parsing and authentication',
  hotRoutes: 'the feed route: query, cache lookup, ETag, Cache-Control (vs Koa sending the bytes)',
};

type Terminal = (ctx: Koa.Context) => void;

/**
 * The app's request handler once per middleware on a cached read's way (up to the hot routes, which answer it),
 * with that one middleware passed through (`next()` at once) and the rest as they are; the hot routes are replaced
 * by `terminal` instead (Koa sending the same bytes). Koa composes `app.middleware` when `callback()` is called.
 */
function withoutEach(app: Koa<never>, terminal: Terminal) {
  const stack = [...app.middleware];
  const last = stack.findIndex((m) => m.name === 'hotRoutes');
  if (last < 0) throw new Error('the app has no hotRoutes middleware: the bench cannot find the cached read');
  const out: Array<{ name: string; what: string; handler: ReturnType<Koa['callback']> }> = [];
  try {
    for (let i = 0; i <= last; i++) {
      const name = stack[i]!.name || `middleware ${i}`;
      const pass = i === last ? (terminal as never) : (((_ctx: unknown, next: () => Promise<void>) => next()) as never);
      app.middleware = stack.map((m, j) => (j === i ? pass : m));
      out.push({
        name,
        what: FEATURES[name] ?? 'a middleware this bench does not describe yet',
        handler: app.callback(),
      });
    }
  } finally {
    app.middleware = stack;
  }
  return out;
}

export async function gatewayBench(rec: Recorder, opts: { rounds: number; requests: number }): Promise<void> {
  const { dataDir, composed } = await composeForGateway('pixvote-bench-gateway-');
  try {
    const app = composed.app.callback();
    const token = await seedGatewayPage(app);
    const page = await inject(app, { path: '/api/uploads' }, true, ListedHeadersResponse);
    if (page.status !== 200) throw new Error(`GET /api/uploads answered ${page.status}`);
    const signedIn = { authorization: `Bearer ${token}` };
    const own = await inject(app, { path: '/api/uploads', headers: signedIn }, true, ListedHeadersResponse);
    if (own.status !== 200) throw new Error(`GET /api/uploads signed in answered ${own.status}`);
    const pageBytes = Buffer.byteLength(page.body);

    const sameBytes = new Koa();
    // As the feed cache holds it: bytes, not a string.
    const body = Buffer.from(page.body);
    sameBytes.use((ctx) => {
      ctx.type = 'application/json; charset=utf-8';
      ctx.body = body;
    });
    const hello = new Koa();
    hello.use((ctx) => {
      ctx.body = { hello: 'world' };
    });
    // The cost line of each feature: the cached read again with one middleware passed through (the route: replaced
    // by Koa sending the same bytes), in the same rounds. What it adds is the difference, round by round.
    const without = withoutEach(composed.app, (ctx) => {
      ctx.type = 'application/json; charset=utf-8';
      ctx.body = body;
    });
    const cpu = await cpuPerRequest(
      {
        hello: { handler: hello.callback(), path: '/' },
        sameBytes: { handler: sameBytes.callback(), path: '/' },
        // The app's responses are the class its server makes (src/server.ts); Koa's are Node's plain one.
        cached: { handler: app, path: '/api/uploads', response: ListedHeadersResponse },
        // The same cached page read with a JWT, as a signed-in client sends it: the token verified, its user read.
        signedIn: { handler: app, path: '/api/uploads', response: ListedHeadersResponse, headers: signedIn },
        healthz: { handler: app, path: '/healthz', response: ListedHeadersResponse },
        ...Object.fromEntries(
          without.map(
            (w) =>
              [
                `without ${w.name}`,
                { handler: w.handler, path: '/api/uploads', response: ListedHeadersResponse },
              ] as const,
          ),
        ),
      },
      opts,
    );
    const costs = without.map((w) => {
      const rest = cpu[`without ${w.name}`]!;
      return { ...w, samples: cpu.cached!.map((c, i) => c - rest[i]!) };
    });
    const total = cpu.cached!.map((_, i) => costs.reduce((sum, c) => sum + c.samples[i]!, 0));
    const ratio = (yardstick: number[], subject: number[]) => yardstick.map((y, i) => y / subject[i]!);
    const note = (xs: number[]) => `${quantile(xs, 0.5).toFixed(1)} µs/request`;
    rec.add(
      figure('gateway', 'Koa hello-world, CPU per request (in process)', 'µs', cpu.hello!),
      figure('gateway', `Koa sending the same ${pageBytes} bytes, CPU per request`, 'µs', cpu.sameBytes!),
      figure('gateway', 'cached feed page, CPU per request', 'µs', cpu.cached!),
      figure('gateway', 'cached feed page read signed in (a JWT), CPU per request', 'µs', cpu.signedIn!),
      figure(
        'gateway',
        'cost of being signed in: the JWT verified, its user read (the same page signed in − anonymous)',
        'µs',
        cpu.signedIn!.map((s, i) => s - cpu.cached![i]!),
      ),
      figure('gateway', '/healthz through the whole middleware chain, CPU per request', 'µs', cpu.healthz!),
      figure(
        'gateway',
        'Koa sending the same bytes ÷ cached feed page (CPU per request)',
        '×',
        ratio(cpu.sameBytes!, cpu.cached!),
        {
          target: TARGETS.gatewayCpuVsKoa,
          note: `${note(cpu.sameBytes!)} vs ${note(cpu.cached!)}`,
        },
      ),
      figure('gateway', 'Koa hello-world ÷ cached feed page (CPU per request)', '×', ratio(cpu.hello!, cpu.cached!), {
        target: TARGETS.gatewayCpuVsHello,
        note: `${note(cpu.hello!)} vs ${note(cpu.cached!)}`,
      }),
      ...costs.map((c) => figure('gateway', `cost of ${c.name}: ${c.what}, CPU per cached feed read`, 'µs', c.samples)),
      figure('gateway', 'cost of the middleware and route together (sum of the lines above)', 'µs', total),
    );
  } finally {
    await composed.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/**
 * The same, in a fresh Node process: it measures CPU in the process it runs in, so a caller that has run
 * other benchmarks (a bigger heap, more to collect) would skew it — and it would leave its own heap behind.
 */
export async function gatewayBenchIsolated(rec: Recorder, opts: { rounds: number; requests: number }): Promise<void> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      '--experimental-strip-types',
      '--experimental-async-context-frame',
      fileURLToPath(import.meta.url),
      '--rounds',
      String(opts.rounds),
      '--requests',
      String(opts.requests),
    ],
    { env: { ...process.env, PIXVOTE_BENCH_FIGURES: '1' }, maxBuffer: 16 * 1024 * 1024 },
  );
  const line = stdout.split('\n').find((l) => l.startsWith('FIGURES '));
  if (!line) throw new Error('the gateway benchmark printed no figures');
  rec.add(...(JSON.parse(line.slice('FIGURES '.length)) as Figure[]));
}

if (isMain(import.meta.url) && process.env.PIXVOTE_BENCH_FIGURES === '1') {
  const rec = new Recorder('gateway');
  const args = process.argv.slice(2);
  const arg = (name: string, fallback: number) => Number(args[args.indexOf(`--${name}`) + 1] ?? fallback) || fallback;
  await gatewayBench(rec, { rounds: arg('rounds', 15), requests: arg('requests', 3000) });
  console.log(`FIGURES ${JSON.stringify(rec.figures)}`);
  process.exit(0);
} else if (isMain(import.meta.url)) {
  await runAlone(
    'gateway',
    { rounds: { type: 'string', default: '15' }, requests: { type: 'string', default: '3000' } },
    (rec, v) => gatewayBench(rec, { rounds: Number(v.rounds), requests: Number(v.requests) }),
  );
}
