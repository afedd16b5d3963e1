/**
 * A small closed-loop HTTP load generator on undici: `connections` keep-alive connections, each sending its
 * next request as soon as the previous answer is read. Cheap enough per request that one core drives a
 * Koa hello-world; the benchmarks check the server side was the one saturated (server CPU per request).
 */
import { Pool } from 'undici';
import { quantile } from './stats.ts';

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
}

export interface HttpResponse {
  status: number;
  /** The body as text when `keepBodies` is set, else null (it was read and discarded). */
  body: string | null;
}

export interface LoadOptions {
  /** The i-th request to send, or null when there are no more. */
  next(i: number): HttpRequest | null;
  /** Stop issuing new requests after this many ms (in-flight ones finish). */
  durationMs?: number;
  keepBodies?: boolean;
  onResponse?(res: HttpResponse, req: HttpRequest, i: number): void;
}

export interface LoadResult {
  completed: number;
  elapsedMs: number;
  perSecond: number;
  /** Per request, ms, in completion order. */
  latencies: number[];
  p50: number;
  p95: number;
  statuses: Record<number, number>;
}

export class LoadClient {
  readonly origin: string;
  readonly connections: number;
  readonly #pool: Pool;

  constructor(origin: string, connections: number) {
    this.origin = origin;
    this.connections = connections;
    this.#pool = new Pool(origin, {
      connections,
      pipelining: 1,
      keepAliveTimeout: 60_000,
      bodyTimeout: 120_000,
      headersTimeout: 120_000,
    });
  }

  /** One request, body as text. */
  async send(req: HttpRequest): Promise<{ status: number; body: string; json<T = any>(): T }> {
    const res = await this.#pool.request({
      method: req.method,
      path: req.path,
      headers: req.headers ?? {},
      body: req.body ?? null,
    });
    const body = await res.body.text();
    return { status: res.statusCode, body, json: () => JSON.parse(body) };
  }

  /** One request whose body is read and thrown away (a flooding client does nothing with it): its status. */
  async status(req: HttpRequest): Promise<number> {
    const res = await this.#pool.request({
      method: req.method,
      path: req.path,
      headers: req.headers ?? {},
      body: req.body ?? null,
    });
    await res.body.dump({ limit: 2 ** 30 });
    return res.statusCode;
  }

  /** One request, its body counted as it came on the wire (compressed bodies are not decoded). */
  async sendRaw(req: HttpRequest): Promise<{ status: number; bytes: number }> {
    const res = await this.#pool.request({
      method: req.method,
      path: req.path,
      headers: req.headers ?? {},
      body: req.body ?? null,
    });
    const bytes = (await res.body.arrayBuffer()).byteLength;
    return { status: res.statusCode, bytes };
  }

  /** Sends requests from `next` over all connections until it returns null or the duration is over. */
  async run(opts: LoadOptions): Promise<LoadResult> {
    const latencies: number[] = [];
    const statuses: Record<number, number> = {};
    let issued = 0;
    const started = performance.now();
    const deadline = opts.durationMs === undefined ? Infinity : started + opts.durationMs;
    const lane = async () => {
      while (performance.now() < deadline) {
        const i = issued++;
        const req = opts.next(i);
        if (!req) return;
        const t0 = performance.now();
        const res = await this.#pool.request({
          method: req.method,
          path: req.path,
          headers: req.headers ?? {},
          body: req.body ?? null,
        });
        let body: string | null = null;
        if (opts.keepBodies) body = await res.body.text();
        else await res.body.dump({ limit: 2 ** 30 });
        latencies.push(performance.now() - t0);
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        opts.onResponse?.({ status: res.statusCode, body }, req, i);
      }
    };
    await Promise.all(Array.from({ length: this.connections }, lane));
    const elapsedMs = performance.now() - started;
    return {
      completed: latencies.length,
      elapsedMs,
      perSecond: (latencies.length * 1000) / elapsedMs,
      latencies,
      p50: quantile(latencies, 0.5),
      p95: quantile(latencies, 0.95),
      statuses,
    };
  }

  close(): Promise<void> {
    return this.#pool.close();
  }
}

/** Throws unless every response had one of the expected statuses, naming what came instead. */
export function expectStatuses(result: LoadResult, expected: number[], what: string): void {
  const bad = Object.entries(result.statuses).filter(([s]) => !expected.includes(Number(s)));
  if (bad.length)
    throw new Error(
      `${what}: expected only HTTP ${expected.join('/')} but received ${bad.map(([s, n]) => `${n} × ${s}`).join(', ')}`,
    );
}

/** A multipart/form-data body with text fields and one file, built once so that sending it costs nothing. */
export function multipart(
  fields: Record<string, string>,
  file: { name: string; type: string; bytes: Uint8Array },
): { body: Buffer; contentType: string } {
  const boundary = `----pixvote-bench-${Math.random().toString(16).slice(2)}`;
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  }
  parts.push(
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\n` +
        `Content-Type: ${file.type}\r\n\r\n`,
    ),
  );
  parts.push(Buffer.from(file.bytes.buffer, file.bytes.byteOffset, file.bytes.byteLength));
  parts.push(Buffer.from(`\r\n--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}
