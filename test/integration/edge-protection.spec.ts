import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProtectionMetrics } from '../../apps/gateway/src/protection/protection.metrics.js';
import { bulkRetirePath } from '../factories/bulk.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { expectError } from '../support/http-assertions.js';
import { TestStack } from '../support/stack.js';

const MIB = 1024 * 1024;
const JSON_TYPE = { 'content-type': 'application/json' };

/**
 * The gateway's edge against hostile or careless clients: what it costs to send a body without a token,
 * the cost of `/health/ready`, slow clients, the HTTP parser's own errors, the addresses it binds and
 * what it does when it stops.
 */
describe('edge protection', () => {
  let stack: TestStack;
  let tenant: TestTenant;

  beforeAll(async () => {
    stack = await TestStack.start();
    tenant = await createTenant(stack);
  });
  afterAll(() => stack?.stop());

  /** JSON bodies the gateway's parser has read so far, by outcome. */
  async function jsonBodies(): Promise<Record<string, number>> {
    const { values } = await stack.gateway.get(ProtectionMetrics).jsonBodies.get();
    return Object.fromEntries(values.map((sample) => [String(sample.labels.outcome), sample.value]));
  }

  describe('bodies of authenticated routes', () => {
    const deep = '['.repeat(4 * MIB - 16);

    it('401 without a token before the body is read: 4 MiB of nesting, invalid JSON and a wrong content type alike', async () => {
      const before = await jsonBodies();
      const path = bulkRetirePath(tenant);
      const answers = await Promise.all([
        stack.request('POST', path, { rawBody: deep, headers: JSON_TYPE }),
        stack.request('POST', path, { rawBody: deep, headers: { ...JSON_TYPE, authorization: 'Bearer a.b.c' } }),
        stack.request('POST', `/v1/accounts/${tenant.accountIds[0]}/shipments`, { rawBody: '{"name":', headers: JSON_TYPE }),
        stack.request('POST', `/v1/accounts/${tenant.accountIds[0]}/shipments`, { rawBody: 'name=x', headers: { 'content-type': 'text/plain' } }),
      ]);
      for (const answer of answers) expect({ status: answer.status, code: answer.body?.error?.code }).toEqual({ status: 401, code: 'Unauthorized' });
      // Not one of them reached the JSON parser.
      expect(await jsonBodies()).toEqual(before);
    });

    it('with a token, 400 MalformedRequest for 4 MiB of nesting, refused by the depth scan before JSON.parse', async () => {
      const before = await jsonBodies();
      const answer = await stack.request('POST', bulkRetirePath(tenant), { token: tenant.token, rawBody: deep, headers: JSON_TYPE });
      expectError(answer, 400, 'MalformedRequest');
      expect(answer.body.error.message).toContain('deeper than 32 levels');
      const after = await jsonBodies();
      expect((after.too_deep ?? 0) - (before.too_deep ?? 0)).toBe(1);
      expect(after.parsed ?? 0).toBe(before.parsed ?? 0);
      expect(after.invalid ?? 0).toBe(before.invalid ?? 0);
    });

    it('counts brackets inside strings as text: a deep-looking string is parsed', async () => {
      const before = await jsonBodies();
      const answer = await stack.request('POST', `/v1/accounts/${tenant.accountIds[0]}/shipments`, {
        token: tenant.token,
        rawBody: JSON.stringify({ name: `${'[{'.repeat(40)}\\"${'"'.repeat(3)}` }),
        headers: JSON_TYPE,
      });
      expect(answer.status, answer.text).toBe(201);
      expect((await jsonBodies()).parsed).toBe((before.parsed ?? 0) + 1);
    });

    it('the token request reads at most 16 KiB: one byte more is 413 PayloadTooLarge', async () => {
      const body = (size: number) => `{"x":"${'a'.repeat(size - 8)}"}`;
      expect(body(16 * 1024).length).toBe(16 * 1024);
      expectError(await stack.request('POST', '/v1/applications/token', { rawBody: body(16 * 1024 + 1), headers: JSON_TYPE }), 413, 'PayloadTooLarge');
      // At the limit the body is read, and refused for what it says.
      expectError(await stack.request('POST', '/v1/applications/token', { rawBody: body(16 * 1024), headers: JSON_TYPE }), 400, 'InvalidParameter', {
        field: 'x',
        issue: 'UnknownField',
      });
    });
  });
});
