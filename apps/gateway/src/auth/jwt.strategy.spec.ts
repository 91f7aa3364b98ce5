import { describe, expect, it } from 'vitest';
import { readGatewayConfig } from '../config.js';
import type { AccessService } from '../identity/access.service.js';
import { JwtStrategy } from './jwt.strategy.js';
import type { SigningKeysService } from './signing-keys.service.js';

function strategy(): JwtStrategy {
  return new JwtStrategy(readGatewayConfig({}), {} as SigningKeysService, {} as AccessService);
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

describe('JwtStrategy verified-token cache', () => {
  it('remembers a verified token no longer than its expiry plus the 60 s skew', async () => {
    const verified = strategy();
    // Expired 58 s ago: within the skew for between 1 and 2 s more.
    const claims = { sub: 'a', tid: 't', iat: nowSeconds() - 3600, exp: nowSeconds() - 58 };
    verified.rememberVerified('token', claims);
    const rememberedAt = Date.now();
    expect(verified.recentlyVerified('token')).toEqual(claims);
    // Polled until forgotten, with a deadline past the bound.
    while (verified.recentlyVerified('token') !== undefined && Date.now() - rememberedAt < 3000) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(verified.recentlyVerified('token')).toBeUndefined();
    expect(Date.now() - rememberedAt).toBeLessThanOrEqual(2100);
  });

  it('does not remember a token already past its expiry and skew, nor one without exp', () => {
    const verified = strategy();
    verified.rememberVerified('late', { sub: 'a', tid: 't', iat: nowSeconds() - 3600, exp: nowSeconds() - 61 });
    verified.rememberVerified('endless', { sub: 'a', tid: 't', iat: nowSeconds() });
    expect(verified.recentlyVerified('late')).toBeUndefined();
    expect(verified.recentlyVerified('endless')).toBeUndefined();
  });

  it('holds at most 10 000 tokens, forgetting the least recently used first', () => {
    const verified = strategy();
    const claims = { sub: 'a', tid: 't', iat: nowSeconds(), exp: nowSeconds() + 3600 };
    for (let i = 0; i < 10000; i++) verified.rememberVerified(`token-${i}`, claims);
    expect(verified.recentlyVerified('token-0')).toEqual(claims);
    verified.rememberVerified('token-10000', claims);
    expect(verified.recentlyVerified('token-0')).toEqual(claims);
    expect(verified.recentlyVerified('token-1')).toBeUndefined();
    expect(verified.recentlyVerified('token-10000')).toEqual(claims);
  });
});
