/**
 * A TF.js graph model's files as model artifacts, and its weights as numbers, read without TF.js: the ONNX
 * runtime path never loads TF.js, and the TF.js path loads the same artifacts (`tf.io.fromMemory`).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { io } from '@tensorflow/tfjs-core';

const BYTES_PER: Record<string, number> = { float16: 2, float32: 4, int32: 4, uint8: 1, uint16: 2, bool: 1 };

/** The graph model `file` in `dir` and its weight files. */
export async function readArtifacts(dir: string, file: string): Promise<io.ModelArtifacts> {
  const json = JSON.parse(await readFile(path.join(dir, file), 'utf8')) as io.ModelJSON;
  const files = await Promise.all(
    json.weightsManifest.flatMap((group) => group.paths.map((p) => readFile(path.join(dir, p)))),
  );
  const data = Buffer.concat(files);
  return {
    modelTopology: json.modelTopology,
    format: json.format,
    generatedBy: json.generatedBy,
    convertedBy: json.convertedBy,
    signature: json.signature,
    weightSpecs: json.weightsManifest.flatMap((group) => group.weights),
    weightData: data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength),
  };
}

/** Each weight of the model with its element count, bytes per element and bytes in the weight buffer. */
export function* weights(
  artifacts: io.ModelArtifacts,
): Generator<{ spec: io.WeightsManifestEntry; count: number; size: number; bytes: Uint8Array }> {
  const data = new Uint8Array(artifacts.weightData as ArrayBuffer);
  let offset = 0;
  for (const spec of artifacts.weightSpecs ?? []) {
    const count = spec.shape.reduce((a, b) => a * b, 1);
    const size = BYTES_PER[spec.quantization?.dtype ?? spec.dtype]!;
    yield { spec, count, size, bytes: data.subarray(offset, offset + count * size) };
    offset += count * size;
  }
}

/** Each weight's values as float32 (float16-quantised ones widened, int32 ones converted), by name. */
export function decodeWeights(artifacts: io.ModelArtifacts): Map<string, { data: Float32Array; shape: number[] }> {
  const out = new Map<string, { data: Float32Array; shape: number[] }>();
  for (const { spec, count, bytes } of weights(artifacts)) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const kind = spec.quantization?.dtype ?? spec.dtype;
    if (spec.quantization && kind !== 'float16') throw new Error(`${spec.name}: ${kind} quantization is not decoded`);
    const read =
      kind === 'float16'
        ? (i: number) => halfToFloat(view.getUint16(i * 2, true))
        : kind === 'float32'
          ? (i: number) => view.getFloat32(i * 4, true)
          : kind === 'int32'
            ? (i: number) => view.getInt32(i * 4, true)
            : null;
    if (!read) throw new Error(`${spec.name}: ${kind} weights are not decoded`);
    out.set(spec.name, { data: Float32Array.from({ length: count }, (_, i) => read(i)), shape: spec.shape });
  }
  return out;
}

/** IEEE 754 half precision to a number. */
export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const fraction = h & 0x3ff;
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024);
  if (exponent === 0x1f) return fraction ? NaN : sign * Infinity;
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
}
