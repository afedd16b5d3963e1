/**
 * onnxruntime-node, where it installs: an optional dependency whose native library comes inside the npm package
 * (its install script, which would download CUDA libraries, is not run: package.json allowScripts). Where it is
 * missing or does not load, the detector runs on TF.js instead (tfjs-backend.loader.ts).
 */
import type * as Ort from 'onnxruntime-node';

export type OnnxRuntime = typeof Ort;

let runtime: Promise<OnnxRuntime> | undefined;

/** onnxruntime-node, loaded once per thread; rejects with the reason it could not be loaded. */
export function loadOnnxRuntime(): Promise<OnnxRuntime> {
  runtime ??= import('onnxruntime-node').then((ort) => {
    if (typeof ort.InferenceSession?.create !== 'function') throw new Error('onnxruntime-node has no InferenceSession');
    return ort;
  });
  return runtime;
}
