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
import { rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { parseCommandLine } from './support/cli.ts';
import { inject } from './support/inject.ts';
import { ListedHeadersResponse } from '../src/gateway/listed-headers.ts';
import { composeForGateway, seedGatewayPage } from './gateway.bench.ts';
import { attribute, byMiddleware, type Profile } from './support/cpu-profile.ts';

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
const { dataDir, composed } = await composeForGateway('pixvote-profile-gateway-');
try {
  const app = composed.app.callback();
  await seedGatewayPage(app);
  const target = String(values.path);
  for (let i = 0; i < Math.min(requests, 20_000); i++)
    await inject(app, { path: target }, false, ListedHeadersResponse);
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 50 });
  await session.post('Profiler.start');
  const before = process.cpuUsage();
  for (let i = 0; i < requests; i++) await inject(app, { path: target }, false, ListedHeadersResponse);
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
