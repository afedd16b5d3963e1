/**
 * MAX_CONNECTIONS_PER_IP (API.md Operations): one client address holds at most `max` open connections; past
 * it a new one is refused. Without it one address could hold a thousand slow-reading connections for as long
 * as it liked.
 *
 * Counted per socket peer, keyed as the per-IP rate limits key a client (an IPv6 address by its /64). Behind a
 * proxy (TRUST_PROXY) the peer is the proxy: every client shares its count, so an operator raises the cap
 * there, or turns it off (0) and caps at the proxy. Per process: with PROCESSES=N each gateway counts the
 * connections it was handed, so one address may hold up to N × max in all.
 */
import { STATUS_CODES, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { clientIpKey } from './middleware/rate-limit.ts';
import { SECURITY_HEADERS } from './security-headers.ts';

/** A refused address is logged at most once per this, with the number of refusals the line stands for. */
export const REFUSAL_LOG_INTERVAL_MS = 60_000;

export interface ConnectionCapOptions {
  /** Open connections one client address may hold; 0 (or less): no cap. */
  max: number;
  log?: Logger | undefined;
  /** Called on every refusal (the metrics count them). */
  onRefused?: (() => void) | undefined;
  logIntervalMs?: number;
  now?: () => number;
}

const refused = new WeakSet<Socket>();

/** Whether this connection was refused by the cap: a request parsed from it before it closed is not served. */
export const isRefusedConnection = (socket: Socket): boolean => refused.has(socket);

/** The refusal: the contract's 503 `busy` body when it can still be written, then the connection closes. */
function refusal(max: number): string {
  const body = JSON.stringify({
    error: 'busy',
    message: `too many open connections from your address (at most ${max}); close some, or retry later`,
  });
  return [
    `HTTP/1.1 503 ${STATUS_CODES[503]}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Retry-After: 1',
    'Cache-Control: no-store',
    ...SECURITY_HEADERS.map(([name, value]) => `${name}: ${value}`),
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/** Counts the server's open connections per client address and refuses those past `max`. */
export function capConnectionsPerAddress(server: Server, opts: ConnectionCapOptions): void {
  const { max, log, onRefused } = opts;
  if (!(max > 0)) return;
  const interval = opts.logIntervalMs ?? REFUSAL_LOG_INTERVAL_MS;
  const now = opts.now ?? Date.now;
  const open = new Map<string, number>();
  /** Per refused address: when it was last logged, and the refusals since that line. */
  const logged = new Map<string, { at: number; since: number }>();
  const answer = refusal(max);

  const refuse = (socket: Socket, key: string) => {
    refused.add(socket);
    onRefused?.();
    // Written before the client sent anything (usually): its FIN follows, then the socket goes.
    socket.on('error', () => {});
    socket.once('finish', () => socket.destroy());
    socket.end(answer);
    setTimeout(() => socket.destroy(), 1000).unref();
    const t = now();
    const last = logged.get(key);
    if (last && t - last.at < interval) {
      last.since++;
      return;
    }
    if (logged.size >= 10_000) for (const [k, v] of logged) if (t - v.at >= interval) logged.delete(k);
    log?.warn(
      { address: key, open: open.get(key), max, refusedSinceLastLine: (last?.since ?? 0) + 1 },
      `connection refused: this client address holds MAX_CONNECTIONS_PER_IP (${max}) open connections ` +
        `(logged at most once per ${Math.round(interval / 1000)} s per address)`,
    );
    logged.set(key, { at: t, since: 0 });
  };

  server.on('connection', (socket: Socket) => {
    // Gone before it was handed over: nothing to count.
    if (socket.remoteAddress === undefined) return;
    const key = clientIpKey(socket.remoteAddress);
    const held = open.get(key) ?? 0;
    if (held >= max) return refuse(socket, key);
    open.set(key, held + 1);
    socket.once('close', () => {
      const left = (open.get(key) ?? 1) - 1;
      if (left > 0) open.set(key, left);
      else open.delete(key);
    });
  });
}
