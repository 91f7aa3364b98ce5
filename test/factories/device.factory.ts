import type { Device } from '@tracking/contracts';
import pg from 'pg';
import type { TestTenant } from './identity.factory.js';
import { createResource, withoutUndefined } from './resource.factory.js';
import { clockPast } from '../support/clock.js';
import type { TestStack } from '../support/stack.js';

export interface DeviceOverrides {
  /** Index into `tenant.accountIds`; default the first account. */
  account?: number;
  /** Merged over a valid body; a key set to `undefined` is left out. */
  body?: Record<string, unknown>;
}

let deviceCounter = 0;

/** A serial number no other test uses, even in another file of the same run. */
export function uniqueSerialNumber(): string {
  return `SN-${process.pid}-${++deviceCounter}-${Math.random().toString(36).slice(2, 8)}`;
}

/** A valid registration body; `overrides` replace or remove fields. */
export function deviceBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return withoutUndefined({ serialNumber: uniqueSerialNumber(), model: 'TempTrack T4', ...overrides });
}

/** The path of an account's devices. */
export function devicesPath(tenant: TestTenant, account = 0): string {
  return `/v1/accounts/${tenant.accountIds[account]}/devices`;
}

/** A device registered through the real endpoint, with its ETag and path. */
export async function createDevice(
  stack: TestStack,
  tenant: TestTenant,
  overrides: DeviceOverrides = {},
): Promise<{ device: Device; etag: string; path: string }> {
  const at = devicesPath(tenant, overrides.account);
  const { resource, etag, path } = await createResource<Device>(stack, at, tenant.token, deviceBody(overrides.body), 'device');
  return { device: resource, etag, path };
}

/**
 * Links a device to a shipment's set in the DMS database, as the assignment endpoint does, without
 * the OMS checks (the shipment and set need not exist). Moves the version on, as any write does.
 */
export async function assignDeviceInDatabase(stack: TestStack, deviceId: string, shipmentId: string, setId: string): Promise<void> {
  const dms = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
  await dms.connect();
  try {
    const result = await dms.query(
      `UPDATE devices SET status = 'Assigned', shipment_id = $2, set_id = $3, version = version + 1, updated_at = now()
        WHERE id = $1`,
      [deviceId, shipmentId, setId],
    );
    if (result.rowCount !== 1) throw new Error(`no device ${deviceId} to assign`);
  } finally {
    await dms.end();
  }
}

/** The path of a device on a shipment's set (PUT links it, DELETE unlinks it). */
function linkPath(tenant: TestTenant, set: { shipmentId: string; id: string }, deviceId: string, account: number): string {
  return `/v1/accounts/${tenant.accountIds[account]}/shipments/${set.shipmentId}/sets/${set.id}/devices/${deviceId}`;
}

/**
 * Assigns a device to a set through the real endpoint; fails loudly when refused. Returns a moment
 * strictly after the link (see `clockPast`): a reading recorded then falls inside the assignment period.
 */
export async function assignDevice(stack: TestStack, tenant: TestTenant, set: { shipmentId: string; id: string }, deviceId: string, account = 0): Promise<number> {
  const response = await stack.request('PUT', linkPath(tenant, set, deviceId, account), { token: tenant.token });
  if (response.status !== 204) throw new Error(`assignment failed: ${response.status} ${response.text}`);
  return clockPast(Date.now());
}

/** Unassigns a device from a set through the real endpoint; fails loudly when refused. */
export async function unassignDevice(stack: TestStack, tenant: TestTenant, set: { shipmentId: string; id: string }, deviceId: string, account = 0): Promise<void> {
  const response = await stack.request('DELETE', linkPath(tenant, set, deviceId, account), { token: tenant.token });
  if (response.status !== 204) throw new Error(`unassignment failed: ${response.status} ${response.text}`);
}
