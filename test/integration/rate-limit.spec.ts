import { generateKeyPairSync } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceMetrics } from '@tracking/observability';
import { ProtectionMetrics } from '../../apps/gateway/src/protection/protection.metrics.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { eventually } from '../support/eventually.js';
import { expectError } from '../support/http-assertions.js';
import { OwnRedisServer } from '../support/redis-server.js';
import { type HttpResult, TestStack } from '../support/stack.js';
import { expectUnauthorized, mintToken } from '../support/tokens.js';

const TOKEN_PATH = '/v1/applications/token';
/** Quota 5 a minute: one request every 12 s, so nothing refills while a test runs. */
const SLOW_LIMIT = '5/1m';
const SLOW_POLICY = (name: string) => `"${name}";q=5;w=60;tracking-burst=5`;

/** The items of a RateLimit field: `"name";r=<remaining>;t=<seconds>`, comma-separated. */
function rateLimits(response: HttpResult): Map<string, { r: number; t: number }> {
  const field = response.headers.get('ratelimit');
  expect(field, `RateLimit header on ${response.status} ${response.text}`).not.toBeNull();
  const limits = new Map<string, { r: number; t: number }>();
  for (const item of field!.split(/,\s*/)) {
    const match = /^"([a-z-]+)";r=(\d+);t=(\d+)$/.exec(item);
    expect(match, `RateLimit item ${item}`).not.toBeNull();
    limits.set(match![1]!, { r: Number(match![2]), t: Number(match![3]) });
  }
  return limits;
}

function expectRateLimited(response: HttpResult, policy: string): void {
  expectError(response, 429, 'RateLimitExceeded', { policy });
  const retryAfter = response.headers.get('retry-after');
  expect(retryAfter).toMatch(/^[1-9]\d*$/);
  // A refused request waits for the next unit: the RateLimit field says the same.
  expect(rateLimits(response).get(policy)).toEqual({ r: 0, t: Number(retryAfter) });
}

async function localDecisions(metrics: ProtectionMetrics): Promise<number> {
  const { values } = await metrics.rateLimitLocal.get();
  return values.reduce((sum, value) => sum + value.value, 0);
}

async function redisFailures(metrics: ProtectionMetrics): Promise<number> {
  const { values } = await metrics.redisFailures.get();
  return values.filter((value) => value.labels.feature === 'rate_limit').reduce((sum, value) => sum + value.value, 0);
}

let addressCounter = 0;
/** A client address of its own (TEST-NET-3), sent as X-Forwarded-For to a gateway that trusts the test. */
function freshAddress(): Record<string, string> {
  addressCounter++;
  return { 'x-forwarded-for': `203.0.113.${addressCounter}` };
}

describe('rate limits', () => {
  let stack: TestStack;
  let redis: Redis;

  beforeAll(async () => {
    stack = await TestStack.start({ env: { RATE_LIMIT_APPLICATION: SLOW_LIMIT, RATE_LIMIT_ADDRESS: SLOW_LIMIT, TRUST_PROXY: '127.0.0.1' } });
    redis = new Redis(stack.env.REDIS_URL);
  });
  afterAll(async () => {
    redis?.disconnect();
    await stack?.stop();
  });

  describe('RateLimit headers', () => {
    let tenant: TestTenant;
    let shipments: string;

    beforeAll(async () => {
      tenant = await createTenant(stack);
      shipments = `/v1/accounts/${tenant.accountIds[0]}/shipments`;
    });

    it('are on every answer to an application, success or error, counting down its quota', async () => {
      const answers = [
        await stack.request('GET', shipments, { token: tenant.token }),
        await stack.request('GET', `${shipments}/0190a4a0-0000-7000-8000-000000000000`, { token: tenant.token }),
        await stack.request('GET', `${shipments}?limit=0`, { token: tenant.token }),
        await stack.request('GET', '/v1/no-such-route', { token: tenant.token }),
        await stack.request('POST', shipments, { token: tenant.token, rawBody: '{"name":', headers: { 'content-type': 'application/json' } }),
      ];
      expect(answers.map((answer) => answer.status)).toEqual([200, 404, 400, 404, 400]);
      answers.forEach((answer, index) => {
        expect(answer.headers.get('ratelimit-policy')).toBe(SLOW_POLICY('application'));
        // Each answer used one of the 5; the next arrives 12 s after the first.
        expect(rateLimits(answer).get('application')).toEqual({ r: 4 - index, t: expect.any(Number) });
        expect(rateLimits(answer).get('application')!.t).toBeGreaterThanOrEqual(1);
        expect(rateLimits(answer).get('application')!.t).toBeLessThanOrEqual(12);
      });
    });

    it('are on answers without a valid token, counted per client address', async () => {
      const address = freshAddress();
      const answers = [
        await stack.request('GET', shipments, { headers: address }),
        await stack.request('GET', shipments, { headers: { ...address, authorization: 'Bearer not.a.token' } }),
        await stack.request('GET', '/v1/.well-known/jwks.json', { headers: address }),
        await stack.request('GET', '/v1/no-such-route', { headers: address }),
      ];
      expect(answers.map((answer) => answer.status)).toEqual([401, 401, 200, 404]);
      answers.forEach((answer, index) => {
        expect(answer.headers.get('ratelimit-policy')).toBe(SLOW_POLICY('address'));
        expect(rateLimits(answer).get('address')?.r).toBe(4 - index);
      });
    });

    it('are on token answers, for the address and the failures', async () => {
      const answer = await stack.request('POST', TOKEN_PATH, {
        headers: freshAddress(),
        body: { tenantId: tenant.tenantId, applicationId: tenant.applicationId, applicationSecret: tenant.applicationSecret },
      });
      expect(answer.status).toBe(200);
      expect(answer.headers.get('ratelimit-policy')).toBe(
        '"token-address";q=100000;w=1;tracking-burst=100000, "token-failures";q=100000;w=1;tracking-burst=100000',
      );
      expect([...rateLimits(answer).keys()]).toEqual(['token-address', 'token-failures']);
    });

    it('are not on health probes, which are never limited', async () => {
      const live = await stack.request('GET', '/health/live');
      expect(live.status).toBe(200);
      expect(live.headers.get('ratelimit-policy')).toBeNull();
      expect(live.headers.get('ratelimit')).toBeNull();
    });
  });

  describe('over the limit', () => {
    it('answers 429 RateLimitExceeded with Retry-After, in the envelope, and counts no further', async () => {
      const tenant = await createTenant(stack);
      const path = `/v1/accounts/${tenant.accountIds[0]}/shipments`;
      for (let i = 0; i < 5; i++) expect((await stack.request('GET', path, { token: tenant.token })).status).toBe(200);
      const refused = await stack.request('GET', path, { token: tenant.token });
      expectRateLimited(refused, 'application');
      expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(12);
      expect(refused.headers.get('ratelimit-policy')).toBe(SLOW_POLICY('application'));
      // Refused requests do not use the quota up further.
      expectRateLimited(await stack.request('POST', path, { token: tenant.token, body: { name: 'x' } }), 'application');
    });

    it('limits each application on its own, and anonymous callers per address', async () => {
      const [first, second] = [await createTenant(stack), await createTenant(stack)];
      const path = (tenant: TestTenant) => `/v1/accounts/${tenant.accountIds[0]}/shipments`;
      for (let i = 0; i < 5; i++) await stack.request('GET', path(first), { token: first.token });
      expectRateLimited(await stack.request('GET', path(first), { token: first.token }), 'application');
      expect((await stack.request('GET', path(second), { token: second.token })).status).toBe(200);
      // Without a token, from another address, the application's exhausted quota does not apply.
      const address = freshAddress();
      for (let i = 0; i < 5; i++) expect((await stack.request('GET', path(first), { headers: address })).status).toBe(401);
      expectRateLimited(await stack.request('GET', path(first), { headers: address }), 'address');
      expect((await stack.request('GET', path(first), { headers: freshAddress() })).status).toBe(401);
    });

    it('counts a forged token per address, never against the application it names', async () => {
      const victim = await createTenant(stack);
      const path = `/v1/accounts/${victim.accountIds[0]}/shipments`;
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const forged = await mintToken(stack, victim.applicationId, victim.tenantId, { key: privateKey });
      const address = freshAddress();
      for (let i = 0; i < 5; i++) expect((await stack.request('GET', path, { token: forged, headers: address })).status).toBe(401);
      expectRateLimited(await stack.request('GET', path, { token: forged, headers: address }), 'address');
      const own = await stack.request('GET', path, { token: victim.token });
      expect(own.status).toBe(200);
      expect(rateLimits(own).get('application')?.r).toBe(4);
    });

    it('counts a token that authentication refuses per address, as it answers 401: one verification for both', async () => {
      const victim = await createTenant(stack);
      const path = `/v1/accounts/${victim.accountIds[0]}/shipments`;
      // Signed with the gateway's own key, for a real application, but issued 2 minutes ahead: beyond the
      // 60 s skew, so not a token of ours. Signature, iss, aud and exp alone would pass it.
      const early = await mintToken(stack, victim.applicationId, victim.tenantId, { claims: { iat: Math.floor(Date.now() / 1000) + 120 } });
      const address = freshAddress();
      for (let i = 0; i < 3; i++) {
        const refused = await stack.request('GET', path, { token: early, headers: address });
        expectUnauthorized(refused);
        expect(refused.headers.get('ratelimit-policy')).toBe(SLOW_POLICY('address'));
        expect(rateLimits(refused).get('address')?.r).toBe(4 - i);
      }
      // With a body, refused before the body is read: the same outcome, the same bucket.
      for (let i = 3; i < 5; i++) {
        const refused = await stack.request('POST', path, { token: early, headers: address, body: { name: 'x' } });
        expectUnauthorized(refused);
        expect(rateLimits(refused).get('address')?.r).toBe(4 - i);
      }
      expectRateLimited(await stack.request('GET', path, { token: early, headers: address }), 'address');
      // The application the token names spent nothing.
      const own = await stack.request('GET', path, { token: victim.token });
      expect(own.status).toBe(200);
      expect(rateLimits(own).get('application')?.r).toBe(4);
    });

    it('keeps counting after Redis forgets its scripts (SCRIPT FLUSH, as after a restart)', async () => {
      const tenant = await createTenant(stack);
      const read = () => stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/shipments`, { token: tenant.token });
      expect(rateLimits(await read()).get('application')?.r).toBe(4);
      await redis.script('FLUSH');
      expect(rateLimits(await read()).get('application')?.r).toBe(3);
      expect(rateLimits(await read()).get('application')?.r).toBe(2);
    });

    it('counts an IPv6 client by its /64 network', async () => {
      const send = (address: string) => stack.request('GET', '/v1/.well-known/jwks.json', { headers: { 'x-forwarded-for': address } });
      for (let i = 1; i <= 5; i++) expect((await send(`2001:db8:77:1::${i}`)).status).toBe(200);
      expectRateLimited(await send('2001:db8:77:1:abcd::1'), 'address');
      expect((await send('2001:db8:77:2::1')).status).toBe(200);
    });

    it('keeps buckets under REDIS_KEY_PREFIX, expiring once they would be full again', async () => {
      const tenant = await createTenant(stack);
      await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/shipments`, { token: tenant.token });
      const key = `${stack.env.REDIS_KEY_PREFIX}ratelimit:application:${tenant.applicationId}`;
      const ttl = await redis.pttl(key);
      // One request of 5 a minute: full again 12 s later.
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(12000);
    });
  });

  describe('per-tenant overrides', () => {
    it('replace the application limit of that tenant only', async () => {
      const [favoured, ordinary] = [await createTenant(stack), await createTenant(stack)];
      const replica = await stack.startGatewayReplica({
        RATE_LIMIT_TENANT_OVERRIDES: JSON.stringify({ [favoured.tenantId]: { application: '8/1m burst 8' } }),
      });
      const send = (tenant: TestTenant) =>
        stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/shipments`, { token: tenant.token, baseUrl: replica });
      const favouredAnswers = [];
      for (let i = 0; i < 9; i++) favouredAnswers.push(await send(favoured));
      expect(favouredAnswers.slice(0, 8).map((answer) => answer.status)).toEqual(new Array(8).fill(200));
      expect(favouredAnswers[0]!.headers.get('ratelimit-policy')).toBe('"application";q=8;w=60;tracking-burst=8');
      expectRateLimited(favouredAnswers[8]!, 'application');

      const ordinaryAnswers = [];
      for (let i = 0; i < 6; i++) ordinaryAnswers.push(await send(ordinary));
      expect(ordinaryAnswers[0]!.headers.get('ratelimit-policy')).toBe(SLOW_POLICY('application'));
      expect(ordinaryAnswers.slice(0, 5).map((answer) => answer.status)).toEqual(new Array(5).fill(200));
      expectRateLimited(ordinaryAnswers[5]!, 'application');
    });
  });

  describe('POST /v1/applications/token', () => {
    let replica: string;

    beforeAll(async () => {
      replica = await stack.startGatewayReplica({ RATE_LIMIT_TOKEN_FAILURES: '3/1m', RATE_LIMIT_TOKEN_ADDRESS: '8/1m' });
    });

    /** A tenant with an application, made without the token endpoint. */
    async function credentials() {
      const { tenantId } = await stack.identity.createTenant('Token limits');
      const { accountId } = await stack.identity.createAccount(tenantId, 'Main');
      const application = await stack.identity.createApplication(tenantId, 'App', 'Admin', [accountId]);
      return { tenantId, ...application };
    }

    function requestToken(body: object, address: Record<string, string>) {
      return stack.request('POST', TOKEN_PATH, { body, headers: address, baseUrl: replica });
    }

    /** Secrets the replica has hashed so far (scrypt runs), from its metrics. */
    async function secretsHashed(): Promise<number> {
      const counter = stack.gatewayReplicas[0]!.get(ServiceMetrics).registry.getSingleMetric('gateway_secret_verifications_total');
      const { values } = await counter!.get();
      return values.filter((value) => value.labels.outcome === 'matched' || value.labels.outcome === 'mismatched').reduce((sum, value) => sum + value.value, 0);
    }

    it('locks out the address that sends wrong secrets, never a good client elsewhere', async () => {
      const target = await credentials();
      const attacker = freshAddress();
      const wrongSecret = { ...target, applicationSecret: 'wrong' };
      for (let i = 0; i < 3; i++) expect((await requestToken(wrongSecret, attacker)).status).toBe(401);
      const hashedBefore = await secretsHashed();
      expectRateLimited(await requestToken(wrongSecret, attacker), 'token-failures');
      // Other tenant ids in the body do not help against the same application: it has a bucket of its own.
      expectRateLimited(await requestToken({ ...wrongSecret, tenantId: (await credentials()).tenantId }, attacker), 'token-failures');
      // Refused before the secret is checked: the lockout costs no hash.
      expect(await secretsHashed()).toBe(hashedBefore);
      // The same tenant and application, with the right secret from another address, while the attack goes on.
      for (let i = 0; i < 2; i++) {
        expect((await requestToken(target, freshAddress())).status).toBe(200);
        expectRateLimited(await requestToken(wrongSecret, attacker), 'token-failures');
      }
      // The attacker's address is locked out of that tenant only as far as failures go: another tenant's
      // wrong secret still gets its 401.
      expect((await requestToken({ ...(await credentials()), applicationSecret: 'wrong' }, attacker)).status).toBe(401);
    });

    it('counts only failed attempts: successes charge nothing', async () => {
      const tenant = await credentials();
      const address = freshAddress();
      for (let i = 0; i < 3; i++) expect((await requestToken(tenant, address)).status).toBe(200);
      const wrongSecret = { ...tenant, applicationSecret: 'wrong' };
      for (let i = 0; i < 3; i++) expect((await requestToken(wrongSecret, address)).status).toBe(401);
      const refused = await requestToken(wrongSecret, address);
      expectRateLimited(refused, 'token-failures');
      expect(refused.headers.get('ratelimit-policy')).toBe('"token-address";q=8;w=60;tracking-burst=8, "token-failures";q=3;w=60;tracking-burst=3');
      // Failures from one address lock the good secret out of that address too, until the bucket refills.
      expectRateLimited(await requestToken(tenant, address), 'token-failures');
    });

    describe('under concurrency', () => {
      let busy: string;
      let busyIndex: number;

      beforeAll(async () => {
        // Room for every request of the burst in token-address and in the hashing queue: only token-failures is under test.
        busy = await stack.startGatewayReplica({ RATE_LIMIT_TOKEN_FAILURES: '3/1m', RATE_LIMIT_TOKEN_ADDRESS: '1000/1m', TOKEN_HASH_QUEUE: '64' });
        busyIndex = stack.gatewayReplicas.length - 1;
      });

      const burst = (body: object, address: Record<string, string>, count: number) =>
        Promise.all(Array.from({ length: count }, () => stack.request('POST', TOKEN_PATH, { body, headers: address, baseUrl: busy })));
      async function hashedOnBusy(): Promise<number> {
        const counter = stack.gatewayReplicas[busyIndex]!.get(ServiceMetrics).registry.getSingleMetric('gateway_secret_verifications_total');
        const { values } = await counter!.get();
        return values.filter((value) => value.labels.outcome === 'matched' || value.labels.outcome === 'mismatched').reduce((sum, value) => sum + value.value, 0);
      }

      it('gives 24 good clients started at once from one address their tokens: attempts in progress are not failures', async () => {
        const answers = await burst(await credentials(), freshAddress(), 24);
        const statuses = answers.map((answer) => (answer.status === 429 ? `429 ${answer.body.error.details.policy}` : String(answer.status)));
        expect(statuses).toEqual(new Array(24).fill('200'));
      });

      it('still lets a parallel burst of wrong secrets hash no more than the failure bucket holds', async () => {
        const target = await credentials();
        const hashedBefore = await hashedOnBusy();
        const answers = await burst({ ...target, applicationSecret: 'wrong' }, freshAddress(), 12);
        const statuses = answers.map((answer) => answer.status).sort();
        expect(statuses).toEqual([...new Array(3).fill(401), ...new Array(9).fill(429)]);
        for (const answer of answers.filter((entry) => entry.status === 429)) expectRateLimited(answer, 'token-failures');
        expect(await hashedOnBusy()).toBe(hashedBefore + 3);
      });

      it('lets a good client through while wrong secrets from its address are still being checked, as long as the bucket has room', async () => {
        const target = await credentials();
        const address = freshAddress();
        const [wrong, good] = await Promise.all([
          burst({ ...target, applicationSecret: 'wrong' }, address, 2),
          burst(target, address, 4),
        ]);
        expect(wrong.map((answer) => answer.status)).toEqual([401, 401]);
        expect(good.map((answer) => answer.status)).toEqual([200, 200, 200, 200]);
      });
    });

    it('limits each client address, whatever the tenant', async () => {
      const address = freshAddress();
      for (let i = 0; i < 8; i++) expect((await requestToken(await credentials(), address)).status).toBe(200);
      const refused = await requestToken(await credentials(), address);
      expectRateLimited(refused, 'token-address');
      expect(refused.headers.get('ratelimit-policy')).toBe('"token-address";q=8;w=60;tracking-burst=8');
      expect((await requestToken(await credentials(), freshAddress())).status).toBe(200);
    });

    it('is separate from the application limit', async () => {
      const tenant = await createTenant(stack);
      const address = freshAddress();
      const { tenantId, applicationId } = tenant;
      for (let i = 0; i < 3; i++) expect((await requestToken({ tenantId, applicationId, applicationSecret: 'wrong' }, address)).status).toBe(401);
      expectRateLimited(await requestToken({ tenantId, applicationId, applicationSecret: tenant.applicationSecret }, address), 'token-failures');
      // The application's own quota is untouched by its token requests.
      const list = await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/shipments`, { token: tenant.token, baseUrl: replica });
      expect(list.status).toBe(200);
      expect(rateLimits(list).get('application')?.r).toBe(4);
    });
  });

  describe('two replicas and a client sending as fast as it can', () => {
    it('accepts no more than rate × elapsed + burst, within 5 %', async () => {
      const limit = { rate: 25, burst: 10 };
      // A loaded machine must not turn slow Redis answers into uncounted (fail-open) requests here.
      const env = { RATE_LIMIT_APPLICATION: `${limit.rate}/1s burst ${limit.burst}`, REDIS_COMMAND_TIMEOUT_MS: '5000' };
      const replicas = [await stack.startGatewayReplica(env), await stack.startGatewayReplica(env)];
      const tenant = await createTenant(stack);
      // A route the gateway answers itself: the client's pace is then set by the limiter, not by how fast
      // the OMS and PostgreSQL answer on a shared machine. With the token, it counts for the application.
      const path = '/v1/.well-known/jwks.json';
      const statuses = new Map<number, number>();
      let uncounted = 0;
      const workers = 24;
      const runMs = 4000;

      const started = performance.now();
      await Promise.all(
        Array.from({ length: workers }, async (_, worker) => {
          while (performance.now() - started < runMs) {
            const { status, headers } = await stack.request('GET', path, { token: tenant.token, baseUrl: replicas[worker % 2] });
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
            if (headers.get('ratelimit') === null) uncounted++;
          }
        }),
      );
      const elapsedSeconds = (performance.now() - started) / 1000;

      const accepted = statuses.get(200) ?? 0;
      const allowed = limit.rate * elapsedSeconds + limit.burst;
      const refused = statuses.get(429) ?? 0;
      console.info(
        `rate limit accuracy: ${accepted} accepted of ${accepted + refused} sent in ${elapsedSeconds.toFixed(2)} s ` +
          `across 2 replicas; allowed ${allowed.toFixed(1)} (${((accepted / allowed) * 100).toFixed(1)} %)`,
      );
      expect([...statuses.keys()].sort()).toEqual([200, 429]);
      expect(uncounted).toBe(0);
      // The client did ask for more than the limit allows, or the bound below would prove nothing.
      expect(accepted + refused).toBeGreaterThan(allowed * 1.2);
      expect(accepted).toBeLessThanOrEqual(allowed * 1.05);
      // A floor against gross miscounting only (counting each request twice would accept about 55 %):
      // when the shared machine pauses this process, the client sends nothing while the bucket
      // overflows, so fewer than allowed get through.
      expect(accepted).toBeGreaterThanOrEqual(allowed * 0.65);
    });
  });

  describe('without Redis', () => {
    it('keeps serving and still limits, each replica on its own, counting the failures', async () => {
      const tenant = await createTenant(stack);
      const replica = await stack.startGatewayReplica({ REDIS_URL: 'redis://127.0.0.1:1' });
      const metrics = stack.gatewayReplicas.at(-1)!.get(ProtectionMetrics);
      const before = await redisFailures(metrics);

      const path = `/v1/accounts/${tenant.accountIds[0]}/shipments`;
      const answers = [];
      // Beyond the application's 5 a minute: this replica's own bucket holds the limit.
      for (let i = 0; i < 7; i++) answers.push(await stack.request('GET', path, { token: tenant.token, baseUrl: replica }));
      answers.push(await stack.request('GET', path, { baseUrl: replica }));
      expect(answers.map((answer) => answer.status)).toEqual([...new Array(5).fill(200), 429, 429, 401]);
      expectRateLimited(answers[5]!, 'application');
      expect(answers[0]!.headers.get('ratelimit-policy')).toBe(SLOW_POLICY('application'));
      expect(rateLimits(answers[0]!).get('application')).toEqual({ r: 4, t: 12 });
      expect(await redisFailures(metrics)).toBe(before + answers.length);
      expect(await localDecisions(metrics)).toBe(answers.length);

      const ready = await stack.request('GET', '/health/ready', { baseUrl: replica });
      expect(ready.status).toBe(200);
      expect(ready.body.checks.redis).toBe('failing');
    });

    it('decides locally at once while Redis is slower than REDIS_COMMAND_TIMEOUT_MS, and goes back to Redis once it answers in time', async () => {
      const server = await OwnRedisServer.start();
      const control = new Redis({ port: server.port, lazyConnect: true, retryStrategy: () => null });
      control.on('error', () => undefined);
      try {
        await control.connect();
        const tenant = await createTenant(stack);
        const replica = await stack.startGatewayReplica({ REDIS_URL: server.url, REDIS_COMMAND_TIMEOUT_MS: '100' });
        const metrics = stack.gatewayReplicas.at(-1)!.get(ProtectionMetrics);
        const path = '/v1/.well-known/jwks.json';
        const get = () => stack.request('GET', path, { token: tenant.token, baseUrl: replica });
        expect((await get()).status).toBe(200);
        expect(await localDecisions(metrics)).toBe(0);
        // The script writes, so CLIENT PAUSE WRITE holds every rate limit command for 3 s: far over the 100 ms timeout.
        await control.call('CLIENT', 'PAUSE', '3000', 'WRITE');
        const during = [];
        for (let i = 0; i < 6; i++) during.push(await get());
        // The first waits out the timeout, the others are decided at once; the replica's own bucket (5 a minute,
        // counting from the first local decision) holds the limit: the sixth is refused.
        expect(during.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200, 429]);
        expectRateLimited(during[5]!, 'application');
        expect(await localDecisions(metrics)).toBe(6);
        // After the pause, the first command answered in time (a probe: one at a time while Redis is slow) hands the
        // decisions back to Redis, whose bucket holds at least the request before the pause, the one whose command
        // timed out (Redis ran it once the pause ended) and this one.
        await control.set('after-the-pause', '1');
        const back = await eventually(
          async () => {
            const before = await localDecisions(metrics);
            const answer = await get();
            return { answer, local: (await localDecisions(metrics)) - before };
          },
          ({ local }) => local === 0,
          'a decision by Redis again',
        );
        expect(back.answer.status).toBe(200);
        expect(rateLimits(back.answer).get('application')!.r).toBeLessThanOrEqual(2);
      } finally {
        control.disconnect();
        await server.stop();
      }
    });
  });
});
