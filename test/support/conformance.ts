/**
 * Checks a response against the OpenAPI document the server publishes: the operation exists (method + path
 * template), the status is documented, the body matches the documented schema for its media type, and the
 * documented headers are present (when required) and well-formed. The test client runs it on every reply.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { openApiDocument } from '../../src/gateway/openapi/openapi.document.ts';

// ajv-formats is CommonJS with a default export; under ESM interop the function sits on `.default`.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
) => void;

type Json = Record<string, any>;

export class ConformanceError extends Error {
  override name = 'ConformanceError';
}

interface Route {
  method: string;
  template: string;
  re: RegExp;
  statics: number;
  op: Json;
}

let state: { doc: Json; ajv: Ajv2020; routes: Route[]; compiled: Map<string, ValidateFunction> } | null = null;

function init() {
  if (state) return state;
  const doc = structuredClone(openApiDocument());
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, 'openapi.json');
  const routes: Route[] = [];
  for (const [template, item] of Object.entries(doc.paths as Json)) {
    const re = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`);
    for (const [method, op] of Object.entries(item as Json)) {
      routes.push({
        method: method.toUpperCase(),
        template,
        re,
        statics: template.split('/').filter((s) => s && !s.startsWith('{')).length,
        op,
      });
    }
  }
  // A literal segment wins over a parameter, as in the router.
  routes.sort((a, b) => b.statics - a.statics);
  state = { doc, ajv, routes, compiled: new Map() };
  return state;
}

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

function validator(ref: string): ValidateFunction {
  const s = init();
  let v = s.compiled.get(ref);
  if (!v) {
    v = s.ajv.compile({ $ref: `openapi.json#/${ref}` });
    s.compiled.set(ref, v);
  }
  return v;
}

const describeErrors = (v: ValidateFunction) =>
  (v.errors ?? [])
    .slice(0, 5)
    .map((e) => `${e.instancePath || '(root)'} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`)
    .join('; ');

function resolveHeader(h: Json): Json {
  if (!h.$ref) return h;
  return init().doc.components.headers[String(h.$ref).split('/').pop()!];
}

/** A header value as its schema reads it: integers are sent as digits. */
function headerValue(raw: string, schema: Json): unknown {
  return schema.type === 'integer' && /^-?\d+$/.test(raw) ? Number(raw) : raw;
}

export interface Observed {
  method: string;
  url: string;
  status: number;
  headers: Headers;
  text: string;
}

/** Throws a ConformanceError naming what differs from the document. */
export function checkConformance(r: Observed): void {
  const s = init();
  // The path as sent, not as a URL would resolve it (`..`, `\`): what the app routed.
  const pathname = r.url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '').split(/[?#]/)[0] || '/';
  const method = r.method.toUpperCase() === 'HEAD' ? 'GET' : r.method.toUpperCase();
  const where = `${r.method.toUpperCase()} ${pathname} → ${r.status}`;
  const route = s.routes.find((x) => x.method === method && x.re.test(pathname));
  if (!route)
    throw new ConformanceError(
      `${where}: no operation in the OpenAPI document (a deliberate probe passes { unchecked: 'why' })`,
    );
  const response = route.op.responses?.[String(r.status)] as Json | undefined;
  if (!response)
    throw new ConformanceError(
      `${where}: status ${r.status} is not documented for ${method} ${route.template} ` +
        `(documented: ${Object.keys(route.op.responses).join(', ')})`,
    );

  for (const [name, raw] of Object.entries(response.headers ?? {})) {
    const h = resolveHeader(raw as Json);
    const value = r.headers.get(name);
    if (value === null) {
      if (h.required) throw new ConformanceError(`${where}: required header ${name} is missing`);
      continue;
    }
    const v = s.ajv.compile(h.schema ?? {});
    if (!v(headerValue(value, h.schema ?? {})))
      throw new ConformanceError(`${where}: header ${name}: ${JSON.stringify(value)} ${describeErrors(v)}`);
  }

  const content = response.content as Json | undefined;
  if (!content || !Object.keys(content).length) {
    if (r.text.length && r.method.toUpperCase() !== 'HEAD')
      throw new ConformanceError(`${where}: documented without a body, but a body came: ${r.text.slice(0, 200)}`);
    return;
  }
  if (r.method.toUpperCase() === 'HEAD') return;
  const mediaType = (r.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (!(mediaType in content))
    throw new ConformanceError(
      `${where}: Content-Type ${mediaType || '(none)'} is not documented ` +
        `(documented: ${Object.keys(content).join(', ')})`,
    );
  if (mediaType !== 'application/json') return;
  let body: unknown;
  try {
    body = JSON.parse(r.text);
  } catch {
    throw new ConformanceError(`${where}: the body is not JSON: ${r.text.slice(0, 200)}`);
  }
  const v = validator(
    pointer(
      'paths',
      route.template,
      method.toLowerCase(),
      'responses',
      String(r.status),
      'content',
      mediaType,
      'schema',
    ),
  );
  if (!v(body))
    throw new ConformanceError(
      `${where}: body does not match the document: ${describeErrors(v)}\nbody: ${r.text.slice(0, 500)}`,
    );
}
