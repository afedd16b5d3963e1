/**
 * A webhook receiver for tests: a local HTTP server that records every request (headers and raw body) by path, and
 * answers 204, or 500 to the first `failFirst(path, n)` requests of a path (or every one while `down(path)`).
 * Signatures are checked by the tests with the specification's own library (`standardwebhooks`), not here.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { pollUntil } from './budget.ts';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The answer it got. */
  status: number;
}

export interface Receiver {
  url: string;
  all: Received[];
  /** Requests to `path` that were answered 2xx, in arrival order. */
  delivered(path: string): Received[];
  failFirst(path: string, n: number): void;
  down(path: string, isDown: boolean): void;
  close(): Promise<void>;
}

export async function startReceiver(
  opts: {
    delayMs?: number;
    /** Runs before each answer (which waits for it): a test may kill the sender while a delivery is in flight. */
    beforeAnswer?: (r: Omit<Received, 'status'>) => Promise<void> | void;
  } = {},
): Promise<Receiver> {
  const all: Received[] = [];
  const failures = new Map<string, number>();
  const downPaths = new Set<string>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const left = failures.get(path) ?? 0;
      const fail = downPaths.has(path) || left > 0;
      if (left > 0) failures.set(path, left - 1);
      const status = fail ? 500 : 204;
      const body = Buffer.concat(chunks).toString('utf8');
      const answer = async () => {
        await opts.beforeAnswer?.({ path, headers: req.headers, body });
        all.push({ path, headers: req.headers, body, status });
        if (!res.destroyed) res.writeHead(status).end();
      };
      setTimeout(() => void answer(), opts.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    all,
    delivered: (path) => all.filter((r) => r.path === path && r.status < 300),
    failFirst: (path, n) => void failures.set(path, n),
    down: (path, isDown) => void (isDown ? downPaths.add(path) : downPaths.delete(path)),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The payload, verified with `standardwebhooks` against `secret` (throws when the signature does not match). */
export function verified(secret: string, r: Received): { type: string; timestamp: string; data: any } {
  const headers = {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  };
  return new Webhook(secret).verify(r.body, headers) as { type: string; timestamp: string; data: any };
}

/** Polls `check` until it returns a truthy value (or throws after `ms`, stretched by the machine's load). */
export function eventually<T>(check: () => T | Promise<T>, ms = 15_000, what = 'the condition'): Promise<T> {
  return pollUntil(check, what, ms);
}
