/**
 * `npm run bench`: every benchmark in turn — pipeline, HTTP uploads (SQLite; PostgreSQL + Redis), feeds and votes (both
 * databases), the gateway's CPU per cached read in process, near-duplicate lookup at 100k and 1M hashes (both
 * databases) — printed as one table and written to bench/results/all-<timestamp>.json. About 15 minutes on 2 cores,
 * most of it seeding and scanning 1M rows; `--lookup-sizes 100k` makes it about 8.
 *
 *   npm run bench [-- --lookup-sizes 100k,1m --rounds 5 --markdown]
 */
import { detectCostBench } from './detect-cost.bench.ts';
import { provenanceBench } from './provenance.bench.ts';
import { feedsBench } from './feeds.bench.ts';
import { gatewayBenchIsolated } from './gateway.bench.ts';
import { httpUploadsBench } from './http-uploads.bench.ts';
import { lookupBench } from './lookup.bench.ts';
import { pipelineBench } from './pipeline.bench.ts';
import { numbers, parseCommandLine } from './support/cli.ts';
import { finish, Recorder } from './support/report.ts';

const { values } = parseCommandLine('npm run bench --', {
  'lookup-sizes': { type: 'string', default: '100k,1m' },
  rounds: { type: 'string', default: '5' },
  markdown: { type: 'boolean' },
});
const rounds = Number(values.rounds);
const rec = new Recorder('all');
const steps: Array<[string, () => Promise<void>]> = [
  ['pipeline', () => pipelineBench(rec, { sizes: [2, 12], rounds, rss: true })],
  ['detect cost', () => detectCostBench(rec, { sizes: [2, 12], rounds, photos: true })],
  ['provenance', () => provenanceBench(rec, { rounds, images: 4 })],
  [
    'http-uploads, SQLite',
    () => httpUploadsBench(rec, { db: 'sqlite', rounds, images: 16, clients: 4, workers: 2, latency12: true }),
  ],
  [
    'http-uploads, PostgreSQL + Redis',
    () => httpUploadsBench(rec, { db: 'postgres', rounds, images: 16, clients: 4, workers: 2, latency12: false }),
  ],
  ['feeds', () => feedsBench(rec, { dbs: ['sqlite', 'postgres'], rounds, seconds: 2, connections: 8, at100k: true })],
  ['gateway CPU in process', () => gatewayBenchIsolated(rec, { rounds: 15, requests: 3000 })],
  [
    'lookup',
    () =>
      lookupBench(rec, {
        sizes: numbers(String(values['lookup-sizes'])),
        dbs: ['sqlite', 'postgres'],
        probes: 200,
        rounds: 3,
      }),
  ],
];
const failed: string[] = [];
for (const [name, step] of steps) {
  const t = Date.now();
  console.log(`\n— ${name}`);
  try {
    await step();
  } catch (e) {
    failed.push(name);
    rec.note(`${name} failed: ${(e as Error).message}`);
  }
  console.log(`  · ${Math.round((Date.now() - t) / 1000)} s`);
}
const args = process.argv.slice(2).filter((a) => a !== '--markdown');
await finish(rec.report(`npm run bench${args.length ? ` -- ${args.join(' ')}` : ''}`), {
  markdown: Boolean(values.markdown),
});
if (failed.length) console.error(`\nfailed: ${failed.join(', ')}`);
process.exit(failed.length ? 1 : 0);
