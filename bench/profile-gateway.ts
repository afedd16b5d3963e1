/**
 * `npm run profile:gateway`: where the gateway's CPU goes on a cached feed read, in process (as bench:gateway drives
 * it: `app.callback()` with in-memory requests, no sockets). It seeds the same page of twelve uploads, warms up, then
 * records a V8 CPU profile (the inspector's sampling profiler, the one `--cpu-prof` writes) over `--requests` reads
 * of `GET /api/uploads` and prints, per request, the µs of each of the app's own functions: every sample is charged
 * to the innermost frame of `src/` on its stack (so a function's figure includes the Koa, Node and library code it
 * calls), the rest to the library's own frames (Koa's response writing, Node's HTTP framing), and the collector apart.
 * The µs are the measured CPU per request (process.cpuUsage over the same reads) split by the share of samples.
 *
 *   npm run profile:gateway [-- --requests 100000 --path /api/uploads --top 30 --out profile.cpuprofile]
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../src/config.ts';
import { compose } from '../src/main.ts';
import { parseCommandLine } from './support/cli.ts';
import { inject } from './support/inject.ts';
import { seedGatewayPage } from './gateway.bench.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SRC = `${path.join(ROOT, 'src')}${path.sep}`;

const fileOf = (url: string) => {
  const p = url.startsWith('file://') ? fileURLToPath(url) : url;
  return p.startsWith(ROOT) ? path.relative(ROOT, p) : p;
};
const libraryOf = (url: string): string => {
  if (!url) return '(V8 / native)';
  if (url.startsWith('node:')) return url.split('/')[0]!;
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  return m ? m[1]! : fileOf(url);
};

/** µs per request of each of our functions (inclusive of what they call outside src/), and of what runs outside. */
export function attribute(profile: Profile, usPerRequest: number): Array<{ where: string; us: number; share: number }> {
  const parent = new Map<number, number>();
  const byId = new Map<number, ProfileNode>();
  for (const n of profile.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const owner = new Map<number, string | null>();
  const ownerOf = (id: number): string | null => {
    if (owner.has(id)) return owner.get(id)!;
    const n = byId.get(id)!;
    const url = n.callFrame.url.startsWith('file://') ? fileURLToPath(n.callFrame.url) : n.callFrame.url;
    let o: string | null;
    if (url.startsWith(SRC))
      o = `${n.callFrame.functionName || '(anonymous)'} (${fileOf(url)}:${n.callFrame.lineNumber + 1})`;
    else {
      const up = parent.get(id);
      o = up === undefined ? null : ownerOf(up);
    }
    owner.set(id, o);
    return o;
  };
  const counts = new Map<string, number>();
  let busy = 0;
  for (const id of profile.samples) {
    const n = byId.get(id)!;
    const name = n.callFrame.functionName;
    if (name === '(idle)' || name === '(program)' || name === '(root)') continue;
    busy++;
    const key =
      name === '(garbage collector)'
        ? '(garbage collector)'
        : (ownerOf(id) ?? `outside src/: ${libraryOf(n.callFrame.url)} ${name || '(anonymous)'}`);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts]
    .map(([where, c]) => ({ where, share: c / busy, us: (c / busy) * usPerRequest }))
    .sort((a, b) => b.us - a.us);
}

/** The middleware (app.ts) each file of src/ serves on a cached feed read; anything else is "other src/". */
const GROUPS: Array<[RegExp, string]> = [
  [/^src\/gateway\/middleware\/request-metrics\.ts|^src\/metrics\.ts/, 'requestMetrics: metrics and access log'],
  [/^src\/gateway\/middleware\/request-headers\.ts/, 'requestHeaders: request id, security headers'],
  [/^src\/gateway\/middleware\/error-handler\.ts/, 'errorHandler: error mapper'],
  [/^src\/gateway\/middleware\/conditional-get\.ts/, 'conditionalGet: ETag / 304 of JSON'],
  [/^src\/gateway\/middleware\/rate-limit\.ts|^src\/store\/batched-counter\.ts|rate-limit/, 'ipRateLimit'],
  [
    /^src\/gateway\/app\.ts|^src\/gateway\/limits\.ts|^src\/gateway\/middleware\/authenticate\.ts/,
    'bodyThenAuth: declared body size, body, authentication',
  ],
  [
    /^src\/gateway\/(hot-routes|fresh)\.ts|^src\/gateway\/routes\/|^src\/domain\/feeds\/|^src\/store\/cache\/|^src\/main\.ts/,
    'hotRoutes: the feed route, its cache, ETag',
  ],
];

/** The same rows summed by middleware (src/), by what runs outside src/ (Koa, Node, the harness), and the collector. */
export function byMiddleware(rows: ReadonlyArray<{ where: string; us: number; share: number }>) {
  const sums = new Map<string, { us: number; share: number }>();
  for (const r of rows) {
    const file = /\((src\/[^:]+):\d+\)$/.exec(r.where)?.[1];
    const group = file
      ? (GROUPS.find(([re]) => re.test(file))?.[1] ?? 'other src/')
      : r.where.startsWith('outside src/: bench/')
        ? 'the harness (in-memory request and socket)'
        : r.where.startsWith('outside src/')
          ? 'Koa and Node outside any middleware (context, response, HTTP framing)'
          : r.where;
    const s = sums.get(group) ?? { us: 0, share: 0 };
    s.us += r.us;
    s.share += r.share;
    sums.set(group, s);
  }
  return [...sums].map(([where, s]) => ({ where, ...s })).sort((a, b) => b.us - a.us);
}

const { values } = parseCommandLine(
  'npm run profile:gateway --',
  {
    requests: { type: 'string', default: '100000' },
    path: { type: 'string', default: '/api/uploads' },
    top: { type: 'string', default: '30' },
    out: { type: 'string' },
  },
  {
    help: {
      summary:
        "A CPU profile of the gateway answering one path again and again in process (bench:gateway's setup), " +
        'printed as µs per request by function of src/ (inclusive of the library code each calls).',
      options: {
        requests: 'requests profiled (after as many to warm up)',
        path: 'the path read',
        top: 'rows printed',
        out: 'also write the raw .cpuprofile here (Chrome DevTools opens it)',
      },
    },
  },
);

const requests = Number(values.requests);
const dataDir = await mkdtemp(path.join(tmpdir(), 'pixvote-profile-gateway-'));
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
try {
  const app = composed.app.callback();
  await seedGatewayPage(app);
  const target = String(values.path);
  for (let i = 0; i < Math.min(requests, 20_000); i++) await inject(app, { path: target }, false);
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 50 });
  await session.post('Profiler.start');
  const before = process.cpuUsage();
  for (let i = 0; i < requests; i++) await inject(app, { path: target }, false);
  const used = process.cpuUsage(before);
  const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
  session.disconnect();
  if (values.out) await writeFile(String(values.out), JSON.stringify(profile));
  const us = (used.user + used.system) / requests;
  const rows = attribute(profile, us);
  console.log(`GET ${target}: ${us.toFixed(1)} µs of CPU per request over ${requests} (profiler on)\n`);
  const print = (list: ReadonlyArray<{ where: string; us: number; share: number }>) => {
    console.log('| µs/request | share | where |\n|---:|---:|---|');
    for (const r of list) console.log(`| ${r.us.toFixed(2)} | ${(r.share * 100).toFixed(1)} % | ${r.where} |`);
  };
  print(byMiddleware(rows));
  console.log('');
  print(rows.slice(0, Number(values.top)));
} finally {
  await composed.close();
  await rm(dataDir, { recursive: true, force: true });
}
process.exit(0);
