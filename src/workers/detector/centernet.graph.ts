/**
 * The CenterNet TF.js graph of models/manifest.json as both runtimes take it: read from its files and patched for
 * inputs of any shape, its class head cut to the person channel. The TF.js runtime loads it so in every worker;
 * the ONNX conversion (centernet.onnx.ts) starts from it once, when the model files are ensured.
 */
import { access } from 'node:fs/promises';
import path from 'node:path';
import type { io } from '@tensorflow/tfjs-core';
import { readArtifacts, weights } from './graph-artifacts.ts';

export const CENTERNET_FILE = 'centernet.json';
/** The graph converted to ONNX (centernet.onnx.ts), beside the weights; models/manifest.json has its sha256. */
export const CENTERNET_ONNX_FILE = 'centernet.onnx';
/** The size the graph was exported for; its upsampling constants are sized for it. */
const CENTERNET_TRAINED_SIZE = 512;
/** COCO class 'person', of 80. */
export const PERSON_CLASS = 0;
const COCO_CLASSES = 80;

export const INPUT = 'tower_0/images';
export const HEATMAP = 'tower_0/keypoints';
export const EDGES = 'tower_0/wh';
// UpSampling2D exported as ResizeBilinear with a constant output size (32, 64, 128 at 512 px).
const UPSAMPLE_SIZE = /\/up_sampling2d(_\d+)?\/mul$/;
/** The class head's last (pointwise) convolution: one output channel per COCO class, and its biases. */
const CLASS_HEAD = {
  weights: 'CenternetHead/centernet_cls_output/pointwise_weights',
  biases: 'CenternetHead/centernet_cls_output/biases',
};

export interface CenterNetGraph {
  artifacts: io.ModelArtifacts;
  /** Output size of each upsampling step, as the input size divided by this (see freeInputShape). */
  upsampleDivisors: Map<string, number>;
}

/**
 * The graph in `dir` (a model directory, see findModelDir), made shape-free and, unless `allClasses` (tests compare
 * the cut-down head against the full one), cut to the person class.
 */
export async function readCenterNetGraph(dir: string, opts: { allClasses?: boolean } = {}): Promise<CenterNetGraph> {
  const artifacts = await readArtifacts(await findModelDir(dir, CENTERNET_FILE), CENTERNET_FILE);
  const upsampleDivisors = freeInputShape(artifacts);
  if (!opts.allClasses) keepPersonClassOnly(artifacts);
  return { artifacts, upsampleDivisors };
}

/**
 * The class head's last convolution cut down to the person channel: its pointwise weights [1, 1, C, 80] become
 * [1, 1, C, 1] and its 80 biases one, in the weight buffer, so the graph computes (and the sigmoid and the read
 * back touch) one heatmap channel instead of 80. The person scores are the same numbers: each output channel
 * of a pointwise convolution is computed from its own weights alone.
 */
function keepPersonClassOnly(artifacts: io.ModelArtifacts): void {
  const kept: Uint8Array[] = [];
  let cut = 0;
  for (const { spec, count, size, bytes } of weights(artifacts)) {
    if (spec.name !== CLASS_HEAD.weights && spec.name !== CLASS_HEAD.biases) {
      kept.push(bytes);
      continue;
    }
    const classes = spec.shape[spec.shape.length - 1]!;
    if (classes !== COCO_CLASSES || spec.quantization?.scale !== undefined)
      throw new Error(`${CENTERNET_FILE}: unexpected ${spec.dtype}[${spec.shape}] for ${spec.name}`);
    const person = new Uint8Array((count / classes) * size);
    for (let i = 0; i < count / classes; i++) {
      person.set(
        bytes.subarray((i * classes + PERSON_CLASS) * size, (i * classes + PERSON_CLASS + 1) * size),
        i * size,
      );
    }
    kept.push(person);
    spec.shape = [...spec.shape.slice(0, -1), 1];
    cut++;
  }
  if (cut !== 2) throw new Error(`${CENTERNET_FILE}: expected the class head's weights and biases, found ${cut} of 2`);
  const out = new Uint8Array(kept.reduce((n, b) => n + b.length, 0));
  let at = 0;
  for (const b of kept) {
    out.set(b, at);
    at += b.length;
  }
  artifacts.weightData = out.buffer;
}

/** `dir` itself, or its `centernet/` subdirectory when given the models root (MODELS_DIR): the one holding `file`. */
export async function findModelDir(dir: string, file: string): Promise<string> {
  const candidates = [dir, path.join(dir, 'centernet')];
  for (const candidate of candidates) {
    try {
      await access(path.join(candidate, file));
      return candidate;
    } catch {
      // try the next one
    }
  }
  throw new Error(
    `no ${file} in ${candidates.join(' or ')}: ` + 'run `node scripts/fetch-models.ts` or call ensureModels() first',
  );
}

/**
 * The graph is fully convolutional except for two things fixed at export: the input placeholder's
 * shape and the output sizes of three upsampling steps (constants sized for 512×512). The placeholder is
 * made [-1, -1, -1, 3] (free batch, height and width); the upsampling sizes are given per call (see run),
 * each as the input's height and width divided by the returned divisor (16, 8, 4).
 */
function freeInputShape(artifacts: io.ModelArtifacts): Map<string, number> {
  const topology = artifacts.modelTopology as {
    node: Array<{ name: string; op: string; attr?: { shape?: { shape: { dim: unknown } } } }>;
  };
  const dims = [-1, -1, -1, 3].map((n) => ({ size: String(n) }));
  const placeholder = topology.node.find((node) => node.op === 'Placeholder' && node.name === INPUT);
  if (!placeholder?.attr?.shape) throw new Error(`${CENTERNET_FILE} has no placeholder ${INPUT}`);
  placeholder.attr.shape.shape.dim = dims;
  // tfjs types `signature` as `{}`, which the rule wrongly takes for the asserted shape.
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
  const signature = artifacts.signature as { inputs?: Record<string, { tensorShape: { dim: unknown } }> } | undefined;
  const signatureInput = signature?.inputs?.[INPUT];
  if (signatureInput) signatureInput.tensorShape.dim = dims;

  const divisors = new Map<string, number>();
  for (const { spec, count, bytes } of weights(artifacts)) {
    if (!UPSAMPLE_SIZE.test(spec.name)) continue;
    if (spec.dtype !== 'int32' || count !== 2)
      throw new Error(`${CENTERNET_FILE}: unexpected ${spec.dtype}[${spec.shape}] for ${spec.name}`);
    const first = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getInt32(0, true);
    divisors.set(spec.name, CENTERNET_TRAINED_SIZE / first);
  }
  if (divisors.size !== 3 || [...divisors.values()].some((d) => !Number.isInteger(d)))
    throw new Error(`${CENTERNET_FILE}: expected 3 upsampling size constants, found ${[...divisors.values()]}`);
  return divisors;
}
