import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';
import type { Operation } from '@tracking/contracts';
import type { TestTenant } from './identity.factory.js';
import type { TestStack } from '../support/stack.js';

/**
 * Data for bulk operations in bulk: devices, shipments and sets written straight into the services'
 * databases (registering ten thousand devices through the API would take most of a test's time).
 * The rows are what the endpoints would write.
 */

async function withDatabase<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** `count` Available devices of the tenant's account, in creation order. */
export async function seedDevices(stack: TestStack, tenant: TestTenant, count: number, account = 0): Promise<string[]> {
  const ids = Array.from({ length: count }, () => uuidv7());
  const serialPrefix = `BULK-${Math.random().toString(36).slice(2, 10)}-`;
  await withDatabase(stack.env.DMS_DATABASE_URL!, (client) =>
    client.query(
      `INSERT INTO devices (id, tenant_id, account_id, serial_number, model, status, metadata, version, created_at, updated_at)
       SELECT id, $2, $3, $4 || ordinality, 'TempTrack T4', 'Available', '{}', 1, now(), now()
         FROM unnest($1::uuid[]) WITH ORDINALITY AS d (id, ordinality)`,
      [ids, tenant.tenantId, tenant.accountIds[account], serialPrefix],
    ),
  );
  return ids;
}

/** `shipments` Planned shipments of the account with `setsPerShipment` sets each; returns the set ids by shipment. */
export async function seedShipmentsWithSets(
  stack: TestStack,
  tenant: TestTenant,
  shipments: number,
  setsPerShipment: number,
  account = 0,
): Promise<{ shipmentId: string; setIds: string[] }[]> {
  const seeded = Array.from({ length: shipments }, () => ({
    shipmentId: uuidv7(),
    setIds: Array.from({ length: setsPerShipment }, () => uuidv7()),
  }));
  const reference = `BULK-${Math.random().toString(36).slice(2, 10)}-`;
  await withDatabase(stack.env.OMS_DATABASE_URL!, async (client) => {
    await client.query(
      `INSERT INTO shipments (id, tenant_id, account_id, name, reference, status, mode, tags, metadata, version, created_at, updated_at)
       SELECT id, $2, $3, 'Bulk shipment ' || ordinality, $4 || ordinality, 'Planned', 'Road', '{}', '{}', 1, now(), now()
         FROM unnest($1::uuid[]) WITH ORDINALITY AS s (id, ordinality)`,
      [seeded.map((s) => s.shipmentId), tenant.tenantId, tenant.accountIds[account], reference],
    );
    const sets = seeded.flatMap((s) => s.setIds.map((setId) => [setId, s.shipmentId] as const));
    await client.query(
      `INSERT INTO sets (id, shipment_id, name, kind, version, created_at, updated_at)
       SELECT id, shipment_id, 'Pallet ' || ordinality, 'Pallet', 1, now(), now()
         FROM unnest($1::uuid[], $2::uuid[]) WITH ORDINALITY AS s (id, shipment_id, ordinality)`,
      [sets.map(([setId]) => setId), sets.map(([, shipmentId]) => shipmentId)],
    );
  });
  return seeded;
}

/** The operation's path, from the `Location` of its 202. */
export function operationPath(created: { headers: Headers }): string {
  const location = created.headers.get('location');
  if (!location) throw new Error('the 202 has no Location');
  return location;
}

/**
 * Reads the operation until `done` holds of it, within `timeoutMs`; polling is how clients follow an
 * operation (each read answers at once), not a sleep standing in for a missing signal.
 */
export async function waitForOperation(
  stack: TestStack,
  tenant: TestTenant,
  path: string,
  done: (operation: Operation) => boolean = (operation) => operation.completedAt !== null,
  timeoutMs = 60000,
): Promise<Operation> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await stack.request('GET', path, { token: tenant.token });
    if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${response.text}`);
    const operation = response.body as Operation;
    if (done(operation)) return operation;
    if (Date.now() > deadline) throw new Error(`operation not done in ${timeoutMs} ms: ${JSON.stringify(operation)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
