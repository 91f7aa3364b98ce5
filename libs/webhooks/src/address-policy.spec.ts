import { describe, expect, it } from 'vitest';
import { forbiddenAddressReason, isForbiddenAddress } from './address-policy.js';

describe('forbiddenAddressReason', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.0.1', 'linkLocal'],
    ['169.254.169.254', 'metadata'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['100.100.100.200', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'linkLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['fd12:3456:789a::1', 'uniqueLocal'],
    ['fd00:ec2::254', 'metadata'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:192.168.0.1', 'private'],
    // IPv4-compatible, NAT64, 6to4 and Teredo forms embed IPv4 addresses: outside 2000::/3 or a special range.
    ['::7f00:1', 'reserved'],
    ['::a00:1', 'reserved'],
    // ipaddr.js reads the dotted IPv4-compatible spelling as IPv4-mapped: refused either way.
    ['::127.0.0.1', 'loopback'],
    ['64:ff9b::7f00:1', 'rfc6052'],
    ['2002:7f00:1::1', '6to4'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
    ['fec0::1', 'deprecatedSiteLocal'],
    ['not an address', 'invalid'],
    ['', 'invalid'],
  ])('refuses %s (%s)', (address, reason) => {
    expect(forbiddenAddressReason(address)).toBe(reason);
    expect(isForbiddenAddress(address, { allowPrivateNetworks: false })).toBe(true);
  });

  it.each(['1.1.1.1', '8.8.8.8', '93.184.215.14', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8'])(
    'allows the public address %s',
    (address) => {
      expect(forbiddenAddressReason(address)).toBeNull();
      expect(isForbiddenAddress(address, { allowPrivateNetworks: false })).toBe(false);
    },
  );

  it('allows every address with allowPrivateNetworks', () => {
    for (const address of ['127.0.0.1', '10.0.0.1', '169.254.169.254', '::1', 'fd00:ec2::254']) {
      expect(isForbiddenAddress(address, { allowPrivateNetworks: true })).toBe(false);
    }
  });
});
