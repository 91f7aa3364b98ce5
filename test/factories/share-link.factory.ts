import type { TestTenant } from './identity.factory.js';
import type { TestStack } from '../support/stack.js';

export interface CreatedShareLink {
  id: string;
  url: string;
  /** The url's last segment: what the public routes take. */
  token: string;
  expiresAt: string;
  createdAt: string;
  revokedAt: string | null;
}

/** A share link of the shipment created through the real endpoint; fails loudly when refused. */
export async function createShareLink(
  stack: TestStack,
  tenant: TestTenant,
  shipmentId: string,
  options: { account?: number; body?: Record<string, unknown> } = {},
): Promise<CreatedShareLink> {
  const accountId = tenant.accountIds[options.account ?? 0]!;
  const response = await stack.request('POST', `/v1/accounts/${accountId}/shipments/${shipmentId}/share-links`, { token: tenant.token, body: options.body ?? {} });
  if (response.status !== 201) throw new Error(`share link creation failed: ${response.status} ${response.text}`);
  return { ...response.body, token: new URL(response.body.url as string).pathname.split('/').pop()! };
}
