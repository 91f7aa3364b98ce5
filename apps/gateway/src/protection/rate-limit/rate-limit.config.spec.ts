import { describe, expect, it } from 'vitest';
import { readGatewayConfig } from '../../config.js';
import { parseRateLimit } from '@tracking/rate-limit';

const TENANT = '0190a4a0-0000-7000-8000-000000000001';

describe('rate limit settings', () => {
  it('reads quota, window and burst; the burst defaults to the quota', () => {
    expect(parseRateLimit('100/1s burst 200')).toEqual({ quota: 100, windowSeconds: 1, burst: 200 });
    expect(parseRateLimit('10/m')).toEqual({ quota: 10, windowSeconds: 60, burst: 10 });
    expect(parseRateLimit(' 1000 / 2h ')).toEqual({ quota: 1000, windowSeconds: 7200, burst: 1000 });
  });

  it.each(['', '100', '100/1', '100/1d', '0/1s', '100/0s', '10/1s burst 0', '10/1s burst', '-1/1s', '1.5/1s', '10/48h', '100/1s burst 200 extra'])(
    'refuses "%s"',
    (text) => {
      expect(() => parseRateLimit(text)).toThrow(/must be|needs/);
    },
  );

  it('names the variable of a bad limit', () => {
    expect(() => readGatewayConfig({ RATE_LIMIT_APPLICATION: 'fast' })).toThrow(/RATE_LIMIT_APPLICATION must be "<quota>\/<window>/);
  });

  it('reads per-tenant overrides, keyed by lower-case tenant id', () => {
    const config = readGatewayConfig({
      RATE_LIMIT_TENANT_OVERRIDES: JSON.stringify({ [TENANT.toUpperCase()]: { application: '500/1s burst 1000', tokenFailures: '60/1m' } }),
    });
    expect(config.RATE_LIMIT_TENANT_OVERRIDES.get(TENANT)).toEqual({
      application: { quota: 500, windowSeconds: 1, burst: 1000 },
      tokenFailures: { quota: 60, windowSeconds: 60, burst: 60 },
    });
    expect(readGatewayConfig({}).RATE_LIMIT_TENANT_OVERRIDES.size).toBe(0);
  });

  it.each([
    ['not JSON', /must be a JSON object/],
    ['[]', /must be a JSON object/],
    ['{"acme":{"application":"1/1s"}}', /"acme", which is not a tenant id/],
    [`{"${TENANT}":"1/1s"}`, /not an object of limits/],
    [`{"${TENANT}":{"address":"1/1s"}}`, /names the limit "address".*can override application, tokenFailures, readings/],
    [`{"${TENANT}":{"application":5}}`, /application of tenant .* as a number/],
    [`{"${TENANT}":{"tokenFailures":"lots"}}`, /tokenFailures of tenant .* must be/],
  ])('refuses overrides %s', (raw, message) => {
    expect(() => readGatewayConfig({ RATE_LIMIT_TENANT_OVERRIDES: raw })).toThrow(message);
  });

  it('reads TRUST_PROXY as addresses and ranges, or a hop count', () => {
    expect(readGatewayConfig({}).TRUST_PROXY).toBeUndefined();
    expect(readGatewayConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,::1' }).TRUST_PROXY).toEqual(['10.0.0.0/8', '127.0.0.1', '::1']);
    const hops = readGatewayConfig({ TRUST_PROXY: '2' }).TRUST_PROXY as (address: string, hop: number) => boolean;
    expect([hops('a', 0), hops('a', 1), hops('a', 2)]).toEqual([true, true, false]);
    expect(() => readGatewayConfig({ TRUST_PROXY: 'proxy.local' })).toThrow(/TRUST_PROXY must list IP addresses/);
    expect(() => readGatewayConfig({ TRUST_PROXY: '10.0.0.0/33' })).toThrow(/TRUST_PROXY/);
    expect(() => readGatewayConfig({ TRUST_PROXY: '0' })).toThrow(/TRUST_PROXY must be a number of hops/);
  });
});
