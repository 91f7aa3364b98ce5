import type { TestTenant } from './identity.factory.js';
import type { TestStack } from '../support/stack.js';

export interface ShipmentOverrides {
  name?: string;
  /** Index into `tenant.accountIds`; default the first account. */
  account?: number;
}

let shipmentCounter = 0;

/** A shipment created through the real endpoint; fails loudly when the API refuses it. */
export async function createShipment(stack: TestStack, tenant: TestTenant, overrides: ShipmentOverrides = {}): Promise<any> {
  const accountId = tenant.accountIds[overrides.account ?? 0]!;
  const response = await stack.request('POST', `/v1/accounts/${accountId}/shipments`, {
    token: tenant.token,
    body: { name: overrides.name ?? `Shipment ${++shipmentCounter}` },
  });
  if (response.status !== 201) throw new Error(`shipment creation failed: ${response.status} ${response.text}`);
  return response.body;
}

/** `count` shipments, at most `concurrency` at a time; with more than one, the result is not in creation order. */
export async function createShipments(
  stack: TestStack,
  tenant: TestTenant,
  count: number,
  options: ShipmentOverrides & { concurrency?: number } = {},
): Promise<any[]> {
  const created: any[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      next++;
      created.push(await createShipment(stack, tenant, options));
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency ?? 1, count) }, worker));
  return created;
}
