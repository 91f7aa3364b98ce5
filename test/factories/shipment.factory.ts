import type { Shipment } from '@tracking/contracts';
import type { TestTenant } from './identity.factory.js';
import type { TestStack } from '../support/stack.js';

export interface ShipmentOverrides {
  name?: string;
  /** Index into `tenant.accountIds`; default the first account. */
  account?: number;
  /** Fields merged over `{name}` in the creation body. */
  body?: Record<string, unknown>;
}

export type ShipmentStatusName = 'Planned' | 'InTransit' | 'Delivered' | 'Completed' | 'Cancelled';

/** The actions that bring a new (Planned) shipment to each status. */
export const ACTIONS_TO: Record<ShipmentStatusName, string[]> = {
  Planned: [],
  InTransit: ['start'],
  Delivered: ['start', 'deliver'],
  Completed: ['start', 'deliver', 'complete'],
  Cancelled: ['cancel'],
};

let shipmentCounter = 0;

/** A shipment created through the real endpoint; fails loudly when the API refuses it. */
export async function createShipment(stack: TestStack, tenant: TestTenant, overrides: ShipmentOverrides = {}): Promise<Shipment> {
  const accountId = tenant.accountIds[overrides.account ?? 0]!;
  const response = await stack.request('POST', `/v1/accounts/${accountId}/shipments`, {
    token: tenant.token,
    body: { name: overrides.name ?? `Shipment ${++shipmentCounter}`, ...overrides.body },
  });
  if (response.status !== 201) throw new Error(`shipment creation failed: ${response.status} ${response.text}`);
  return response.body;
}

/** A shipment created and moved to `status` through the real lifecycle endpoints; returns it as GET shows it. */
export async function createShipmentIn(
  stack: TestStack,
  tenant: TestTenant,
  status: ShipmentStatusName,
  overrides: ShipmentOverrides = {},
): Promise<Shipment> {
  const shipment = await createShipment(stack, tenant, overrides);
  const path = `/v1/accounts/${tenant.accountIds[overrides.account ?? 0]!}/shipments/${shipment.id}`;
  for (const action of ACTIONS_TO[status]) {
    const response = await stack.request('POST', `${path}/${action}`, { token: tenant.token });
    if (response.status !== 204) throw new Error(`${action} failed: ${response.status} ${response.text}`);
  }
  return (await stack.request('GET', path, { token: tenant.token })).body;
}

/** `count` shipments, at most `concurrency` at a time; with more than one, the result is not in creation order. */
export async function createShipments(
  stack: TestStack,
  tenant: TestTenant,
  count: number,
  options: ShipmentOverrides & { concurrency?: number } = {},
): Promise<Shipment[]> {
  const created: Shipment[] = [];
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
