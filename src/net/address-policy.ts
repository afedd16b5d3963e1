import ipaddr from 'ipaddr.js';

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;

/** ipaddr.js range() names → the words an error message uses. Any range not listed here is blocked as "reserved". */
const V4_LABELS: Readonly<Record<string, string>> = {
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'carrier-grade NAT',
  private: 'private',
  reserved: 'reserved',
  as112: 'AS112',
  amt: 'AMT relay',
};

const V6_LABELS: Readonly<Record<string, string>> = {
  unspecified: 'unspecified',
  linkLocal: 'link-local',
  multicast: 'multicast',
  loopback: 'loopback',
  uniqueLocal: 'unique-local',
  deprecatedSiteLocal: 'site-local',
  discard: 'discard-only',
  rfc6145: 'IPv4-translated',
  teredo: 'Teredo',
  benchmarking: 'benchmarking',
  amt: 'AMT relay',
  as112v6: 'AS112',
  deprecatedOrchid: 'ORCHID',
  orchid2: 'ORCHID',
  segmentRouting: 'segment-routing',
  reserved: 'reserved',
};

// ipaddr.js files these under "reserved"; a more precise word makes the error message clearer.
const REFINED: ReadonlyArray<[string, [IPv4 | IPv6, number]]> = [
  ['documentation', ipaddr.parseCIDR('192.0.2.0/24')],
  ['documentation', ipaddr.parseCIDR('198.51.100.0/24')],
  ['documentation', ipaddr.parseCIDR('203.0.113.0/24')],
  ['benchmarking', ipaddr.parseCIDR('198.18.0.0/15')],
  ['documentation', ipaddr.parseCIDR('2001:db8::/32')],
  ['documentation', ipaddr.parseCIDR('3fff::/20')],
];

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

/**
 * Decides whether the fetcher may connect to `ip` (a plain IPv4 or IPv6 address, as a socket or resolver reports it).
 * Returns the reason it is forbidden ("loopback", "IPv4-mapped private", …) or null when it is a public unicast
 * address. Anything unparseable is forbidden: this is an allow-list of "public unicast", never a deny-list.
 */
export function isForbiddenAddress(ip: string): string | null {
  let addr: IPv4 | IPv6;
  try {
    addr = ipaddr.parse(ip.includes(':') ? canonicalV6(ip) : ip);
  } catch {
    return 'unparseable';
  }
  return addr.kind() === 'ipv4' ? checkV4(addr as IPv4) : checkV6(addr as IPv6);
}

/**
 * ipaddr.js reads "::a.b.c.d" (IPv4-compatible) as "::ffff:a.b.c.d" (IPv4-mapped), so IPv6 text is first put in
 * the WHATWG URL parser's canonical hex form. The zone index ("%eth0") does not change the range; drop it.
 */
function canonicalV6(ip: string): string {
  const hostname = new URL(`http://[${ip.split('%', 1)[0]}]/`).hostname;
  return hostname.slice(1, -1);
}

/** `reason` with its article, as a message says it: "an IPv4-mapped loopback", "a unique-local". */
export function withArticle(reason: string): string {
  return `${/^[aeiou]/i.test(reason) && !/^uni/i.test(reason) ? 'an' : 'a'} ${reason}`;
}

function checkV4(addr: IPv4): string | null {
  const range: string = addr.range();
  if (range === 'unicast') return null;
  return refine(addr) ?? V4_LABELS[range] ?? 'reserved';
}

function checkV6(addr: IPv6): string | null {
  const range: string = addr.range();
  switch (range) {
    case 'ipv4Mapped':
      return prefixed('IPv4-mapped', checkV4(addr.toIPv4Address()));
    case '6to4':
      return prefixed('6to4', checkV4(v4From(addr.parts[1], addr.parts[2])));
    case 'rfc6052':
      return checkNat64(addr);
    case 'unicast':
      break;
    default:
      return refine(addr) ?? V6_LABELS[range] ?? 'reserved';
  }
  // ipaddr.js has no range for ::/96, so ::7f00:1 would look "unicast".
  if (addr.match(IPV4_COMPATIBLE)) return 'IPv4-compatible';
  // Only 2000::/3 is allocated for global unicast; everything else is not reachable on the internet.
  if (!addr.match(GLOBAL_UNICAST_V6)) return 'non-global';
  return null;
}

/**
 * NAT64 addresses reach the IPv4 address embedded in them. The well-known 64:ff9b::/96 puts it in the last 32 bits.
 * The local-use 64:ff9b:1::/48 (RFC 8215) is operator-specific: where the IPv4 address sits depends on the prefix
 * length the operator chose, and it only routes inside that network, so it is refused outright.
 */
function checkNat64(addr: IPv6): string | null {
  if (!addr.match(NAT64_WELL_KNOWN)) return 'local-use NAT64';
  return prefixed('NAT64', checkV4(v4From(addr.parts[6], addr.parts[7])));
}

function refine(addr: IPv4 | IPv6): string | null {
  for (const [label, cidr] of REFINED) {
    if (addr.kind() === cidr[0].kind() && addr.match(cidr)) return label;
  }
  return null;
}

function v4From(hi: number | undefined, lo: number | undefined): IPv4 {
  const h = hi ?? 0;
  const l = lo ?? 0;
  return new ipaddr.IPv4([h >> 8, h & 0xff, l >> 8, l & 0xff]);
}

function prefixed(prefix: string, reason: string | null): string | null {
  return reason === null ? null : `${prefix} ${reason}`;
}
