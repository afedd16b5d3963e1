/**
 * The evidence the gateway records of a client (src/gateway/client-facts.ts): the network cut (IPv4 /24, IPv6 /48,
 * IPv4-mapped IPv6 as IPv4) in every written form of an address, the keyed hash of it, and the user-agent family,
 * with arbitrary input (garbage addresses and user agents never throw).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { ClientFactsReader, UA_FAMILIES, networkOf, uaFamily } from '../../src/gateway/client-facts.ts';

const octet = fc.integer({ min: 0, max: 255 });
const ipv4 = fc.tuple(octet, octet, octet, octet);
const part = fc.integer({ min: 0, max: 0xffff });
const ipv6 = fc.array(part, { minLength: 8, maxLength: 8 });
const hex = (n: number) => n.toString(16);

/** The written forms of one IPv6 address: compressed, full, zero-padded, upper case, with a zone. */
function forms(parts: number[]): string[] {
  const addr = new ipaddr.IPv6(parts);
  return [
    addr.toString(),
    parts.map(hex).join(':'),
    parts.map((p) => hex(p).padStart(4, '0')).join(':'),
    addr.toString().toUpperCase(),
    `${addr.toString()}%eth0`,
  ];
}

test('IPv4: every address of a /24 gives that /24, and the mapped IPv6 forms give the same', () => {
  fc.assert(
    fc.property(ipv4, ([a, b, c, d]) => {
      const want = `${a}.${b}.${c}.0/24`;
      assert.equal(networkOf(`${a}.${b}.${c}.${d}`), want);
      assert.equal(networkOf(`::ffff:${a}.${b}.${c}.${d}`), want);
      assert.equal(networkOf(`::FFFF:${a}.${b}.${c}.${d}`), want);
      assert.equal(networkOf(`::ffff:${hex(a * 256 + b)}:${hex(c * 256 + d)}`), want);
      assert.equal(networkOf(`0:0:0:0:0:ffff:${a}.${b}.${c}.${d}`), want);
    }),
  );
});

test('IPv6: every form of an address gives its /48; addresses differing after bit 48 share it, before do not', () => {
  fc.assert(
    fc.property(ipv6, fc.array(part, { minLength: 5, maxLength: 5 }), (parts, tail) => {
      // Mapped addresses are IPv4 (the test above).
      fc.pre(!new ipaddr.IPv6(parts).isIPv4MappedAddress());
      const want = `${new ipaddr.IPv6([parts[0]!, parts[1]!, parts[2]!, 0, 0, 0, 0, 0]).toString()}/48`;
      for (const f of forms(parts)) assert.equal(networkOf(f), want, f);
      const sibling = [...parts.slice(0, 3), ...tail];
      fc.pre(!new ipaddr.IPv6(sibling).isIPv4MappedAddress());
      assert.equal(networkOf(new ipaddr.IPv6(sibling).toString()), want);
    }),
  );
  fc.assert(
    fc.property(ipv6, fc.integer({ min: 0, max: 2 }), part, (parts, i, other) => {
      fc.pre(parts[i] !== other);
      const moved = parts.slice();
      moved[i] = other;
      fc.pre(![parts, moved].some((p) => new ipaddr.IPv6(p).isIPv4MappedAddress()));
      assert.notEqual(networkOf(new ipaddr.IPv6(parts).toString()), networkOf(new ipaddr.IPv6(moved).toString()));
    }),
  );
});

test('anything else is no network: garbage never throws, and what it accepts is a real network', () => {
  for (const bad of [
    '',
    'localhost',
    '1.2.3',
    '1.2.3.4.5',
    '256.1.1.1',
    '01.2.3.4',
    '0x7f.0.0.1',
    '3232235777',
    ':::1',
  ])
    assert.equal(networkOf(bad), null, bad);
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 64 }), (s) => {
      const net = networkOf(s);
      if (net !== null) assert.match(net, /^(\d{1,3}\.){3}0\/24$|^[0-9a-f:]+\/48$/);
    }),
    { numRuns: 2000 },
  );
});

test('the keyed hash: one per network, 32 hex digits, no address in it, another secret another hash', () => {
  const reader = new ClientFactsReader('a'.repeat(32));
  const other = new ClientFactsReader('b'.repeat(32));
  fc.assert(
    fc.property(ipv4, octet, ([a, b, c, d], e) => {
      const ip = `${a}.${b}.${c}.${d}`;
      const h = reader.netHash(ip)!;
      assert.match(h, /^[0-9a-f]{32}$/);
      assert.equal(reader.netHash(`${a}.${b}.${c}.${e}`), h);
      assert.equal(reader.netHash(`::ffff:${ip}`), h);
      assert.notEqual(reader.netHash(`${a}.${b}.${(c + 1) % 256}.${d}`), h);
      assert.notEqual(other.netHash(ip), h);
      assert.ok(!h.includes(`${a}.${b}`));
    }),
  );
  assert.equal(reader.netHash('not an address'), null);
  const facts = reader.of({ ip: '2001:db8:aa:1::9', get: () => 'curl/8.5.0' });
  assert.deepEqual(facts, { net: reader.netHash('2001:db8:aa:ffff::1'), ua: 'curl' });
});

test('user-agent families of real agents, and garbage is "other" (never a throw); nothing sent is null', () => {
  const real: Array<[string, string]> = [
    [
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
      'chrome',
    ],
    [
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 ' +
        'Safari/537.36 Edg/131.0.2903.70',
      'edge',
    ],
    ['Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0', 'firefox'],
    [
      'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) ' +
        'Version/18.1 Mobile/15E148 Safari/604.1',
      'safari',
    ],
    [
      'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) ' +
        'CriOS/131.0.6778.73 Mobile/15E148 Safari/604.1',
      'chrome',
    ],
    [
      'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) ' +
        'FxiOS/133.0 Mobile/15E148 Safari/605.1.15',
      'firefox',
    ],
    ['curl/8.5.0', 'curl'],
    ['python-requests/2.32.3', 'python'],
    ['Python-urllib/3.12', 'python'],
    ['python-httpx/0.27.2', 'python'],
    ['Go-http-client/2.0', 'go'],
    ['node', 'node'],
    ['undici', 'node'],
    ['axios/1.7.9', 'node'],
    ['Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)', 'other'],
    ['Wget/1.21.4', 'other'],
  ];
  for (const [ua, family] of real) assert.equal(uaFamily(ua), family, ua);
  for (const none of [undefined, null, '', '   ']) assert.equal(uaFamily(none), null);
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 2000 }), (s) => {
      const f = uaFamily(s);
      assert.ok(f === null ? s.slice(0, 512).trim() === '' : UA_FAMILIES.includes(f), `${JSON.stringify(s)} → ${f}`);
    }),
    { numRuns: 2000 },
  );
  // A megabyte of it is read no further than its start.
  assert.equal(uaFamily(`curl/8 ${'x'.repeat(1 << 20)}`), 'curl');
});
