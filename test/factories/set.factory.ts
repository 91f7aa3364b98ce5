import type { ShipmentSet } from '@tracking/contracts';
import type { TestTenant } from './identity.factory.js';
import { createResource, withoutUndefined } from './resource.factory.js';
import type { TestStack } from '../support/stack.js';

export interface SetOverrides {
  /** Index into `tenant.accountIds` of the shipment's account; default the first account. */
  account?: number;
  /** Merged over a valid body; a key set to `undefined` is left out. */
  body?: Record<string, unknown>;
}

let setCounter = 0;

/** A valid creation body; `overrides` replace or remove fields. */
export function setBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return withoutUndefined({ name: `Pallet ${++setCounter}`, kind: 'Pallet', ...overrides });
}

/** The path of a shipment's sets. */
export function setsPath(tenant: TestTenant, shipmentId: string, account = 0): string {
  return `/v1/accounts/${tenant.accountIds[account]}/shipments/${shipmentId}/sets`;
}

/** A set created through the real endpoint, with its ETag and path. */
export async function createSet(
  stack: TestStack,
  tenant: TestTenant,
  shipmentId: string,
  overrides: SetOverrides = {},
): Promise<{ set: ShipmentSet; etag: string; path: string }> {
  const at = setsPath(tenant, shipmentId, overrides.account);
  const { resource, etag, path } = await createResource<ShipmentSet>(stack, at, tenant.token, setBody(overrides.body), 'set');
  return { set: resource, etag, path };
}
