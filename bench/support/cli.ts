/** Running one benchmark file alone: `node bench/<name>.bench.ts [--options]`. */
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { finish, Recorder } from './report.ts';

export const isMain = (moduleUrl: string): boolean => process.argv[1] === fileURLToPath(moduleUrl);

export const numbers = (list: string): number[] =>
  list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      const n = Number(s.replace(/k$/i, '000').replace(/m$/i, '000000'));
      if (!Number.isFinite(n)) throw new Error(`Expected a comma-separated list of numbers but received "${list}"`);
      return n;
    });

/**
 * Parses the command line, runs the benchmark into a fresh Recorder, prints its table and writes its JSON.
 * Exits 1 with the message when it throws.
 */
export async function runAlone<O extends NonNullable<ParseArgsConfig['options']>>(
  name: string,
  options: O,
  bench: (rec: Recorder, values: Record<string, string | boolean | undefined>) => Promise<void>,
  script = `bench:${name}`,
): Promise<void> {
  const { values } = parseArgs({ options: { ...options, markdown: { type: 'boolean' } }, allowPositionals: false }) as { values: Record<string, string | boolean | undefined> };
  const rec = new Recorder(name);
  try {
    await bench(rec, values);
  } catch (e) {
    console.error(`\n${name} failed: ${(e as Error).stack ?? String(e)}`);
    process.exit(1);
  }
  const command = `npm run ${script}${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
  await finish(rec.report(command), { markdown: Boolean(values.markdown) });
  // Worker pools and database pools are closed by each benchmark; this only ends stray keep-alive timers.
  process.exit(0);
}
