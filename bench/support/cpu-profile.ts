/**
 * A V8 CPU profile (the inspector's, or `--cpu-prof`'s .cpuprofile) read as µs per request: by function of src/
 * (inclusive of the library code each calls) and by the middleware of the app's stack (bench/profile-gateway.ts).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface Profile {
  nodes: ProfileNode[];
  samples: number[];
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
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
  [/^src\/gateway\/middleware\/(error-handler|conditional-get)\.ts/, 'errorHandler: error mapper, ETag / 304 of JSON'],
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
