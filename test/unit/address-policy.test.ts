import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isForbiddenAddress } from '../../src/net/address-policy.ts';

/** [address, expected reason]; null means the fetcher may connect to it. */
const IPV4: ReadonlyArray<[string, string | null]> = [
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['127.0.0.2', 'loopback'],
  ['10.0.0.1', 'private'],
  ['10.255.255.255', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.168.1.1', 'private'],
  ['169.254.169.254', 'link-local'],
  ['169.254.0.1', 'link-local'],
  ['100.64.0.1', 'carrier-grade NAT'],
  ['100.127.255.255', 'carrier-grade NAT'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['255.255.255.255', 'broadcast'],
  ['192.0.0.8', 'reserved'],
  ['192.0.2.1', 'documentation'],
  ['198.51.100.7', 'documentation'],
  ['203.0.113.9', 'documentation'],
  ['198.18.0.1', 'benchmarking'],
  ['198.19.255.255', 'benchmarking'],
  ['240.0.0.1', 'reserved'],
  ['192.88.99.1', 'reserved'],
  // public neighbours of the ranges above
  ['8.8.8.8', null],
  ['1.1.1.1', null],
  ['93.184.216.34', null],
  ['11.0.0.1', null],
  ['172.15.255.255', null],
  ['172.32.0.1', null],
  ['192.167.255.255', null],
  ['192.169.0.1', null],
  ['100.63.255.255', null],
  ['100.128.0.0', null],
  ['169.253.255.255', null],
  ['198.17.255.255', null],
  ['198.20.0.1', null],
  ['223.255.255.255', null],
];

const IPV6: ReadonlyArray<[string, string | null]> = [
  ['::1', 'loopback'],
  ['::', 'unspecified'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['febf::1', 'link-local'],
  ['fc00::1', 'unique-local'],
  ['fd12:3456:789a::1', 'unique-local'],
  ['ff02::1', 'multicast'],
  ['ff05::2', 'multicast'],
  ['fec0::1', 'site-local'],
  ['2001:db8::1', 'documentation'],
  ['3fff::1', 'documentation'],
  ['2001::1', 'Teredo'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
  ['2001:2::1', 'benchmarking'],
  ['2001:10::1', 'ORCHID'],
  ['100::1', 'discard-only'],
  ['5f00::1', 'segment-routing'],
  ['4000::1', 'non-global'],
  ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
  ['::ffff:7f00:1', 'IPv4-mapped loopback'],
  ['::ffff:10.0.0.1', 'IPv4-mapped private'],
  ['::ffff:169.254.169.254', 'IPv4-mapped link-local'],
  ['::ffff:0.0.0.0', 'IPv4-mapped unspecified'],
  ['::127.0.0.1', 'IPv4-compatible'],
  ['::8.8.8.8', 'IPv4-compatible'],
  ['::ffff:0:127.0.0.1', 'IPv4-translated'],
  ['64:ff9b::7f00:1', 'NAT64 loopback'],
  ['64:ff9b::127.0.0.1', 'NAT64 loopback'],
  ['64:ff9b::a00:1', 'NAT64 private'],
  ['64:ff9b::c0a8:101', 'NAT64 private'],
  ['64:ff9b::a9fe:a9fe', 'NAT64 link-local'],
  ['64:ff9b:1::7f00:1', 'local-use NAT64'],
  ['64:ff9b:1::808:808', 'local-use NAT64'],
  ['2002:7f00:1::', '6to4 loopback'],
  ['2002:a00:1::1', '6to4 private'],
  ['2002:c0a8:101::1', '6to4 private'],
  ['2002:a9fe:a9fe::', '6to4 link-local'],
  // public
  ['2606:4700:4700::1111', null],
  ['2001:4860:4860::8888', null],
  ['2a00:1450:4001:80b::200e', null],
  ['2400:cb00::1', null],
  ['::ffff:8.8.8.8', null],
  ['64:ff9b::808:808', null],
  ['2002:808:808::1', null],
];

describe('isForbiddenAddress', () => {
  describe('IPv4', () => {
    for (const [ip, reason] of IPV4) {
      it(`${ip} → ${reason ?? 'allowed'}`, () => assert.equal(isForbiddenAddress(ip), reason));
    }
  });

  describe('IPv6', () => {
    for (const [ip, reason] of IPV6) {
      it(`${ip} → ${reason ?? 'allowed'}`, () => assert.equal(isForbiddenAddress(ip), reason));
    }
  });

  it('anything that is not an address is forbidden (fails closed)', () => {
    for (const junk of ['', 'localhost', 'example.com', '::ffff::1::', '1.2.3.4.5', '[::1]']) {
      assert.equal(isForbiddenAddress(junk), 'unparseable', junk);
    }
  });
});

/**
 * Property-based (fast-check), against an oracle written from IANA's IPv4 Special-Purpose Address Registry rather
 * than from ipaddr.js: every IPv4 address is refused exactly when the registry (or multicast, or the reserved
 * 240/4) sets it apart from the public internet, and so is every IPv6 address that carries it (IPv4-mapped,
 * NAT64's well-known prefix, 6to4), while the IPv6 wrappings that are never public (IPv4-compatible, IPv4-translated)
 * are refused whatever they carry. Addresses are drawn at random and at each range's edges, where an off-by-one
 * hides.
 */
describe('isForbiddenAddress against the registry (fast-check)', () => {
  const v4 = (s: string) => s.split('.').reduce((n, p) => n * 256 + Number(p), 0);
  const SPECIAL: ReadonlyArray<[string, number]> = [
    ['0.0.0.0', 8],
    ['10.0.0.0', 8],
    ['100.64.0.0', 10],
    ['127.0.0.0', 8],
    ['169.254.0.0', 16],
    ['172.16.0.0', 12],
    ['192.0.0.0', 24],
    ['192.0.2.0', 24],
    ['192.31.196.0', 24],
    ['192.52.193.0', 24],
    ['192.88.99.0', 24],
    ['192.168.0.0', 16],
    ['192.175.48.0', 24],
    ['198.18.0.0', 15],
    ['198.51.100.0', 24],
    ['203.0.113.0', 24],
    ['224.0.0.0', 4],
    ['240.0.0.0', 4],
  ];
  const ranges = SPECIAL.map(([base, bits]) => ({ first: v4(base), size: 2 ** (32 - bits) }));
  const special = (n: number) => ranges.some((r) => n >= r.first && n < r.first + r.size);
  const dotted = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
  const hex = (n: number) => `${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  const address = fc.oneof(
    fc.integer({ min: 0, max: 0xffffffff }),
    fc
      .tuple(fc.constantFrom(...ranges), fc.constantFrom(-1, 0, 1, -2))
      .map(([r, at]) => (at < 0 ? r.first + r.size + at + 1 : r.first + at - 1))
      .filter((n) => n >= 0 && n <= 0xffffffff),
  );

  it('an IPv4 address, and IPv6 that carries it, is refused exactly when the registry sets it apart', () => {
    fc.assert(
      fc.property(address, (n) => {
        const refused = special(n);
        const ip = dotted(n);
        assert.equal(isForbiddenAddress(ip) !== null, refused, ip);
        for (const wrapped of [`::ffff:${ip}`, `::ffff:${hex(n)}`, `64:ff9b::${ip}`, `2002:${hex(n)}::1`])
          assert.equal(isForbiddenAddress(wrapped) !== null, refused, wrapped);
        for (const never of [`::${ip}`, `::ffff:0:${ip}`]) assert.notEqual(isForbiddenAddress(never), null, never);
      }),
      { numRuns: 20_000 },
    );
  });
});
