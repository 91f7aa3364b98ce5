import { randomUUID } from 'node:crypto';
import { ErrorCode } from '@tracking/contracts';
import { openAlert } from '../factories/alert.factory.js';
import { createDevice, uniqueSerialNumber } from '../factories/device.factory.js';
import type { TestTenant } from '../factories/identity.factory.js';
import { createItem } from '../factories/item.factory.js';
import { createPointOfInterest } from '../factories/point-of-interest.factory.js';
import { createSet } from '../factories/set.factory.js';
import { createShareLink } from '../factories/share-link.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { createWebhook, sendTestPing } from '../factories/webhook.factory.js';
import type { CatalogRoute } from './route-catalog.js';
import type { TestStack } from './stack.js';

/**
 * The path parameters of the account routes that name a resource, with the 404 a request gets when
 * the id names no resource of the account. Every path parameter of every account route must be here:
 * a route with another one makes the route matrix fail until it is added.
 */
export const PATH_RESOURCES: Record<string, ErrorCode> = {
  shipmentId: ErrorCode.ShipmentNotExists,
  setId: ErrorCode.SetNotExists,
  itemId: ErrorCode.ItemNotExists,
  poiId: ErrorCode.PointOfInterestNotExists,
  deviceId: ErrorCode.DeviceNotExists,
  operationId: ErrorCode.OperationNotExists,
  webhookId: ErrorCode.WebhookNotExists,
  deliveryId: ErrorCode.DeliveryNotExists,
  alertId: ErrorCode.AlertNotExists,
  credentialId: ErrorCode.CredentialNotExists,
  linkId: ErrorCode.ShareLinkNotExists,
};

/** Routes on which a parameter's 404 is not the resource's own (docs/api.md, "Device assignment"). */
const NOT_FOUND_ON_ROUTE: Record<string, Record<string, ErrorCode>> = {
  'DELETE /v1/accounts/:accountId/shipments/:shipmentId/sets/:setId/devices/:deviceId': { deviceId: ErrorCode.AssignmentNotExists },
};

/** The 404 code `route` answers when `param` names no resource of the account. */
export function notFoundCode(route: CatalogRoute, param: string): ErrorCode {
  const code = NOT_FOUND_ON_ROUTE[route.key]?.[param] ?? PATH_RESOURCES[param];
  if (code === undefined) {
    throw new Error(
      `${route.key}: path parameter "${param}" names no known resource; add it to PATH_RESOURCES in test/support/account-resources.ts`,
    );
  }
  return code;
}

/** One of each resource of an account, by the path parameter that names it, plus `accountId`. */
export type AccountResources = Record<string, string>;

/**
 * One resource of every kind in the tenant's account `account`, through the real endpoints, each
 * carrying `marker` in a text field, so that a response that leaks one can be recognised. The device
 * is assigned to the set, the operation (a bulk retirement of an unknown device) is recorded, and the
 * webhook has one delivery (a test ping).
 * shipment has an open alert of the device.
 */
export async function createAccountResources(
  stack: TestStack,
  tenant: TestTenant,
  account: number,
  marker: string,
): Promise<AccountResources> {
  const accountId = tenant.accountIds[account]!;
  const shipment = await createShipment(stack, tenant, { account, name: `${marker} shipment`, body: { reference: `${marker}-ref` } });
  const { set } = await createSet(stack, tenant, shipment.id, { account, body: { name: `${marker} set` } });
  const { item } = await createItem(stack, tenant, set, { account, body: { sku: `${marker}-sku` } });
  const { pointOfInterest } = await createPointOfInterest(stack, tenant, { account, body: { name: `${marker} place` } });
  const { device } = await createDevice(stack, tenant, { account, body: { serialNumber: `${marker}-${uniqueSerialNumber()}`, model: marker } });
  const base = `/v1/accounts/${accountId}`;
  const assigned = await stack.request('PUT', `${base}/shipments/${shipment.id}/sets/${set.id}/devices/${device.id}`, { token: tenant.token });
  if (assigned.status !== 204) throw new Error(`assignment failed: ${assigned.status} ${assigned.text}`);
  const operation = await stack.request('POST', `${base}/devices/bulk-retire`, { token: tenant.token, body: { deviceIds: [randomUUID()] } });
  if (operation.status !== 202) throw new Error(`bulk retirement failed: ${operation.status} ${operation.text}`);
  const credential = await stack.request('POST', `${base}/devices/${device.id}/credentials`, { token: tenant.token, body: { protocol: 'Http' } });
  if (credential.status !== 201) throw new Error(`credential failed: ${credential.status} ${credential.text}`);
  const webhook = await createWebhook(stack, tenant, { account, body: { description: `${marker} webhook` } });
  const delivery = await sendTestPing(stack, tenant, webhook.path);
  // Alerts come from the evaluation of readings only; the store is what it writes them with.
  const alert = await openAlert(stack, tenant, shipment.id, { account, deviceId: device.id });
  const link = await createShareLink(stack, tenant, shipment.id, { account });
  return {
    accountId,
    shipmentId: shipment.id,
    setId: set.id,
    itemId: item.id,
    poiId: pointOfInterest.id,
    deviceId: device.id,
    operationId: operation.body.id as string,
    webhookId: webhook.webhook.id,
    deliveryId: delivery.id,
    alertId: alert.id,
    credentialId: credential.body.id as string,
    linkId: link.id,
    // Not an account route's parameter: the public view's (GET /v1/public/tracking/{token}).
    token: link.token,
  };
}
