import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { TestStack } from '../support/stack.js';

describe('the stack end to end', () => {
  let stack: TestStack;
  let tenant: TestTenant;

  beforeAll(async () => {
    stack = await TestStack.start();
    tenant = await createTenant(stack);
  });
  afterAll(() => stack?.stop());

  it('creates a shipment and lists it', async () => {
    const path = `/v1/accounts/${tenant.accountIds[0]}/shipments`;
    const created = await stack.request('POST', path, { token: tenant.token, body: { name: 'First' } });
    expect(created.status).toBe(201);
    const listed = await stack.request('GET', path, { token: tenant.token });
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((s: { id: string }) => s.id)).toEqual([created.body.id]);
  });

  it('is ready when the database, NATS and both services answer, and reports Redis', async () => {
    const ready = await stack.request('GET', '/health/ready');
    expect(ready.body).toEqual({ status: 'ok', checks: { database: 'ok', nats: 'ok', oms: 'ok', dms: 'ok', redis: 'ok' } });
  });
});
