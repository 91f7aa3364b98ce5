import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';
import type { Operation, OperationResult } from '@tracking/contracts';
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

/** The path of an account's bulk assignment. */
export function bulkAssignPath(tenant: TestTenant, account = 0): string {
  return `/v1/accounts/${tenant.accountIds[account]}/sets/bulk-assign`;
}

/** The path of an account's bulk retirement. */
export function bulkRetirePath(tenant: TestTenant, account = 0): string {
  return `/v1/accounts/${tenant.accountIds[account]}/devices/bulk-retire`;
}

/** The path of an account's operations. */
export function operationsPath(tenant: TestTenant, account = 0): string {
  return `/v1/accounts/${tenant.accountIds[account]}/operations`;
}

/** Sends a bulk assignment and returns the operation's path; fails loudly unless it is accepted. */
export async function startBulkAssign(
  stack: TestStack,
  tenant: TestTenant,
  assignments: { setId: string; deviceId: string }[],
  account = 0,
): Promise<string> {
  const response = await stack.request('POST', bulkAssignPath(tenant, account), { token: tenant.token, body: { assignments } });
  if (response.status !== 202) throw new Error(`bulk assignment refused: ${response.status} ${response.text}`);
  return operationPath(response);
}

/** Sends a bulk retirement and returns the operation's path; fails loudly unless it is accepted. */
export async function startBulkRetire(stack: TestStack, tenant: TestTenant, deviceIds: string[], account = 0): Promise<string> {
  const response = await stack.request('POST', bulkRetirePath(tenant, account), { token: tenant.token, body: { deviceIds } });
  if (response.status !== 202) throw new Error(`bulk retirement refused: ${response.status} ${response.text}`);
  return operationPath(response);
}

/** Every result of the operation at `path` (with `query`, e.g. `status=Failed&`), following the cursors. */
export async function readAllResults(stack: TestStack, tenant: TestTenant, path: string, query = ''): Promise<OperationResult[]> {
  const results: OperationResult[] = [];
  for (let cursor: string | null = null; ; ) {
    const page = `${path}/results?${query}limit=100${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const response = await stack.request('GET', page, { token: tenant.token });
    if (response.status !== 200) throw new Error(`GET ${page}: ${response.status} ${response.text}`);
    results.push(...(response.body.items as OperationResult[]));
    cursor = response.body.metadata.nextCursor as string | null;
    if (cursor === null) return results;
  }
}

/** Row locks held by an open transaction of the test, as a concurrent request would hold them. */
export interface HeldRows {
  /** Ends the transaction (ROLLBACK), letting whoever waits for the rows go on. */
  release(): Promise<void>;
}

/** Locks the devices' rows in the DMS database (`SELECT ... FOR UPDATE`) until `release()`. */
export async function holdDevices(stack: TestStack, deviceIds: string[]): Promise<HeldRows> {
  const client = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
  await client.connect();
  try {
    await client.query('BEGIN');
    const { rowCount } = await client.query('SELECT id FROM devices WHERE id = ANY($1::uuid[]) FOR UPDATE', [deviceIds]);
    if (rowCount !== deviceIds.length) throw new Error(`only ${rowCount} of ${deviceIds.length} devices to hold`);
  } catch (error) {
    await client.end();
    throw error;
  }
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      try {
        await client.query('ROLLBACK');
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * Waits until a statement of `database` that starts with `statement` waits for a lock, or `gaveUp()`
 * holds (the statement ran without waiting); true when it was seen waiting.
 */
export async function waitForLockWaiter(
  databaseUrl: string,
  statement: string,
  gaveUp: () => boolean,
  timeoutMs = 20000,
): Promise<boolean> {
  return withDatabase(databaseUrl, async (client) => {
    const deadline = Date.now() + timeoutMs;
    while (!gaveUp()) {
      const { rows } = await client.query<{ waiting: number }>(
        `SELECT count(*)::int AS waiting FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND starts_with(ltrim(query), $1)`,
        [statement],
      );
      if (rows[0]!.waiting > 0) return true;
      if (Date.now() > deadline) throw new Error(`no statement "${statement}" waited for a lock in ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return false;
  });
}

/**
 * Waits until a worker has closed the operation: nothing of it is left to run or to record (a cancelled
 * operation is Cancelled at once, but its worker closes it afterwards). The API does not show this.
 */
export async function waitForSettled(stack: TestStack, operationId: string, timeoutMs = 60000): Promise<void> {
  await withDatabase(stack.env.OMS_DATABASE_URL!, async (client) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { rows } = await client.query<{ settled: boolean }>('SELECT settled FROM operations WHERE id = $1', [operationId]);
      if (rows[0]?.settled) return;
      if (Date.now() > deadline) throw new Error(`operation ${operationId} not settled in ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });
}
