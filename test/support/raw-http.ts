/**
 * HTTP over a bare TCP socket, for what fetch cannot send: malformed request lines, oversized headers, a
 * body longer than its Content-Length, headers alone with the body held back.
 */
import { connect, type Socket } from 'node:net';

export interface RawReply {
  status: number;
  /** Lower-cased names. */
  headers: Record<string, string>;
  text: string;
  /** The JSON body, when there is one. */
  body: any;
}

export interface RawConnection {
  socket: Socket;
  write(data: string | Buffer): void;
  /** The first complete response (headers, and a body of its Content-Length). */
  reply(): Promise<RawReply>;
  /** The first complete final response: interim ones (1xx) before it skipped, as an HTTP/1.1 client does. */
  finalReply(): Promise<RawReply>;
  /** Resolves when the server has closed the connection (end or close). */
  closed(): Promise<void>;
  /** Whether the server has closed it yet. */
  isClosed(): boolean;
}

export async function openRaw(url: string): Promise<RawConnection> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let received = Buffer.alloc(0);
  let closed = false;
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const w of waiters) w();
  };
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
    wake();
  });
  // The server may reset a connection it refused while this side still wrote: that is a close too.
  socket.on('error', () => {});
  const onClose = () => {
    closed = true;
    wake();
  };
  socket.once('end', onClose).once('close', onClose);

  const until = <T>(ready: () => T | undefined, what: string): Promise<T> =>
    new Promise((resolve, reject) => {
      const check = () => {
        const value = ready();
        if (value !== undefined) {
          waiters.delete(check);
          resolve(value);
        } else if (closed) {
          waiters.delete(check);
          reject(
            new Error(
              `connection closed before ${what}; ` +
                `received: ${JSON.stringify(received.toString('latin1').slice(0, 300))}`,
            ),
          );
        }
      };
      waiters.add(check);
      check();
    });

  const parse = (skipInterim = false): RawReply | undefined => {
    let from = 0;
    while (skipInterim && /^HTTP\/1\.[01] 1\d\d /.test(received.subarray(from, from + 13).toString('latin1'))) {
      const next = received.indexOf('\r\n\r\n', from);
      if (next < 0) return undefined;
      from = next + 4;
    }
    const end = received.indexOf('\r\n\r\n', from);
    if (end < 0) return undefined;
    const [statusLine, ...lines] = received.subarray(from, end).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const i = line.indexOf(':');
      headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    if (received.length < end + 4 + length) return undefined;
    const text = received.subarray(end + 4, end + 4 + length).toString('utf8');
    const json = (headers['content-type'] ?? '').includes('json');
    return { status: Number(statusLine!.split(' ')[1]), headers, text, body: json ? JSON.parse(text) : undefined };
  };

  return {
    socket,
    write: (data) => void socket.write(data),
    reply: () => until(() => parse(), 'a complete response'),
    finalReply: () => until(() => parse(true), 'a complete final response'),
    closed: () => (closed ? Promise.resolve() : new Promise<void>((resolve) => waiters.add(() => closed && resolve()))),
    isClosed: () => closed,
  };
}

/** A FormData as the bytes and Content-Type fetch would send. */
export async function encodeForm(form: FormData): Promise<{ body: Buffer; contentType: string }> {
  const req = new Request('http://localhost/', { method: 'POST', body: form });
  return { body: Buffer.from(await req.arrayBuffer()), contentType: req.headers.get('content-type')! };
}
