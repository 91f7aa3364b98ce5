import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SigningKeysService } from '../../apps/gateway/src/auth/signing-keys.service.js';
import { readGatewayConfig } from '../../apps/gateway/src/config.js';
import { createTenant, issueToken, type TestTenant } from '../factories/identity.factory.js';
import { TestStack } from '../support/stack.js';
import { expectUnauthorized, mintToken, unsignedToken } from '../support/tokens.js';

describe('authentication of /v1/accounts/{accountId}/...', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let other: TestTenant;
  let path: string;

  beforeAll(async () => {
    stack = await TestStack.start();
    [tenant, other] = [await createTenant(stack), await createTenant(stack)];
    path = `/v1/accounts/${tenant.accountIds[0]}/shipments`;
  });
  afterAll(() => stack?.stop());

  function withHeader(authorization: string) {
    return stack.request('GET', path, { headers: { authorization } });
  }

  function withToken(token: string) {
    return stack.request('GET', path, { token });
  }

  function mint(options: Parameters<typeof mintToken>[3] = {}) {
    return mintToken(stack, tenant.applicationId, tenant.tenantId, options);
  }

  const now = () => Math.floor(Date.now() / 1000);

  describe('accepted', () => {
    it('a token from the token endpoint', async () => {
      expect((await withToken(tenant.token)).status).toBe(200);
    });

    it('a token minted in the test with valid claims (the control for every forged token below)', async () => {
      expect((await withToken(await mint())).status).toBe(200);
    });

    it.each(['bearer', 'BEARER', 'bEaReR'])('the scheme in any case (%s), for the guard and the rate limiter alike', async (scheme) => {
      const response = await withHeader(`${scheme} ${tenant.token}`);
      expect(response.status, response.text).toBe(200);
      // Counted against the application, as a valid token is, not against the client address.
      expect(response.headers.get('ratelimit-policy')).toMatch(/^"application";/);
    });

    it('a token that expired 30 s ago, within the 60 s clock skew', async () => {
      const token = await mint({ claims: { iat: now() - 86430, exp: now() - 30 } });
      expect((await withToken(token)).status).toBe(200);
    });

    it('a token issued, or valid from, 30 s in the future, within the 60 s clock skew', async () => {
      expect((await withToken(await mint({ claims: { iat: now() + 30 } }))).status).toBe(200);
      expect((await withToken(await mint({ claims: { nbf: now() + 30 } }))).status).toBe(200);
    });
  });

  describe('the Authorization header', () => {
    it('401 without one', async () => {
      expectUnauthorized(await stack.request('GET', path));
    });

    it.each([
      ['Basic credentials', () => 'Basic eDp5'],
      ['two spaces after Bearer', () => `Bearer  ${tenant.token}`],
      ['another scheme name', () => `Token ${tenant.token}`],
      ['no token after Bearer', () => 'Bearer'],
      ['two tokens', () => `Bearer ${tenant.token} ${tenant.token}`],
      ['a token that is not a JWT', () => 'Bearer abc'],
      ['a JWT with a garbage header', () => `Bearer e30x.${tenant.token.split('.')[1]}.${tenant.token.split('.')[2]}`],
    ])('401 for %s', async (_name, header) => {
      expectUnauthorized(await withHeader(header()));
    });
  });

  describe('the token', () => {
    it('401 when it expired beyond the clock skew, with a message that says so', async () => {
      const response = await withToken(await mint({ claims: { iat: now() - 86500, exp: now() - 90 } }));
      expectUnauthorized(response);
      expect(response.body.error.message).toMatch(/expired/i);
    });

    it('401 without exp', async () => {
      expectUnauthorized(await withToken(await mint({ claims: { exp: undefined } })));
    });

    it('401 for a forged signature: a fresh key under the real kid', async () => {
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      expectUnauthorized(await withToken(await mint({ key: privateKey })));
    });

    it('401 for a signature that was tampered with', async () => {
      const [header, payload, signature] = (await mint()).split('.');
      const flipped = `${signature![0] === 'A' ? 'B' : 'A'}${signature!.slice(1)}`;
      expectUnauthorized(await withToken(`${header}.${payload}.${flipped}`));
    });

    it('401 for claims swapped under a valid signature', async () => {
      const [header, , signature] = (await mint()).split('.');
      const payload = Buffer.from(JSON.stringify({ sub: other.applicationId, tid: other.tenantId })).toString('base64url');
      expectUnauthorized(await withToken(`${header}.${payload}.${signature}`));
    });

    it('401 for alg none', async () => {
      const valid = await mint();
      const [header, payload] = valid.split('.');
      const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
      const { kid } = JSON.parse(Buffer.from(header!, 'base64url').toString());
      expectUnauthorized(await withToken(unsignedToken({ alg: 'none', kid, typ: 'JWT' }, claims)));
    });

    it('401 for HS256 signed with the public key as the HMAC secret', async () => {
      const { privateKey } = stack.gateway.get(SigningKeysService).signingKey();
      const publicPem = createPublicKey(privateKey).export({ format: 'pem', type: 'spki' });
      const token = await mint({ header: { alg: 'HS256' }, key: new Uint8Array(Buffer.from(publicPem)) });
      expectUnauthorized(await withToken(token));
    });

    describe('401 for HS256 with the published public key as the HMAC secret, in any encoding', () => {
      async function publishedKey(): Promise<JWK> {
        const jwks = await stack.request('GET', '/v1/.well-known/jwks.json');
        const { kid } = stack.gateway.get(SigningKeysService).signingKey();
        return jwks.body.keys.find((key: JWK) => key.kid === kid);
      }

      it.each([
        ['the JWK as JSON', (jwk: JWK) => Buffer.from(JSON.stringify(jwk))],
        ['the SPKI DER bytes', (jwk: JWK) => createPublicKey({ key: jwk as never, format: 'jwk' }).export({ format: 'der', type: 'spki' })],
        ['the raw point x || y', (jwk: JWK) => Buffer.concat([Buffer.from(jwk.x!, 'base64url'), Buffer.from(jwk.y!, 'base64url')])],
        ['the base64url x coordinate', (jwk: JWK) => Buffer.from(jwk.x!)],
      ])('%s', async (_name, secret) => {
        const token = await mint({ header: { alg: 'HS256' }, key: new Uint8Array(secret(await publishedKey())) });
        expectUnauthorized(await withToken(token));
      });
    });

    it.each(['None', 'NONE', 'nOnE'])('401 for alg %s with an empty signature', async (alg) => {
      const [header, payload] = (await mint()).split('.');
      const { kid } = JSON.parse(Buffer.from(header!, 'base64url').toString());
      expectUnauthorized(await withToken(unsignedToken({ alg, kid, typ: 'JWT' }, JSON.parse(Buffer.from(payload!, 'base64url').toString()))));
    });

    it('401 for the real header and claims with the signature cut off', async () => {
      const [header, payload] = (await mint()).split('.');
      expectUnauthorized(await withToken(`${header}.${payload}.`));
    });

    it('401 for ES384 and ES512 tokens, whatever key signed them', async () => {
      const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey;
      const p521 = generateKeyPairSync('ec', { namedCurve: 'P-521' }).privateKey;
      expectUnauthorized(await withToken(await mint({ header: { alg: 'ES384' }, key: p384 })));
      expectUnauthorized(await withToken(await mint({ header: { alg: 'ES512' }, key: p521 })));
    });

    it('401 for an unknown kid, even when the signature is the real key’s', async () => {
      expectUnauthorized(await withToken(await mint({ header: { kid: 'no-such-key' } })));
    });

    it.each([
      ['a path', '../../../../etc/passwd'],
      ['an encoded path', '..%2F..%2Fetc%2Fpasswd'],
      ['a file URL', 'file:///dev/null'],
      ['SQL', "' OR '1'='1' --"],
      ['SQL that closes a statement', "x'; DROP TABLE signing_keys; --"],
      ['a NUL character', 'key\u0000'],
      ['an empty string', ''],
      ['129 characters', 'k'.repeat(129)],
      ['10000 characters', 'k'.repeat(10000)],
      ['a number', 1],
      ['an object', { $ne: null }],
      ['an array', ['a']],
      ['null', null],
    ])('401 for a kid that is %s, signed with the real key', async (_name, kid) => {
      expectUnauthorized(await withToken(await mint({ header: { kid } })));
    });

    it('still verifies with its keys after every kid trick (the keys table is intact)', async () => {
      expect((await withToken(await mint())).status).toBe(200);
      expect((await stack.request('GET', '/v1/.well-known/jwks.json')).body.keys.length).toBeGreaterThan(0);
    });

    it('401 for a token signed by another ES256 key under that key’s own, valid-looking kid', async () => {
      const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const jwk = await exportJWK(publicKey);
      const kid = await calculateJwkThumbprint(jwk);
      expectUnauthorized(await withToken(await mint({ header: { kid }, key: privateKey })));
      // Offering the key in the header (jwk) or by URL (jku, x5u) changes nothing: only our keys verify.
      expectUnauthorized(await withToken(await mint({ header: { kid, jwk }, key: privateKey })));
      expectUnauthorized(await withToken(await mint({ header: { kid, jku: 'https://attacker.example/jwks.json' }, key: privateKey })));
      expectUnauthorized(await withToken(await mint({ header: { kid, x5u: 'https://attacker.example/cert.pem' }, key: privateKey })));
    });

    it('401 without a kid', async () => {
      expectUnauthorized(await withToken(await mint({ header: { kid: undefined } })));
    });

    it('401 for a wrong audience', async () => {
      expectUnauthorized(await withToken(await mint({ claims: { aud: 'another-api' } })));
    });

    it('401 for a wrong issuer', async () => {
      expectUnauthorized(await withToken(await mint({ claims: { iss: 'https://attacker.example' } })));
    });

    it.each([
      ['without aud', { aud: undefined }],
      ['without iss', { iss: undefined }],
      ['with an audience only differing in case', { aud: 'TRACKING-API' }],
      ['with an empty audience list', { aud: [] }],
      ['with exp written as a string', { exp: String(Math.floor(Date.now() / 1000) + 3600) }],
      ['with exp far in the past', { iat: 0, exp: 1 }],
      ['that expired 61 s ago', { iat: Math.floor(Date.now() / 1000) - 86461, exp: Math.floor(Date.now() / 1000) - 61 }],
      ['not valid before 2 minutes from now (nbf)', { nbf: Math.floor(Date.now() / 1000) + 120 }],
      ['issued 2 minutes in the future (iat)', { iat: Math.floor(Date.now() / 1000) + 120 }],
      ['without iat', { iat: undefined }],
      ['with iat written as a string', { iat: String(Math.floor(Date.now() / 1000)) }],
      ['living one second longer than 86400 s (exp - iat)', { iat: Math.floor(Date.now() / 1000), exp: Math.floor(Date.now() / 1000) + 86401 }],
      ['issued a year ago and valid for ten more', { iat: Math.floor(Date.now() / 1000) - 31536000, exp: Math.floor(Date.now() / 1000) + 315360000 }],
    ])('401 for a token %s', async (_name, claims) => {
      expectUnauthorized(await withToken(await mint({ claims })));
    });

    it('401 without tid', async () => {
      expectUnauthorized(await withToken(await mint({ claims: { tid: undefined } })));
    });

    it('401 without sub', async () => {
      expectUnauthorized(await withToken(await mint({ claims: { sub: undefined } })));
    });

    it('401 for a sub that is no application', async () => {
      expectUnauthorized(await withToken(await mint({ claims: { sub: '0190c6a4-6f1e-7c39-9d52-5b1f2f6c1a2b' } })));
    });

    it('401 for a tid that is not the tenant of the application in sub', async () => {
      // Another tenant's application, claiming this tenant: its roles ("*") would otherwise reach this account.
      const token = await mintToken(stack, other.applicationId, tenant.tenantId);
      expectUnauthorized(await withToken(token));
    });
  });

  describe('an application disabled after its token was issued', () => {
    let immediate: TestStack;

    beforeAll(async () => {
      immediate = await TestStack.start({ env: { IDENTITY_CACHE_TTL_MS: '0' } });
    });
    afterAll(() => immediate?.stop());

    it('401 at once when the identity cache is off', async () => {
      const owner = await createTenant(immediate);
      const ownPath = `/v1/accounts/${owner.accountIds[0]}/shipments`;
      expect((await immediate.request('GET', ownPath, { token: owner.token })).status).toBe(200);
      await immediate.identity.disableApplication(owner.applicationId);
      expectUnauthorized(await immediate.request('GET', ownPath, { token: owner.token }));
    });

    it('401 within IDENTITY_CACHE_TTL_MS, and from then on', async () => {
      const ttl = 1000;
      const cached = await TestStack.start({ env: { IDENTITY_CACHE_TTL_MS: String(ttl) } });
      try {
        const owner = await createTenant(cached);
        const ownPath = `/v1/accounts/${owner.accountIds[0]}/shipments`;
        const read = () => cached.request('GET', ownPath, { token: owner.token });
        expect((await read()).status).toBe(200);
        const disabledAt = Date.now();
        await cached.identity.disableApplication(owner.applicationId);
        // Polled until refused, with a deadline past the bound; the token itself is valid for a day.
        let refused = await read();
        while (refused.status === 200 && Date.now() - disabledAt < ttl + 2000) refused = await read();
        expectUnauthorized(refused);
        expect(Date.now() - disabledAt).toBeLessThanOrEqual(ttl + 500);
        for (let i = 0; i < 3; i++) expectUnauthorized(await read());
      } finally {
        await cached.stop();
      }
    });

    it('leaves each gateway in the process verifying with its own keys and identity database', async () => {
      expect((await withToken(tenant.token)).status).toBe(200);
      const owner = await createTenant(immediate);
      const foreign = await stack.request('GET', `/v1/accounts/${owner.accountIds[0]}/shipments`, { token: owner.token });
      expectUnauthorized(foreign);
    });

    it('keeps the other applications of the tenant working', async () => {
      const owner = await createTenant(immediate);
      const second = await immediate.identity.createApplication(owner.tenantId, 'Second', 'Admin', '*');
      const secondToken = await issueToken(immediate, owner.tenantId, second.applicationId, second.applicationSecret);
      await immediate.identity.disableApplication(owner.applicationId);
      const response = await immediate.request('GET', `/v1/accounts/${owner.accountIds[0]}/shipments`, { token: secondToken });
      expect(response.status, response.text).toBe(200);
    });
  });

  describe('the identity cache bound', () => {
    it('defaults to at most 60 s and refuses more', () => {
      expect(readGatewayConfig({}).IDENTITY_CACHE_TTL_MS).toBeLessThanOrEqual(60000);
      expect(readGatewayConfig({ IDENTITY_CACHE_TTL_MS: '60000' }).IDENTITY_CACHE_TTL_MS).toBe(60000);
      expect(() => readGatewayConfig({ IDENTITY_CACHE_TTL_MS: '60001' })).toThrow(/IDENTITY_CACHE_TTL_MS/);
    });
  });

  it('keeps concurrent requests of different applications apart', async () => {
    const requests = Array.from({ length: 40 }, (_, i) => {
      const owner = i % 2 === 0 ? tenant : other;
      return stack.request('GET', `/v1/accounts/${owner.accountIds[0]}/shipments`, { token: owner.token });
    });
    const statuses = (await Promise.all(requests)).map((response) => response.status);
    expect(statuses).toEqual(Array(40).fill(200));
  });

  it('gives the same 401 body to a forged token whatever the account', async () => {
    const forged = await new SignJWT({ tid: tenant.tenantId })
      .setProtectedHeader({ alg: 'ES256', kid: 'x' })
      .sign(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey);
    const own = await withToken(forged);
    const foreign = await stack.request('GET', `/v1/accounts/${other.accountIds[0]}/shipments`, { token: forged });
    expectUnauthorized(own);
    expect(foreign.text).toBe(own.text);
  });
});
