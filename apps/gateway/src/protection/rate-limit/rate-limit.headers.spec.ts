import { describe, expect, it } from 'vitest';
import { rateLimitAddress } from './client-address.js';
import { limitField, policyField, secondsUntil } from './rate-limit.headers.js';

const application = { name: 'application' as const, limit: { quota: 100, windowSeconds: 1, burst: 200 } };
const tokenFailures = { name: 'token-failures' as const, limit: { quota: 10, windowSeconds: 60, burst: 20 } };

describe('RateLimit fields', () => {
  it('lists policies as structured-field items', () => {
    expect(policyField([application])).toBe('"application";q=100;w=1;tracking-burst=200');
    expect(policyField([application, tokenFailures])).toBe(
      '"application";q=100;w=1;tracking-burst=200, "token-failures";q=10;w=60;tracking-burst=20',
    );
  });

  it('gives the remaining requests and whole seconds until the next one, at least 1', () => {
    expect(
      limitField([
        { policy: application, decision: { allowed: true, remaining: 199, msUntilNext: 10 } },
        { policy: tokenFailures, decision: { allowed: false, remaining: 0, msUntilNext: 5001 } },
      ]),
    ).toBe('"application";r=199;t=1, "token-failures";r=0;t=6');
    expect(secondsUntil({ allowed: false, remaining: 0, msUntilNext: 3000 })).toBe(3);
  });
});

describe('rateLimitAddress', () => {
  it('keeps IPv4 addresses, also IPv4-mapped ones', () => {
    expect(rateLimitAddress('203.0.113.9')).toBe('203.0.113.9');
    expect(rateLimitAddress('::ffff:203.0.113.9')).toBe('203.0.113.9');
  });

  it('counts IPv6 addresses by their /64 network', () => {
    expect(rateLimitAddress('2001:db8:0:1::1')).toBe('2001:db8:0:1::/64');
    expect(rateLimitAddress('2001:0db8:0000:0001:ffff:ffff:ffff:ffff')).toBe('2001:db8:0:1::/64');
    expect(rateLimitAddress('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(rateLimitAddress('::1')).toBe('0:0:0:0::/64');
    expect(rateLimitAddress('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(rateLimitAddress('64:ff9b::192.0.2.1')).toBe('64:ff9b:0:0::/64');
  });
});
