/**
 * Just enough of the ONNX protobuf schema (github.com/onnx/onnx, onnx/onnx.proto) to write a model: a
 * graph of nodes with attributes, float initializers and typed inputs and outputs. Writing only, so no
 * protobuf library: every field below is a varint, a fixed 32-bit float or a length-delimited blob.
 */

/** Protobuf wire types. */
const VARINT = 0;
const FIXED32 = 5;
const BYTES = 2;

/** A protobuf message being written, field by field. */
class Message {
  private readonly chunks: Uint8Array[] = [];
  private length = 0;

  private push(bytes: Uint8Array): this {
    this.chunks.push(bytes);
    this.length += bytes.length;
    return this;
  }

  private varint(value: number): this {
    if (!Number.isSafeInteger(value) || value < 0) throw new Error(`cannot write ${value} as a protobuf varint`);
    const out: number[] = [];
    let v = value;
    while (v >= 0x80) {
      out.push((v % 0x80) | 0x80);
      v = Math.floor(v / 0x80);
    }
    out.push(v);
    return this.push(Uint8Array.from(out));
  }

  private key(field: number, wire: number): this {
    return this.varint(field * 8 + wire);
  }

  int(field: number, value: number): this {
    return this.key(field, VARINT).varint(value);
  }

  ints(field: number, values: readonly number[]): this {
    for (const value of values) this.int(field, value);
    return this;
  }

  float(field: number, value: number): this {
    const bytes = new Uint8Array(4);
    new DataView(bytes.buffer).setFloat32(0, value, true);
    return this.key(field, FIXED32).push(bytes);
  }

  bytes(field: number, value: Uint8Array): this {
    return this.key(field, BYTES).varint(value.length).push(value);
  }

  string(field: number, value: string): this {
    return this.bytes(field, new TextEncoder().encode(value));
  }

  message(field: number, value: Message): this {
    return this.bytes(field, value.finish());
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const chunk of this.chunks) {
      out.set(chunk, at);
      at += chunk.length;
    }
    return out;
  }
}

/** An attribute value: an integer, a float, a string, or a list of integers. */
export type AttributeValue = number | { float: number } | string | readonly number[];

export interface OnnxNode {
  op: string;
  inputs: readonly string[];
  outputs: readonly string[];
  name?: string;
  attributes?: Record<string, AttributeValue>;
}

export interface OnnxInitializer {
  name: string;
  dims: readonly number[];
  /** FLOAT data, or INT64 written from safe integers. */
  data: Float32Array | { int64: readonly number[] };
}

export interface OnnxValue {
  name: string;
  /** Fixed sizes, or names of free dimensions; omitted: any shape. */
  shape?: ReadonlyArray<number | string>;
}

export interface OnnxGraph {
  name: string;
  nodes: readonly OnnxNode[];
  initializers: readonly OnnxInitializer[];
  inputs: readonly OnnxValue[];
  outputs: readonly OnnxValue[];
  /** Default-domain operator set. */
  opset: number;
  producer: string;
}

const DATA_TYPE = { FLOAT: 1, INT64: 7 } as const;
const ATTRIBUTE_TYPE = { FLOAT: 1, INT: 2, STRING: 3, INTS: 7 } as const;
/** IR version 8: ONNX 1.10+, which opset 13 needs at least (IR 7). */
const IR_VERSION = 8;

function attribute(name: string, value: AttributeValue): Message {
  const out = new Message().string(1, name);
  if (typeof value === 'number') return out.int(20, ATTRIBUTE_TYPE.INT).int(3, value);
  if (typeof value === 'string') return out.int(20, ATTRIBUTE_TYPE.STRING).string(4, value);
  if ('float' in value) return out.int(20, ATTRIBUTE_TYPE.FLOAT).float(2, value.float);
  return out.int(20, ATTRIBUTE_TYPE.INTS).ints(8, value);
}

function node(n: OnnxNode): Message {
  const out = new Message();
  for (const input of n.inputs) out.string(1, input);
  for (const output of n.outputs) out.string(2, output);
  if (n.name) out.string(3, n.name);
  out.string(4, n.op);
  for (const [name, value] of Object.entries(n.attributes ?? {})) out.message(5, attribute(name, value));
  return out;
}

function initializer(init: OnnxInitializer): Message {
  const out = new Message().ints(1, init.dims);
  if (init.data instanceof Float32Array) {
    const raw = new Uint8Array(init.data.length * 4);
    const view = new DataView(raw.buffer);
    init.data.forEach((v, i) => view.setFloat32(i * 4, v, true));
    return out.int(2, DATA_TYPE.FLOAT).string(8, init.name).bytes(9, raw);
  }
  const raw = new Uint8Array(init.data.int64.length * 8);
  const view = new DataView(raw.buffer);
  init.data.int64.forEach((v, i) => view.setBigInt64(i * 8, BigInt(v), true));
  return out.int(2, DATA_TYPE.INT64).string(8, init.name).bytes(9, raw);
}

function floatValue(value: OnnxValue): Message {
  const tensorType = new Message().int(1, DATA_TYPE.FLOAT);
  if (value.shape) {
    const shape = new Message();
    for (const dim of value.shape) {
      shape.message(1, typeof dim === 'number' ? new Message().int(1, dim) : new Message().string(2, dim));
    }
    tensorType.message(2, shape);
  }
  return new Message().string(1, value.name).message(2, new Message().message(1, tensorType));
}

/** The serialized ModelProto of `graph`, as onnxruntime's InferenceSession.create takes it. */
export function writeOnnxModel(graph: OnnxGraph): Uint8Array {
  const g = new Message();
  for (const n of graph.nodes) g.message(1, node(n));
  g.string(2, graph.name);
  for (const init of graph.initializers) g.message(5, initializer(init));
  for (const input of graph.inputs) g.message(11, floatValue(input));
  for (const output of graph.outputs) g.message(12, floatValue(output));
  return new Message()
    .int(1, IR_VERSION)
    .string(2, graph.producer)
    .message(7, g)
    .message(8, new Message().string(1, '').int(2, graph.opset))
    .finish();
}
