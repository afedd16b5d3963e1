/**
 * What the gateway records of a client as evidence for the vote-ring detector (issue 45, docs/vote-rings.md): its
 * network and its user-agent family, at sign-up and at each vote. The address is the one the rate limits use
 * (`ctx.ip`: the socket peer, or the X-Forwarded-For client under TRUST_PROXY); it is cut to its network (IPv4 /24,
 * IPv6 /48; an IPv4-mapped IPv6 address counts as IPv4) and only the keyed hash of that network leaves this module
 * (HMAC-SHA256 with a key derived from the server secret, 128 bits kept): equal networks compare equal, nothing
 * names an address, and without the key no one can tell which network a hash is.
 */
import { createHmac } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import type { ClientFacts } from '../domain/client-facts.ts';

/** The user-agent families the detector compares (`other`: a user agent none of these; null: none sent). */
export const UA_FAMILIES = ['edge', 'chrome', 'firefox', 'safari', 'curl', 'python', 'go', 'node', 'other'] as const;
export type UaFamily = (typeof UA_FAMILIES)[number];

/**
 * The network of an address as text: `a.b.c.0/24` for IPv4 (a mapped IPv6 address included), the /48 prefix for
 * IPv6 (`2001:db8:1::/48`); null for anything that is not an address (IPv4 only in four-part decimal form).
 */
export function networkOf(ip: string): string | null {
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  if (ipaddr.IPv4.isValidFourPartDecimal(ip)) addr = ipaddr.IPv4.parse(ip);
  else if (ipaddr.IPv6.isValid(ip)) addr = ipaddr.IPv6.parse(ip);
  else return null;
  if (addr instanceof ipaddr.IPv6 && addr.isIPv4MappedAddress()) addr = addr.toIPv4Address();
  if (addr instanceof ipaddr.IPv4) {
    const [a, b, c] = addr.octets;
    return `${a}.${b}.${c}.0/24`;
  }
  const [p0, p1, p2] = addr.parts;
  return `${new ipaddr.IPv6([p0!, p1!, p2!, 0, 0, 0, 0, 0]).toString()}/48`;
}

/** Read no further than this into a user agent (real ones are a few hundred characters). */
const UA_READ = 512;

/** First match wins: Edge and Chrome before Safari (their agents say "Safari" too), browsers before libraries. */
const UA_RULES: ReadonlyArray<[RegExp, UaFamily]> = [
  [/\bEdg(?:e|A|iOS)?\//, 'edge'],
  [/\b(?:Chrome|Chromium|CriOS)\//, 'chrome'],
  [/\b(?:Firefox|FxiOS)\//, 'firefox'],
  [/\bSafari\//, 'safari'],
  [/^curl\//i, 'curl'],
  [/python|aiohttp|httpx|urllib|\bscrapy\b/i, 'python'],
  [/^Go-http-client\/|^Go\b/i, 'go'],
  [/^node\b|^undici\b|node-fetch|axios|^got\b|^pixvote\b/i, 'node'],
];

/** The family of a user agent (null when none was sent). */
export function uaFamily(userAgent: string | undefined | null): UaFamily | null {
  const ua = (userAgent ?? '').slice(0, UA_READ).trim();
  if (!ua) return null;
  for (const [re, family] of UA_RULES) if (re.test(ua)) return family;
  return 'other';
}

/** Turns what a request shows into the facts kept: the keyed network hash and the user-agent family. */
export class ClientFactsReader {
  readonly #key: Buffer;

  /** `secret`: the server secret (JWT_SECRET); the network key is derived from it, never the secret itself. */
  constructor(secret: string) {
    this.#key = createHmac('sha256', secret).update('pixvote:net').digest();
  }

  /** The keyed hash of a network (32 hex digits), or null when the address is not one. */
  netHash(ip: string): string | null {
    const net = networkOf(ip);
    return net === null ? null : createHmac('sha256', this.#key).update(net).digest('hex').slice(0, 32);
  }

  of(ctx: { ip: string; get(field: string): string }): ClientFacts {
    return { net: this.netHash(ctx.ip), ua: uaFamily(ctx.get('user-agent')) };
  }
}
