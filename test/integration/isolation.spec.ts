import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { TestStack } from '../support/stack.js';

/**
 * Two stacks on one NATS server, as two test runs (or two environments) would be: each has its own
 * subject prefix, so neither ever answers the other's requests.
 */
describe('subject prefixes', () => {
  let first: TestStack;
  let second: TestStack;
  let tenant: TestTenant;

  beforeAll(async () => {
    [first, second] = await Promise.all([TestStack.start(), TestStack.start()]);
    tenant = await createTenant(first);
  });
  afterAll(async () => {
    await Promise.all([first?.stop(), second?.stop()]);
  });

  it('uses a different prefix per stack', () => {
    expect(first.env.NATS_SUBJECT_PREFIX).not.toBe(second.env.NATS_SUBJECT_PREFIX);
  });

  it("never lets another stack's OMS answer: without its own OMS a gateway gets 503", async () => {
    const path = `/v1/accounts/${tenant.accountIds[0]}/shipments`;
    expect((await first.request('GET', path, { token: tenant.token })).status).toBe(200);

    await first.stopOmsReplicas();
    const unavailable = await first.request('GET', path, { token: tenant.token });
    expect(unavailable.status).toBe(503);
    expect(unavailable.body.error.code).toBe('ServiceUnavailable');
    expect(unavailable.headers.get('retry-after')).toBe('1');
    // The second stack's OMS is up on the same NATS server all along.
    expect((await second.request('GET', '/health/ready')).status).toBe(200);

    const ready = await first.request('GET', '/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body.checks).toMatchObject({ oms: 'failing', dms: 'ok', database: 'ok', nats: 'ok' });

    await first.startOmsReplica();
    expect((await first.request('GET', path, { token: tenant.token })).status).toBe(200);
  });
});
