import net from 'node:net';
import tls from 'node:tls';
import { lookup as dnsLookup } from 'node:dns/promises';
import type { buildConnector } from 'undici';
import { errors } from '../domain/errors.ts';
import { withArticle } from './address-policy.ts';

/** Resolves a host name to every address it has. The DNS seam: tests inject one to simulate rebinding. */
export type Resolver = (hostname: string) => Promise<ReadonlyArray<{ address: string }>>;

/** `isForbiddenAddress` or a stand-in with the same contract (reason string, or null when allowed). */
export type AddressPolicy = (ip: string) => string | null;

export interface GuardOptions {
  allowPrivate: boolean;
  policy: AddressPolicy;
  resolve: Resolver;
  /** Aborts DNS, TCP and TLS of a pending connection (the overall fetch deadline). */
  signal: AbortSignal;
}

/** The production resolver: the system resolver (getaddrinfo), every address. */
export const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true });

/**
 * An undici connector that only ever connects to an address the policy allows.
 *
 * 1. The host is turned into IP addresses once — literals as they are, names through `resolve` — and forbidden ones
 *    are dropped before dialling; the TCP connection is made to that IP, so nothing can re-resolve it in between.
 * 2. Right after the TCP handshake, before a byte (not even a TLS ClientHello) is written, `socket.remoteAddress`
 *    is checked again; a forbidden peer gets the socket destroyed.
 * Every connection of every redirect hop goes through here, so DNS rebinding between hops is covered too.
 */
export function guardedConnector(guard: GuardOptions): buildConnector.connector {
  return function guardedConnect(options, callback) {
    connectGuarded(options, guard).then(
      (socket) => callback(null, socket),
      (err: Error) => callback(err, null),
    );
  };
}

async function connectGuarded(options: buildConnector.Options, guard: GuardOptions): Promise<net.Socket> {
  // undici passes IPv6 literals without brackets.
  const { hostname, protocol } = options;
  const port = Number(options.port) || (protocol === 'https:' ? 443 : 80);
  const literal = net.isIP(hostname) !== 0;
  const candidates = literal ? [hostname] : await resolveAll(hostname, guard);

  const allowed = guard.allowPrivate ? candidates : candidates.filter((ip) => guard.policy(ip) === null);
  if (allowed.length === 0) {
    const first = candidates[0] as string;
    throw literal ? blockedLiteral(first, guard.policy(first) ?? 'forbidden') : hostNotPublic();
  }

  const socket = await dialFirst(allowed, port, guard.signal);
  const remote = socket.remoteAddress ?? '';
  const reason = guard.allowPrivate ? null : guard.policy(remote);
  if (reason !== null) {
    socket.destroy();
    throw literal ? blockedLiteral(remote, reason) : hostNotPublic();
  }
  return protocol === 'https:' ? startTls(socket, hostname, guard.signal) : socket;
}

async function resolveAll(hostname: string, guard: GuardOptions): Promise<string[]> {
  let records: ReadonlyArray<{ address: string }>;
  try {
    records = await untilAborted(guard.resolve(hostname), guard.signal);
  } catch (err) {
    if (guard.signal.aborted) throw err;
    throw hostNotPublic();
  }
  if (records.length === 0) throw hostNotPublic();
  return records.map((r) => r.address);
}

/** Tries the allowed addresses in order; the first completed handshake wins. */
async function dialFirst(ips: readonly string[], port: number, signal: AbortSignal): Promise<net.Socket> {
  for (const ip of ips) {
    try {
      return await dial(ip, port, signal);
    } catch (err) {
      if (signal.aborted) throw err;
    }
  }
  throw errors.fetchFailed('image_url could not be reached');
}

function dial(ip: string, port: number, signal: AbortSignal): Promise<net.Socket> {
  return settleSocket(net.connect({ host: ip, port, noDelay: true }), 'connect', signal);
}

function startTls(socket: net.Socket, hostname: string, signal: AbortSignal): Promise<net.Socket> {
  const isIp = net.isIP(hostname) !== 0;
  const secure = tls.connect({
    socket,
    host: hostname,
    ...(isIp ? {} : { servername: hostname }),
    ALPNProtocols: ['http/1.1'],
  });
  return settleSocket(secure, 'secureConnect', signal).catch((err: unknown) => {
    socket.destroy();
    if (signal.aborted) throw err;
    throw errors.fetchFailed('image_url TLS handshake failed');
  });
}

/** Resolves with the socket on `event`, rejects (and destroys it) on error or abort. */
function settleSocket<S extends net.Socket>(socket: S, event: string, signal: AbortSignal): Promise<S> {
  return new Promise<S>((resolve, reject) => {
    const onAbort = () => fail(signal.reason);
    const cleanup = () => {
      signal.removeEventListener('abort', onAbort);
      socket.off(event, onOk);
      socket.off('error', fail);
    };
    const onOk = () => {
      cleanup();
      resolve(socket);
    };
    function fail(err: unknown) {
      cleanup();
      socket.destroy();
      reject(err);
    }
    if (signal.aborted) return fail(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    socket.once(event, onOk);
    socket.once('error', fail);
  });
}

function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * A host name gets one answer whether it resolves to nothing, to a forbidden address, or is found forbidden after
 * connecting: naming the address or its kind ("private", "loopback"), or telling "does not resolve" apart from
 * "resolves somewhere internal", would let a user map the service's internal DNS (`http://db.internal/` → 10.x.y.z).
 */
function hostNotPublic() {
  return errors.fetchFailed('image_url host does not resolve to a public address');
}

/** A literal address came from the URL itself, so naming it and its kind reveals nothing new. */
function blockedLiteral(ip: string, reason: string) {
  return errors.fetchFailed(`image_url resolves to ${ip}, ${withArticle(reason)} address`);
}
