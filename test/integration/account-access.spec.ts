import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { expectError, expectInvalidParameter } from '../support/http-assertions.js';
import { TestStack } from '../support/stack.js';
import { expectUnauthorized } from '../support/tokens.js';

const shipments = (accountId: string) => `/v1/accounts/${accountId}/shipments`;

describe('account checks on /v1/accounts/{accountId}/... (API.md order: 401, 400, 403)', () => {
  let stack: TestStack;
  /** Admin on every account of its tenant. */
  let admin: TestTenant;
  /** Another tenant, with a shipment whose name must never leak. */
  let foreign: TestTenant;
  let foreignShipment: { id: string; name: string };

  beforeAll(async () => {
    stack = await TestStack.start();
    admin = await createTenant(stack, { accounts: 2 });
    foreign = await createTenant(stack);
    const created = await stack.request('POST', shipments(foreign.accountIds[0]!), {
      token: foreign.token,
      body: { name: 'Secret cargo of the other tenant' },
    });
    expect(created.status, created.text).toBe(201);
    foreignShipment = created.body;
  });
  afterAll(() => stack?.stop());

  describe('400 AccountNotFound', () => {
    it('for an account that does not exist', async () => {
      const response = await stack.request('GET', shipments('0190c6a4-6f1e-7c39-9d52-5b1f2f6c1a2b'), { token: admin.token });
      expectInvalidParameter(response, 'accountId', 'AccountNotFound');
    });

    it('for an account id that is not a UUID', async () => {
      expectInvalidParameter(await stack.request('GET', shipments('not-a-uuid'), { token: admin.token }), 'accountId', 'AccountNotFound');
    });

    it('for an account of another tenant, revealing nothing about it', async () => {
      const response = await stack.request('GET', shipments(foreign.accountIds[0]!), { token: admin.token });
      expectInvalidParameter(response, 'accountId', 'AccountNotFound');
      expect(response.text).not.toContain(foreignShipment.id);
      expect(response.text).not.toContain(foreignShipment.name);
      expect(response.text).not.toContain(foreign.tenantId);
    });

    it('with the same code, message and details whether the account is foreign or missing', async () => {
      const missing = await stack.request('GET', shipments('0190c6a4-6f1e-7c39-9d52-5b1f2f6c1a2b'), { token: admin.token });
      const foreignAccount = await stack.request('GET', shipments(foreign.accountIds[0]!), { token: admin.token });
      const { id: _missingId, ...missingError } = missing.body.error;
      const { id: _foreignId, ...foreignError } = foreignAccount.body.error;
      expect(foreignError).toEqual(missingError);
    });

    it('for writes into another tenant’s account, which stay undone', async () => {
      const response = await stack.request('POST', shipments(foreign.accountIds[0]!), { token: admin.token, body: { name: 'Injected' } });
      expectInvalidParameter(response, 'accountId', 'AccountNotFound');
      const listed = await stack.request('GET', shipments(foreign.accountIds[0]!), { token: foreign.token });
      expect(listed.body.items.map((shipment: { id: string }) => shipment.id)).toEqual([foreignShipment.id]);
    });

    it('before the body is validated', async () => {
      const response = await stack.request('POST', shipments(foreign.accountIds[0]!), { token: admin.token, body: { bogus: 1 } });
      expectInvalidParameter(response, 'accountId', 'AccountNotFound');
    });
  });

  describe('401 before 400', () => {
    it('a forged token on another tenant’s account', async () => {
      const forged = `${foreign.token.slice(0, -4)}AAAA`;
      expectUnauthorized(await stack.request('GET', shipments(foreign.accountIds[0]!), { token: forged }));
    });

    it('no token on an account that does not exist', async () => {
      expectUnauthorized(await stack.request('GET', shipments('0190c6a4-6f1e-7c39-9d52-5b1f2f6c1a2b')));
    });

    it('a malformed token on an account id that is not a UUID', async () => {
      expectUnauthorized(await stack.request('GET', shipments('not-a-uuid'), { token: 'abc' }));
    });
  });

  describe('403 Forbidden', () => {
    let narrow: TestTenant;

    beforeAll(async () => {
      narrow = await createTenant(stack, { accounts: 2, role: 'Admin', roleAccounts: [0] });
    });

    it('for an account of its own tenant that its role does not cover', async () => {
      expectError(await stack.request('GET', shipments(narrow.accountIds[1]!), { token: narrow.token }), 403, 'Forbidden');
      const write = await stack.request('POST', shipments(narrow.accountIds[1]!), { token: narrow.token, body: { name: 'X' } });
      expectError(write, 403, 'Forbidden');
    });

    it('but not for the account its role covers', async () => {
      expect((await stack.request('GET', shipments(narrow.accountIds[0]!), { token: narrow.token })).status).toBe(200);
    });

    it('not for the covered account written in capitals (UUIDs are case-insensitive)', async () => {
      const upper = narrow.accountIds[0]!.toUpperCase();
      const created = await stack.request('POST', shipments(upper), { token: narrow.token, body: { name: 'Upper' } });
      expect(created.status, created.text).toBe(201);
      const listed = await stack.request('GET', shipments(narrow.accountIds[0]!), { token: narrow.token });
      expect(listed.body.items.map((shipment: { id: string }) => shipment.id)).toContain(created.body.id);
    });

    it('after the account check: a missing account is still 400', async () => {
      const response = await stack.request('GET', shipments('0190c6a4-6f1e-7c39-9d52-5b1f2f6c1a2b'), { token: narrow.token });
      expectInvalidParameter(response, 'accountId', 'AccountNotFound');
    });
  });

  describe('roles', () => {
    it('Viewer reads but does not write', async () => {
      const viewer = await createTenant(stack, { role: 'Viewer' });
      const path = shipments(viewer.accountIds[0]!);
      expect((await stack.request('GET', path, { token: viewer.token })).status).toBe(200);
      expectError(await stack.request('POST', path, { token: viewer.token, body: { name: 'Not allowed' } }), 403, 'Forbidden');
      // 403 is decided before the body is looked at.
      expectError(await stack.request('POST', path, { token: viewer.token, body: { bogus: true } }), 403, 'Forbidden');
      expect((await stack.request('GET', path, { token: viewer.token })).body.items).toEqual([]);
    });

    it('Operator reads and writes', async () => {
      const operator = await createTenant(stack, { role: 'Operator' });
      const path = shipments(operator.accountIds[0]!);
      const created = await stack.request('POST', path, { token: operator.token, body: { name: 'Allowed' } });
      expect(created.status, created.text).toBe(201);
      const listed = await stack.request('GET', path, { token: operator.token });
      expect(listed.status).toBe(200);
      expect(listed.body.items.map((shipment: { id: string }) => shipment.id)).toEqual([created.body.id]);
    });

    it('Admin on every account of its tenant ("*")', async () => {
      for (const accountId of admin.accountIds) {
        expect((await stack.request('GET', shipments(accountId), { token: admin.token })).status).toBe(200);
      }
    });

    it('Operator limited to one account does not reach the tenant’s other account', async () => {
      const limited = await createTenant(stack, { accounts: 2, role: 'Operator', roleAccounts: [1] });
      expectError(await stack.request('GET', shipments(limited.accountIds[0]!), { token: limited.token }), 403, 'Forbidden');
      expect((await stack.request('GET', shipments(limited.accountIds[1]!), { token: limited.token })).status).toBe(200);
    });
  });
});
