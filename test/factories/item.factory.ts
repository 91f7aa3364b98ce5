import type { Item, ShipmentSet } from '@tracking/contracts';
import type { TestTenant } from './identity.factory.js';
import { createResource, withoutUndefined } from './resource.factory.js';
import { setsPath } from './set.factory.js';
import type { TestStack } from '../support/stack.js';

export interface ItemOverrides {
  /** Index into `tenant.accountIds` of the shipment's account; default the first account. */
  account?: number;
  /** Merged over a valid body; a key set to `undefined` is left out. */
  body?: Record<string, unknown>;
}

let itemCounter = 0;

/** A valid creation body; `overrides` replace or remove fields. */
export function itemBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return withoutUndefined({ sku: `SKU-${++itemCounter}`, quantity: 1, ...overrides });
}

/** The path of a set's items. */
export function itemsPath(tenant: TestTenant, set: Pick<ShipmentSet, 'id' | 'shipmentId'>, account = 0): string {
  return `${setsPath(tenant, set.shipmentId, account)}/${set.id}/items`;
}

/** An item created through the real endpoint, with its ETag and path. */
export async function createItem(
  stack: TestStack,
  tenant: TestTenant,
  set: Pick<ShipmentSet, 'id' | 'shipmentId'>,
  overrides: ItemOverrides = {},
): Promise<{ item: Item; etag: string; path: string }> {
  const at = itemsPath(tenant, set, overrides.account);
  const { resource, etag, path } = await createResource<Item>(stack, at, tenant.token, itemBody(overrides.body), 'item');
  return { item: resource, etag, path };
}
