import { ServiceMetrics } from '@tracking/observability';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { expectError, expectInvalidParameter, UUID } from '../support/http-assertions.js';
import { TestStack } from '../support/stack.js';
import { expectUnauthorized } from '../support/tokens.js';

const TOKEN_PATH = '/v1/applications/token';

describe('POST /v1/applications/token', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let other: TestTenant;

  beforeAll(async () => {
    stack = await TestStack.start();
    [tenant, other] = [await createTenant(stack), await createTenant(stack)];
  });
  afterAll(() => stack?.stop());

  function requestToken(body: unknown) {
    return stack.request('POST', TOKEN_PATH, { body });
  }

  function credentials(overrides: object = {}) {
    return { tenantId: tenant.tenantId, applicationId: tenant.applicationId, applicationSecret: tenant.applicationSecret, ...overrides };
  }

  describe('valid credentials', () => {
    it('answers 200 with an access token valid 86400 s', async () => {
      const response = await requestToken(credentials());
      expect(response.status, response.text).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(response.body).toStrictEqual({ accessToken: expect.any(String), expiresIn: 86400 });
    });

    it('signs with ES256 under a kid that the JWKS publishes, without private parts', async () => {
      const { body } = await requestToken(credentials());
      const header = decodeProtectedHeader(body.accessToken);
      expect(header.alg).toBe('ES256');
      expect(typeof header.kid).toBe('string');

      const jwks = await stack.request<JSONWebKeySet>('GET', '/v1/.well-known/jwks.json');
      expect(jwks.status).toBe(200);
      const key = jwks.body.keys.find((candidate) => candidate.kid === header.kid);
      expect(key).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
      for (const published of jwks.body.keys) expect(published).not.toHaveProperty('d');
    });

    it('carries iss, aud, sub, tid, iat, exp = iat + 86400 and a jti', async () => {
      const before = Math.floor(Date.now() / 1000);
      const { body } = await requestToken(credentials());
      const claims = decodeJwt(body.accessToken);
      const config = stack.gatewayConfig;
      expect(claims).toStrictEqual({
        iss: config.JWT_ISSUER,
        aud: config.JWT_AUDIENCE,
        sub: tenant.applicationId,
        tid: tenant.tenantId,
        iat: expect.any(Number),
        exp: expect.any(Number),
        jti: expect.stringMatching(UUID),
      });
      expect(claims.iat).toBeGreaterThanOrEqual(before);
      expect(claims.iat).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
      expect(claims.exp).toBe(claims.iat! + 86400);
    });

    it('gives each token its own jti', async () => {
      const [first, second] = await Promise.all([requestToken(credentials()), requestToken(credentials())]);
      expect(decodeJwt(first.body.accessToken).jti).not.toBe(decodeJwt(second.body.accessToken).jti);
    });

    it('verifies against the published JWKS with jose', async () => {
      const { body } = await requestToken(credentials());
      const jwks = await stack.request<JSONWebKeySet>('GET', '/v1/.well-known/jwks.json');
      const config = stack.gatewayConfig;
      const { payload, protectedHeader } = await jwtVerify(body.accessToken, createLocalJWKSet(jwks.body), {
        algorithms: ['ES256'],
        issuer: config.JWT_ISSUER,
        audience: config.JWT_AUDIENCE,
      });
      expect(protectedHeader.alg).toBe('ES256');
      expect(payload.sub).toBe(tenant.applicationId);
      expect(payload.tid).toBe(tenant.tenantId);
    });

    it('issues a token the gateway itself accepts', async () => {
      const { body } = await requestToken(credentials());
      const response = await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/shipments`, { token: body.accessToken });
      expect(response.status, response.text).toBe(200);
    });
  });

  describe('invalid credentials: one and the same 401', () => {
    const cases: [string, () => Promise<Record<string, unknown>>][] = [
      ['a wrong secret', async () => credentials({ applicationSecret: `${tenant.applicationSecret}x` })],
      ['the secret of another application', async () => credentials({ applicationSecret: other.applicationSecret })],
      ['an unknown application id', async () => credentials({ applicationId: '0190c6a4-6f1e-7c39-9d52-5b1f2f6c1a2b' })],
      ['an application id that is not a UUID', async () => credentials({ applicationId: 'my-app' })],
      [
        'the application of another tenant',
        async () => credentials({ applicationId: other.applicationId, applicationSecret: other.applicationSecret }),
      ],
      ['a tenant id that is not the application’s', async () => credentials({ tenantId: other.tenantId })],
      ['an unknown tenant id', async () => credentials({ tenantId: '0190c6a4-6f1e-7c39-9d52-5b1f2f6c1a2c' })],
      [
        'a disabled application',
        async () => {
          const created = await stack.identity.createApplication(tenant.tenantId, 'Disabled app', 'Admin', '*');
          await stack.identity.disableApplication(created.applicationId);
          return credentials(created);
        },
      ],
    ];

    it.each(cases)('answers 401 for %s', async (_name, body) => {
      expectUnauthorized(await requestToken(await body()));
    });

    it('gives every case a byte-identical body', async () => {
      const texts = new Set<string>();
      for (const [, body] of cases) texts.add((await requestToken(await body())).text);
      expect(texts.size).toBe(1);
    });

    it('still issues tokens to the valid application afterwards', async () => {
      expect((await requestToken(credentials())).status).toBe(200);
    });
  });

  describe('invalid bodies', () => {
    it.each(['tenantId', 'applicationId', 'applicationSecret'])('400 Required when %s is missing', async (field) => {
      const body: Record<string, unknown> = credentials();
      delete body[field];
      expectInvalidParameter(await requestToken(body), field, 'Required');
    });

    it.each(['tenantId', 'applicationId', 'applicationSecret'])('400 InvalidFormat when %s is not a string', async (field) => {
      expectInvalidParameter(await requestToken(credentials({ [field]: 12345 })), field, 'InvalidFormat');
    });

    it('400 UnknownField for a field the request does not have', async () => {
      expectInvalidParameter(await requestToken(credentials({ scope: 'admin' })), 'scope', 'UnknownField');
    });

    it('400 MalformedRequest for a body that is not JSON', async () => {
      const response = await stack.request('POST', TOKEN_PATH, {
        rawBody: '{"tenantId": "abc",',
        headers: { 'content-type': 'application/json' },
      });
      expectError(response, 400, 'MalformedRequest');
    });

    it('400 MalformedRequest for JSON that is not an object', async () => {
      expectError(await requestToken(['tenantId']), 400, 'MalformedRequest');
    });

    it('415 UnsupportedMediaType for text/plain', async () => {
      const response = await stack.request('POST', TOKEN_PATH, {
        rawBody: JSON.stringify(credentials()),
        headers: { 'content-type': 'text/plain' },
      });
      expectError(response, 415, 'UnsupportedMediaType');
    });

    it('does not echo the secret in a validation error', async () => {
      const response = await requestToken(credentials({ extra: true }));
      expect(response.status).toBe(400);
      expect(response.text).not.toContain(tenant.applicationSecret);
    });
  });

  describe('the cost of checking secrets', () => {
    /** How often the gateway at `app` checked a secret, by outcome (cached, matched, mismatched, refused). */
    async function verifications(app = stack.gateway): Promise<Record<string, number>> {
      const counter = app.get(ServiceMetrics).registry.getSingleMetric('gateway_secret_verifications_total');
      const counts: Record<string, number> = { cached: 0, matched: 0, mismatched: 0, refused: 0 };
      for (const value of (await counter!.get()).values) counts[String(value.labels.outcome)] = value.value;
      return counts;
    }

    it("hashes a good client's secret once, and every wrong or rotated secret again", async () => {
      const own = await createTenant(stack);
      const body = { tenantId: own.tenantId, applicationId: own.applicationId, applicationSecret: own.applicationSecret };
      // createTenant fetched a token already: its secret is known to match.
      const before = await verifications();
      for (let i = 0; i < 3; i++) expect((await requestToken(body)).status).toBe(200);
      expect(await verifications()).toEqual({ ...before, cached: before.cached! + 3 });

      expectUnauthorized(await requestToken({ ...body, applicationSecret: `${own.applicationSecret}x` }));
      expectUnauthorized(await requestToken({ ...body, applicationSecret: `${own.applicationSecret}x` }));
      expect(await verifications()).toEqual({ ...before, cached: before.cached! + 3, mismatched: before.mismatched! + 2 });

      const rotated = await stack.identity.rotateSecret(own.applicationId);
      expectUnauthorized(await requestToken(body));
      expect((await requestToken({ ...body, applicationSecret: rotated.applicationSecret })).status).toBe(200);
      expect(await verifications()).toEqual({
        ...before,
        cached: before.cached! + 3,
        mismatched: before.mismatched! + 3,
        matched: before.matched! + 1,
      });
    });

    it('answers 503 with Retry-After when the hashing queue is full, and still serves known-good secrets', async () => {
      const replica = await stack.startGatewayReplica({ TOKEN_HASH_CONCURRENCY: '1', TOKEN_HASH_QUEUE: '1' });
      const app = stack.gatewayReplicas.at(-1)!;
      const good = credentials();
      expect((await stack.request('POST', TOKEN_PATH, { body: good, baseUrl: replica })).status).toBe(200);

      const bogus = Array.from({ length: 12 }, () =>
        stack.request('POST', TOKEN_PATH, { body: { ...good, applicationSecret: 'wrong' }, baseUrl: replica }),
      );
      const meanwhile = stack.request('POST', TOKEN_PATH, { body: good, baseUrl: replica });
      const answers = await Promise.all(bogus);
      expect((await meanwhile).status).toBe(200);

      const refused = answers.filter((answer) => answer.status === 503);
      expect(answers.filter((answer) => answer.status !== 503).every((answer) => answer.status === 401)).toBe(true);
      // One hashing, one waiting, the rest turned away (how many depends on how fast they arrive).
      expect(refused.length).toBeGreaterThan(0);
      for (const answer of refused) {
        expectError(answer, 503, 'ServiceUnavailable');
        expect(answer.headers.get('retry-after')).toBe('1');
      }
      expect((await verifications(app)).refused).toBe(refused.length);
    });
  });
});
