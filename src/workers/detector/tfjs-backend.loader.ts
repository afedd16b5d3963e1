/**
 * Picks the TensorFlow.js backend for this thread: tfjs-node ('tensorflow') when it is installed and
 * loads, else tfjs-backend-wasm with SIMD on one thread. Never the pure-JS 'cpu' backend: it is many
 * times slower (bench/README.md), so a silent fall back to it would look like a hung upload queue.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as TfCore from '@tensorflow/tfjs-core';
import type { loadGraphModel } from '@tensorflow/tfjs-converter';

/** The slice of the TF.js API the detector uses; tfjs-node's namespace and core + converter both fit it. */
export type Tf = typeof TfCore & { loadGraphModel: typeof loadGraphModel };

export interface TfRuntime {
  tf: Tf;
  backend: 'tensorflow' | 'wasm';
  /** For 'wasm': whether the SIMD binary is in use. */
  simd: boolean;
}

let runtime: Promise<TfRuntime> | undefined;

/** Loads the backend once per thread (TF.js keeps one engine per module instance, i.e. per thread). */
export function loadTfRuntime(): Promise<TfRuntime> {
  runtime ??= pickBackend();
  runtime.catch(() => {
    runtime = undefined;
  });
  return runtime;
}

async function pickBackend(): Promise<TfRuntime> {
  let nodeFailure: unknown;
  try {
    return await loadTfjsNode();
  } catch (err) {
    nodeFailure = err;
  }
  try {
    return await loadWasm();
  } catch (wasmFailure) {
    throw new Error(
      'no TensorFlow.js backend could be loaded, and the pure-JS cpu backend is not used on purpose: ' +
        `@tensorflow/tfjs-node failed (${reason(nodeFailure)}); ` +
        `@tensorflow/tfjs-backend-wasm failed (${reason(wasmFailure)})`,
      { cause: wasmFailure },
    );
  }
}

async function loadTfjsNode(): Promise<TfRuntime> {
  // A variable specifier: tfjs-node is optional and absent from the type graph.
  const specifier = '@tensorflow/tfjs-node';
  const tf = (await import(specifier)) as Tf;
  if (!(await tf.setBackend('tensorflow'))) throw new Error("setBackend('tensorflow') returned false");
  return { tf, backend: 'tensorflow', simd: false };
}

async function loadWasm(): Promise<TfRuntime> {
  const [core, converter, wasm] = await Promise.all([
    import('@tensorflow/tfjs-core'),
    import('@tensorflow/tfjs-converter'),
    import('@tensorflow/tfjs-backend-wasm'),
  ]);
  // Emscripten would look for the .wasm files next to the bundle it was built from; point it at
  // node_modules explicitly so resolution does not depend on the caller's cwd or thread.
  const dist = path.dirname(fileURLToPath(import.meta.resolve('@tensorflow/tfjs-backend-wasm')));
  const binaries = ['tfjs-backend-wasm.wasm', 'tfjs-backend-wasm-simd.wasm', 'tfjs-backend-wasm-threaded-simd.wasm'];
  wasm.setWasmPaths(Object.fromEntries(binaries.map((name) => [name, path.join(dist, name)])));
  // One thread per worker: the pool already runs one worker per core. (tfjs-wasm ignores
  // threads under Node anyway, but the intent belongs here.)
  wasm.setThreadsCount(1);
  if (!(await core.setBackend('wasm'))) throw new Error("setBackend('wasm') returned false");
  meanOverSpaceAsAvgPool(core);
  const simd = (await core.env().getAsync('WASM_HAS_SIMD_SUPPORT')) === true;
  return { tf: { ...core, loadGraphModel: converter.loadGraphModel }, backend: 'wasm', simd };
}

/**
 * The wasm backend's Mean over the spatial axes of an NHWC tensor (the squeeze-and-excite blocks' global
 * pooling, nine per CenterNet run) transposes the feature map to NCHW first and then averages it; AvgPool over
 * the whole map (XNNPACK) gives the same numbers without the transpose. Other Means are left as they are.
 */
function meanOverSpaceAsAvgPool(core: typeof TfCore): void {
  const mean = core.getKernel(core.Mean, 'wasm');
  const avgPool = core.getKernel(core.AvgPool, 'wasm');
  if (!mean || !avgPool || (mean as { pixvote?: boolean }).pixvote) return;
  const kernelFunc: TfCore.KernelFunc = (args) => {
    const x = args.inputs.x as TfCore.TensorInfo;
    const { axis, keepDims } = args.attrs as unknown as { axis: number | number[]; keepDims: boolean };
    const axes = (Array.isArray(axis) ? axis : [axis]).map((a) => (a < 0 ? a + x.shape.length : a)).sort();
    if (x.shape.length !== 4 || x.dtype !== 'float32' || axes.join() !== '1,2') return mean.kernelFunc(args);
    const [n, height, width, channels] = x.shape as [number, number, number, number];
    const out = avgPool.kernelFunc({
      inputs: { x },
      backend: args.backend,
      attrs: { filterSize: [height, width], strides: [1, 1], pad: 'valid' },
    }) as TfCore.TensorInfo;
    if (!keepDims) (out as { shape: number[] }).shape = [n, channels];
    return out;
  };
  core.unregisterKernel(core.Mean, 'wasm');
  core.registerKernel({ ...mean, kernelFunc, pixvote: true } as TfCore.KernelConfig);
}

function reason(err: unknown): string {
  return err instanceof Error ? err.message.split('\n')[0]! : String(err);
}
