/**
 * The CenterNet TF.js graph (models/manifest.json, after the loader's patches) rewritten as an ONNX model, so
 * onnxruntime-node's native CPU kernels can run it where that package installs: 3–4× less CPU per run than
 * TF.js on wasm (bench/README.md, "Detector runtime"). Only the ops of the two outputs the detector reads are
 * translated; anything else in the graph fails loudly rather than converting wrongly.
 *
 * TF.js runs NHWC; ONNX convolutions are NCHW. The ONNX graph transposes the input once, runs NCHW throughout
 * (weights transposed here, per-channel constants reshaped to [C, 1, 1]) and transposes each output back, so
 * it takes and gives exactly the tensors the TF.js graph does.
 *
 * It runs once per model directory, in ensureModels (model-files.fetch.ts: `npm run fetch-models`, the image build,
 * or the server's start when the file is missing or differs), never in a worker: the workers load the file. The
 * output is deterministic, so models/manifest.json pins its sha256 like the weights'.
 */
import type { io } from '@tensorflow/tfjs-core';
import { EDGES, HEATMAP, INPUT, readCenterNetGraph } from './centernet.graph.ts';
import { decodeWeights } from './graph-artifacts.ts';
import { writeOnnxModel, type OnnxInitializer, type OnnxNode } from './onnx-proto.write.ts';

interface TfAttr {
  s?: string;
  b?: boolean;
  i?: string;
  list?: { i?: string[]; s?: string[] };
}
interface TfNode {
  name: string;
  op: string;
  input?: string[];
  attr?: Record<string, TfAttr>;
}

export interface OnnxConversion {
  /** The ONNX model's input: [N, H, W, 3], like the TF.js placeholder. */
  input: string;
  /** The TF.js output names, which the ONNX model's outputs keep. */
  outputs: readonly string[];
  /** Output size of each upsampling step, as the input size divided by this (the loader's patch). */
  upsampleDivisors: ReadonlyMap<string, number>;
}

const OPSET = 13;
const NCHW_FROM_NHWC = [0, 3, 1, 2];
const NHWC_FROM_NCHW = [0, 2, 3, 1];
/** Where an NHWC axis lands in NCHW. */
const NCHW_AXIS = [0, 2, 3, 1];

const text = (attr?: TfAttr) => (attr?.s === undefined ? undefined : Buffer.from(attr.s, 'base64').toString());
const list = (attr?: TfAttr) => (attr?.list?.i ?? []).map(Number);

/**
 * The CenterNet graph in `dir` (patched as centernet.graph.ts does for TF.js) as an ONNX model computing its
 * heatmap and box edges; `allClasses` keeps the 80 class channels (tests compare the cut head against them).
 */
export async function convertCenterNet(dir: string, opts: { allClasses?: boolean } = {}): Promise<Uint8Array> {
  const { artifacts, upsampleDivisors } = await readCenterNetGraph(dir, opts);
  return tfGraphToOnnx(artifacts, { input: INPUT, outputs: [HEATMAP, EDGES], upsampleDivisors });
}

/** The ONNX model (serialized) computing `conversion.outputs` of the TF.js graph in `artifacts`. */
export function tfGraphToOnnx(artifacts: io.ModelArtifacts, conversion: OnnxConversion): Uint8Array {
  const topology = artifacts.modelTopology as { node: TfNode[] };
  const byName = new Map(topology.node.map((n) => [n.name, n]));
  const constants = decodeWeights(artifacts);
  const nodes: OnnxNode[] = [];
  const initializers: OnnxInitializer[] = [];
  /** Per emitted value: its resolution as the input's size divided by this (for the upsampling scales). */
  const strides = new Map<string, number>();
  const shared = new Map<string, string>();

  const constant = (name: string): { data: Float32Array; shape: number[] } => {
    const c = constants.get(name);
    if (!c) throw new Error(`no constant ${name}`);
    return c;
  };
  const addInit = (name: string, dims: number[], data: Float32Array | { int64: number[] }) => {
    initializers.push({ name, dims, data });
    return name;
  };
  /** A scalar or int64 vector constant, written once however many nodes use it. */
  const sharedInit = (key: string, dims: number[], data: Float32Array | { int64: number[] }) => {
    let name = shared.get(key);
    if (!name) {
      name = addInit(`pixvote/${key}`, dims, data);
      shared.set(key, name);
    }
    return name;
  };
  /** An elementwise operand: a scalar stays one; a per-channel vector [C] or [1, 1, 1, C] becomes [1, C, 1, 1]. */
  const operand = (name: string): string => {
    const { data, shape } = constant(name);
    const channels = shape.length === 0 ? 0 : shape[shape.length - 1]!;
    if (shape.length === 0 || data.length === 1) return addInit(name, [], data.subarray(0, 1));
    if (data.length !== channels) throw new Error(`unexpected elementwise constant ${name} of shape [${shape}]`);
    return addInit(name, [1, channels, 1, 1], data);
  };
  const source = (input: string) => {
    if (input.startsWith('^')) return undefined;
    const name = input.replace(/:0$/, '');
    if (name.includes(':')) throw new Error(`unexpected secondary output ${input}`);
    return name;
  };
  const valueInputs = (n: TfNode) =>
    (n.input ?? []).map(source).filter((s): s is string => s !== undefined && byName.get(s)?.op !== 'Const');
  const stride = (name: string) => {
    const s = strides.get(name);
    if (s === undefined) throw new Error(`value ${name} used before it is computed`);
    return s;
  };

  const emitConv = (n: TfNode, depthwise: boolean) => {
    const [x, w, ...extra] = (n.input ?? []).map(source) as string[];
    if (text(n.attr?.data_format) !== undefined && text(n.attr?.data_format) !== 'NHWC')
      throw new Error(`${n.name}: only NHWC convolutions are converted`);
    const [, sh, sw] = list(n.attr?.strides);
    const [, dh, dw] = list(n.attr?.dilations);
    const padding = text(n.attr?.padding);
    if (padding !== 'SAME' && padding !== 'VALID') throw new Error(`${n.name}: padding ${padding} is not converted`);
    const fused = (n.attr?.fused_ops?.list?.s ?? []).map((s) => Buffer.from(s, 'base64').toString());
    if (fused.length > 0 && fused[0] !== 'BiasAdd') throw new Error(`${n.name}: fused ${fused.join('+')}`);
    if (extra.length !== (fused.length > 0 ? 1 : 0)) throw new Error(`${n.name}: unexpected extra inputs`);
    const activation = fused[1];
    if (fused.length > 2 || (activation && activation !== 'Relu' && activation !== 'Relu6'))
      throw new Error(`${n.name}: fused ${fused.join('+')} is not converted`);

    const { data, shape } = constant(w!);
    const [kh, kw, ci, co] = shape as [number, number, number, number];
    const weights = new Float32Array(data.length);
    // TF: [kh, kw, in, out] (depthwise: [kh, kw, channels, multiplier]). ONNX: [out, in / group, kh, kw].
    for (let y = 0; y < kh; y++)
      for (let xx = 0; xx < kw; xx++)
        for (let i = 0; i < ci; i++)
          for (let o = 0; o < co; o++) {
            const from = ((y * kw + xx) * ci + i) * co + o;
            const to = depthwise ? ((i * co + o) * kh + y) * kw + xx : ((o * ci + i) * kh + y) * kw + xx;
            weights[to] = data[from]!;
          }
    const inputs = [
      source(x!)!,
      addInit(w!, depthwise ? [ci * co, 1, kh, kw] : [co, ci, kh, kw], weights),
      ...(extra[0] ? [addInit(extra[0], [constant(extra[0]).data.length], constant(extra[0]).data)] : []),
    ];
    const convOut = activation ? `${n.name}/conv` : n.name;
    nodes.push({
      op: 'Conv',
      name: convOut,
      inputs,
      outputs: [convOut],
      attributes: {
        kernel_shape: [kh, kw],
        strides: [sh ?? 1, sw ?? 1],
        dilations: [dh ?? 1, dw ?? 1],
        group: depthwise ? ci : 1,
        ...(padding === 'SAME' ? { auto_pad: 'SAME_UPPER' } : { pads: [0, 0, 0, 0] }),
      },
    });
    if (activation === 'Relu') nodes.push({ op: 'Relu', inputs: [convOut], outputs: [n.name] });
    if (activation === 'Relu6') clip(convOut, n.name);
    strides.set(n.name, stride(source(x!)!) * (sh ?? 1));
  };

  const clip = (input: string, output: string) =>
    nodes.push({
      op: 'Clip',
      inputs: [input, sharedInit('zero', [], Float32Array.of(0)), sharedInit('six', [], Float32Array.of(6))],
      outputs: [output],
    });

  const emit = (n: TfNode) => {
    const inputs = (n.input ?? []).map(source).filter((s): s is string => s !== undefined);
    const first = valueInputs(n)[0];
    switch (n.op) {
      case 'Placeholder':
        if (n.name !== conversion.input) throw new Error(`unexpected placeholder ${n.name}`);
        nodes.push({ op: 'Transpose', inputs: ['images'], outputs: [n.name], attributes: { perm: NCHW_FROM_NHWC } });
        strides.set(n.name, 1);
        return;
      case '_FusedConv2D':
      case 'Conv2D':
        return emitConv(n, false);
      case 'FusedDepthwiseConv2dNative':
      case 'DepthwiseConv2dNative':
        return emitConv(n, true);
      case 'Identity':
      case 'Relu':
      case 'Sigmoid':
        nodes.push({ op: n.op, inputs: [first!], outputs: [n.name] });
        break;
      case 'Relu6':
        clip(first!, n.name);
        break;
      case 'Add':
      case 'Sub':
      case 'Mul': {
        const operands = inputs.map((s) => (byName.get(s)?.op === 'Const' ? operand(s) : s));
        nodes.push({ op: n.op, inputs: operands, outputs: [n.name] });
        break;
      }
      case 'Mean': {
        const axes = [...constant(inputs[1]!).data].join();
        if (axes !== '1,2' || n.attr?.keep_dims?.b !== true) throw new Error(`${n.name}: Mean over ${axes}`);
        nodes.push({ op: 'GlobalAveragePool', inputs: [first!], outputs: [n.name] });
        break;
      }
      case 'ResizeBilinear': {
        if (n.attr?.align_corners?.b || n.attr?.half_pixel_centers?.b)
          throw new Error(`${n.name}: only ResizeBilinear without aligned corners or half-pixel centres`);
        const divisor = conversion.upsampleDivisors.get(inputs[1]!);
        if (!divisor) throw new Error(`${n.name}: its size ${inputs[1]} is not an upsampling constant`);
        const scale = stride(first!) / divisor;
        nodes.push({
          op: 'Resize',
          inputs: [first!, '', sharedInit(`scale-${scale}`, [4], Float32Array.of(1, 1, scale, scale))],
          outputs: [n.name],
          attributes: { mode: 'linear', coordinate_transformation_mode: 'asymmetric' },
        });
        strides.set(n.name, divisor);
        return;
      }
      case 'ConcatV2': {
        const axis = constant(inputs[inputs.length - 1]!).data[0]!;
        const values = inputs.slice(0, -1);
        if (values.some((v) => stride(v) !== stride(values[0]!))) throw new Error(`${n.name}: mixed resolutions`);
        nodes.push({ op: 'Concat', inputs: values, outputs: [n.name], attributes: { axis: NCHW_AXIS[axis]! } });
        break;
      }
      default:
        throw new Error(`${n.name}: TF op ${n.op} is not converted to ONNX`);
    }
    strides.set(n.name, stride(first!));
  };

  // Depth first from the outputs: ONNX wants nodes in an order where every input comes first.
  const done = new Set<string>();
  const visit = (name: string) => {
    if (done.has(name)) return;
    done.add(name);
    const n = byName.get(name);
    if (!n) throw new Error(`no node ${name}`);
    for (const input of valueInputs(n)) visit(input);
    emit(n);
  };
  const outputs = conversion.outputs.map((name) => {
    visit(name);
    const nhwc = `${name}/nhwc`;
    nodes.push({ op: 'Transpose', inputs: [name], outputs: [nhwc], attributes: { perm: NHWC_FROM_NCHW } });
    return nhwc;
  });
  // The graph's outputs keep their TF.js names; the NCHW values before the transposes are renamed.
  const renamed = new Map(conversion.outputs.map((name, i) => [outputs[i]!, name]));
  const internal = new Map(conversion.outputs.map((name) => [name, `${name}/nchw`]));
  const rename = (v: string) => renamed.get(v) ?? internal.get(v) ?? v;
  return writeOnnxModel({
    name: 'centernet',
    producer: 'pixvote',
    opset: OPSET,
    nodes: nodes.map((n) => ({ ...n, inputs: n.inputs.map(rename), outputs: n.outputs.map(rename) })),
    initializers,
    inputs: [{ name: 'images', shape: ['N', 'H', 'W', 3] }],
    outputs: conversion.outputs.map((name) => ({ name })),
  });
}
