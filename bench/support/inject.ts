/**
 * Drives a Node request handler with in-memory requests and responses: no sockets, no load generator, so
 * the CPU it takes is the handler's own (Koa, middleware, routes, Node's HTTP framing) and can be compared
 * between two handlers in the same process with little noise.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { Duplex } from 'node:stream';

type Handler = (req: IncomingMessage, res: ServerResponse) => unknown;

/** A socket that accepts and counts what is written, keeping the first bytes of it. */
class MemorySocket extends Duplex {
  remoteAddress = '127.0.0.1';
  encrypted = false;
  bytes = 0;
  head = '';
  readonly keep: boolean;
  constructor(keep: boolean) {
    super();
    this.keep = keep;
  }
  override _read(): void {}
  override _write(chunk: Buffer | string, _enc: BufferEncoding, cb: () => void): void {
    this.#take(chunk);
    cb();
  }
  override _writev(chunks: Array<{ chunk: Buffer | string }>, cb: () => void): void {
    for (const c of chunks) this.#take(c.chunk);
    cb();
  }
  #take(chunk: Buffer | string): void {
    this.bytes += chunk.length;
    if (this.keep && this.head.length < 64 * 1024) this.head += chunk.toString();
  }
  setTimeout(): this {
    return this;
  }
  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
}

export interface Injected {
  status: number;
  /** Bytes written: status line, headers and body. */
  bytes: number;
  /** The body as text (up to 64 KiB of the whole response; empty when not kept). */
  body: string;
}

export function inject(
  handler: Handler,
  req: { method?: string; path: string; headers?: Record<string, string>; body?: string },
  keepBody = true,
  /** The response class the server would make (the app's: ListedHeadersResponse, src/server.ts). */
  Response: typeof ServerResponse = ServerResponse,
): Promise<Injected> {
  return new Promise((resolve) => {
    const socket = new MemorySocket(keepBody);
    const message = new IncomingMessage(socket as never);
    message.method = req.method ?? 'GET';
    message.url = req.path;
    message.httpVersionMajor = 1;
    message.httpVersionMinor = 1;
    message.httpVersion = '1.1';
    message.headers = { host: 'localhost', ...req.headers };
    if (req.body !== undefined) {
      message.headers['content-type'] ??= 'application/json';
      message.headers['content-length'] = String(Buffer.byteLength(req.body));
      message.push(req.body);
    }
    message.rawHeaders = Object.entries(message.headers).flat() as string[];
    message.complete = true;
    message.push(null);
    const res = new Response(message);
    res.assignSocket(socket as never);
    res.on('finish', () =>
      setImmediate(() =>
        resolve({
          status: res.statusCode,
          bytes: socket.bytes,
          body: socket.head.slice(socket.head.indexOf('\r\n\r\n') + 4),
        }),
      ),
    );
    handler(message, res);
  });
}

/** CPU time per request of each handler, µs, in interleaved rounds (one sample per subject and round). */
export async function cpuPerRequest(
  subjects: Record<
    string,
    { handler: Handler; path: string; response?: typeof ServerResponse; headers?: Record<string, string> }
  >,
  opts: { rounds: number; requests: number },
): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = {};
  for (const { handler, path, response, headers } of Object.values(subjects))
    for (let i = 0; i < opts.requests; i++) await inject(handler, { path, headers }, false, response);
  for (let r = 0; r < opts.rounds; r++) {
    for (const [name, { handler, path, response, headers }] of Object.entries(subjects)) {
      const before = process.cpuUsage();
      for (let i = 0; i < opts.requests; i++) await inject(handler, { path, headers }, false, response);
      const used = process.cpuUsage(before);
      (out[name] ??= []).push((used.user + used.system) / opts.requests);
    }
  }
  return out;
}
