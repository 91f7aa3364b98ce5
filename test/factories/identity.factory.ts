import type { TestStack } from '../support/stack.js';

export interface TestTenant {
  tenantId: string;
  accountIds: string[];
  applicationId: string;
  applicationSecret: string;
  token: string;
}

export interface TenantOverrides {
  accounts?: number;
  role?: 'Admin' | 'Operator' | 'Viewer' | 'Ingest';
  /** Which of the created accounts the application's role covers; default all (`*`). */
  roleAccounts?: 'all' | number[];
}

/** A tenant with accounts and one application, and a token for it minted through the real endpoint. */
export async function createTenant(stack: TestStack, overrides: TenantOverrides = {}): Promise<TestTenant> {
  const { tenantId } = await stack.identity.createTenant(`Tenant ${Math.random().toString(36).slice(2, 7)}`);
  const accountIds: string[] = [];
  for (let i = 0; i < (overrides.accounts ?? 1); i++) {
    accountIds.push((await stack.identity.createAccount(tenantId, `Account ${i + 1}`)).accountId);
  }
  const roleAccounts = overrides.roleAccounts ?? 'all';
  const credentials = await stack.identity.createApplication(
    tenantId,
    'Test application',
    overrides.role ?? 'Admin',
    roleAccounts === 'all' ? '*' : roleAccounts.map((index) => accountIds[index]!),
  );
  const token = await issueToken(stack, tenantId, credentials.applicationId, credentials.applicationSecret);
  return { tenantId, accountIds, ...credentials, token };
}

export async function issueToken(stack: TestStack, tenantId: string, applicationId: string, applicationSecret: string): Promise<string> {
  const response = await stack.request('POST', '/v1/applications/token', { body: { tenantId, applicationId, applicationSecret } });
  if (response.status !== 200) throw new Error(`token request failed: ${response.status} ${response.text}`);
  return response.body.accessToken as string;
}
