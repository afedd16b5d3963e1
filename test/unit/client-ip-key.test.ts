import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clientIpKey } from '../../src/gateway/middleware/rate-limit.ts';

test('per-IP limits key IPv4 as such, IPv4-mapped IPv6 as its IPv4, IPv6 by its /64', () => {
  assert.equal(clientIpKey('203.0.113.7'), '203.0.113.7');
  assert.equal(clientIpKey('::ffff:203.0.113.7'), '203.0.113.7');
  assert.equal(clientIpKey('::FFFF:cb00:7107'), '203.0.113.7', 'the hex form of a mapped address is the same client');
  const a = clientIpKey('2001:db8:1:2:aaaa::1');
  assert.equal(a, '2001:db8:1:2::/64');
  assert.equal(
    clientIpKey('2001:0db8:0001:0002:ffff:ffff:ffff:fffe'),
    a,
    'any address inside the /64, however written',
  );
  assert.equal(clientIpKey('2001:DB8:1:2::'), a);
  assert.notEqual(clientIpKey('2001:db8:1:3::1'), a, 'the next /64 is another client');
  assert.equal(clientIpKey('fe80::1%eth0'), 'fe80::/64');
  assert.equal(clientIpKey('::1'), '::/64');
  assert.equal(clientIpKey('not an address'), 'not an address');
  assert.equal(clientIpKey(''), '');
});
