import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, issueToken, type TestTenant } from '../factories/identity.factory.js';
import { expectInvalidParameter } from '../support/http-assertions.js';
import { type HttpResult, TestStack } from '../support/stack.js';
import { expectUnauthorized } from '../support/tokens.js';

interface AccountItem {
  id: string;
  name: string;
  role: string;
}

/** `GET /v1/accounts`: the accounts of the token's tenant that the application holds a role on, paged like every collection. */
describe('GET /v1/accounts', () => {
  let stack: TestStack;
  /** Admin on all five accounts of its tenant. */
  let admin: TestTenant;
  /** Another tenant, whose accounts must never show. */
  let foreign: TestTenant;

  beforeAll(async () => {
    stack = await TestStack.start();
    [admin, foreign] = await Promise.all([createTenant(stack, { accounts: 5 }), createTenant(stack, { accounts: 2 })]);
  });
  afterAll(() => stack?.stop());

  const list = (token: string, query = ''): Promise<HttpResult> => stack.request('GET', `/v1/accounts${query ? `?${query}` : ''}`, { token });

  it("lists every account of the tenant, oldest first, with its name and the application's role, and none of another tenant", async () => {
    const response = await list(admin.token);
    expect(response.status, response.text).toBe(200);
    expect(Object.keys(response.body).sort()).toEqual(['items', 'metadata']);
    expect(response.body.items).toEqual(admin.accountIds.map((id, i) => ({ id, name: `Account ${i + 1}`, role: 'Admin' })));
    expect(response.body.metadata).toEqual({ nextCursor: null });
    for (const id of foreign.accountIds) expect(response.text).not.toContain(id);
    expect(response.text).not.toContain(foreign.tenantId);

    const theirs = await list(foreign.token, 'includeTotal=true');
    expect(theirs.body.items.map((account: AccountItem) => account.id)).toEqual(foreign.accountIds);
    expect(theirs.body.metadata).toEqual({ nextCursor: null, total: 2 });
  });

  it('pages with limit and cursor, each account exactly once, and counts with includeTotal', async () => {
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | null = null;
    do {
      const query = new URLSearchParams({ limit: '2', includeTotal: 'true' });
      if (cursor) query.set('cursor', cursor);
      const page = await list(admin.token, query.toString());
      expect(page.status, page.text).toBe(200);
      expect(page.body.metadata.total).toBe(5);
      seen.push(...page.body.items.map((account: AccountItem) => account.id));
      sizes.push(page.body.items.length);
      cursor = page.body.metadata.nextCursor;
    } while (cursor);
    expect(sizes).toEqual([2, 2, 1]);
    expect(seen).toEqual(admin.accountIds);
  });

  it('shows an application only the accounts its roles name, with its role on each', async () => {
    const viewer = await stack.identity.createApplication(admin.tenantId, 'Viewer of two', 'Viewer', [admin.accountIds[3]!, admin.accountIds[1]!]);
    const token = await issueToken(stack, admin.tenantId, viewer.applicationId, viewer.applicationSecret);
    const response = await list(token);
    expect(response.status, response.text).toBe(200);
    expect(response.body.items).toEqual([
      { id: admin.accountIds[1], name: 'Account 2', role: 'Viewer' },
      { id: admin.accountIds[3], name: 'Account 4', role: 'Viewer' },
    ]);
  });

  it('names the strongest role when several assignments cover an account', async () => {
    const app = await stack.identity.createApplication(admin.tenantId, 'Mixed roles', 'Viewer', '*');
    // Provisioning grants one role; a second assignment is written as the identity database holds it.
    await stack.gateway
      .get(DataSource)
      .query('UPDATE applications SET role_assignments = $2 WHERE id = $1', [
        app.applicationId,
        JSON.stringify([
          { role: 'Viewer', accountIds: '*' },
          { role: 'Operator', accountIds: [admin.accountIds[2]] },
        ]),
      ]);
    const token = await issueToken(stack, admin.tenantId, app.applicationId, app.applicationSecret);
    const response = await list(token);
    expect(response.status, response.text).toBe(200);
    expect(response.body.items.map((account: AccountItem) => account.role)).toEqual(['Viewer', 'Viewer', 'Operator', 'Viewer', 'Viewer']);
  });

  it('answers any valid token, an Ingest application included', async () => {
    const ingest = await createTenant(stack, { role: 'Ingest' });
    const response = await list(ingest.token);
    expect(response.status, response.text).toBe(200);
    expect(response.body.items).toEqual([{ id: ingest.accountIds[0], name: 'Account 1', role: 'Ingest' }]);
  });

  it('refuses bad paging parameters with 400 InvalidParameter', async () => {
    expectInvalidParameter(await list(admin.token, 'limit=0'), 'limit', 'OutOfRange');
    expectInvalidParameter(await list(admin.token, 'limit=101'), 'limit', 'OutOfRange');
    expectInvalidParameter(await list(admin.token, 'limit=2.5'), 'limit', 'InvalidFormat');
    expectInvalidParameter(await list(admin.token, 'includeTotal=yes'), 'includeTotal', 'InvalidFormat');
    expectInvalidParameter(await list(admin.token, 'cursor=forged.cursor'), 'cursor', 'InvalidCursor');
    expectInvalidParameter(await list(admin.token, 'sort=name'), 'sort', 'UnknownField');
  });

  it("refuses another application's cursor, even of the same tenant", async () => {
    const first = await list(admin.token, 'limit=1');
    const cursor = first.body.metadata.nextCursor as string;
    expect(cursor).toEqual(expect.any(String));
    const other = await stack.identity.createApplication(admin.tenantId, 'Second admin', 'Admin', '*');
    const token = await issueToken(stack, admin.tenantId, other.applicationId, other.applicationSecret);
    expectInvalidParameter(await list(token, `limit=1&cursor=${encodeURIComponent(cursor)}`), 'cursor', 'InvalidCursor');
    expectInvalidParameter(await list(foreign.token, `limit=1&cursor=${encodeURIComponent(cursor)}`), 'cursor', 'InvalidCursor');
  });

  it('is 401 without a valid token', async () => {
    expectUnauthorized(await stack.request('GET', '/v1/accounts'));
    expectUnauthorized(await stack.request('GET', '/v1/accounts', { token: 'not.a.token' }));
  });
});
