import { afterEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import { type Operation, OperationStatus } from '@tracking/contracts';
import { operationPath, seedDevices, seedShipmentsWithSets, waitForOperation } from '../factories/bulk.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { holdRow as holdRowLock, type HeldLock, lockWaiters, waitUntil } from '../support/ops-endpoints.js';
import { killServices, spawnService } from '../support/processes.js';
import { type HttpResult, TestStack } from '../support/stack.js';

/**
 * Processes killed with SIGKILL in the middle of a 10000-entry operation, at the points where it hurts:
 * after the DMS committed a chunk but before the worker recorded it, while the DMS is still deciding a
 * chunk for a worker that is gone, and the DMS itself in the middle of a chunk. Each time, once the
 * processes are back, the operation finishes with every entry applied exactly once (each device's
 * version moved on by one), counts equal to its results, and the DMS's record of all 10000 outcomes.
 *
 * The services run from the build as real processes (`npm test` builds first). A chunk is held at the
 * chosen point by a row lock this test takes, and the test waits for the service to be blocked on it
 * (pg_stat_activity), so the kill lands exactly there.
 */

const ENTRIES = 10000;
const CHUNK = 500;
/** An entry of the sixth chunk (2500..2999): five chunks are done when it is held. */
const HELD_ENTRY = 2600;
const DONE_BEFORE_HELD_CHUNK = 2500;

const STACK_ENV = {
  WORKER_CHUNK_SIZE: String(CHUNK),
  // A killed worker's job goes to another worker after this long.
  WORKER_LOCK_DURATION_MS: '2000',
};

let stack: TestStack | undefined;
const heldRows: HeldLock[] = [];
afterEach(async () => {
  await Promise.all(heldRows.splice(0).map((held) => held.release()));
  await killServices();
  await stack?.stop();
  stack = undefined;
});

describe('a bulk operation survives SIGKILL', { timeout: 180000 }, () => {
  it.each(['assignment', 'retirement'] as const)(
    'of the worker after the DMS committed a chunk of a bulk %s and before the worker recorded it',
    async (kind) => {
      stack = await TestStack.start({ env: STACK_ENV });
      const { tenant, devices, started } = kind === 'assignment' ? await startAssignment(stack) : await startRetirement(stack);
      const operationId = await idOf(started);

      const held = await holdRow(
        stack.env.OMS_DATABASE_URL!,
        'SELECT 1 FROM operation_entries WHERE operation_id = $1 AND entry_index = $2 FOR UPDATE',
        [operationId, HELD_ENTRY],
      );
      const worker = await spawnService(stack, 'worker');
      await waitUntil(() => blockedOn(stack!.env.OMS_DATABASE_URL!, 'oms'), 'the worker blocked recording chunk 6');
      // The DMS has decided and committed chunk 6; only the worker's record of it is missing.
      expect(await ledgerSize(stack, operationId)).toBe(DONE_BEFORE_HELD_CHUNK + CHUNK);
      await worker.kill9();
      await held.release();

      const meanwhile = await getOperation(stack, tenant, started);
      expect(meanwhile).toMatchObject({ status: OperationStatus.Running, progress: { processed: DONE_BEFORE_HELD_CHUNK } });

      // Chunk 6 is sent again: the DMS answers it from its record (a retirement applied again would fail
      // with DeviceRetired, an assignment would move the versions on again).
      await spawnService(stack, 'worker');
      const finished = await waitForOperation(stack, tenant, operationPath(started));
      await expectAppliedOnce(stack, tenant, finished, devices);
      if (kind === 'assignment') await expectLinked(stack, devices);
      else await expectRetired(stack, devices);
    },
  );

  it('of the worker while the DMS is still deciding its chunk', async () => {
    stack = await TestStack.start({ env: STACK_ENV });
    const { tenant, devices, started } = await startAssignment(stack);
    const operationId = await idOf(started);

    const held = await holdRow(stack.env.DMS_DATABASE_URL!, 'SELECT 1 FROM devices WHERE id = $1 FOR UPDATE', [devices[HELD_ENTRY]!.deviceId]);
    const worker = await spawnService(stack, 'worker');
    await waitUntil(() => blockedOn(stack!.env.DMS_DATABASE_URL!, 'dms'), 'the DMS blocked deciding chunk 6');
    await worker.kill9();
    await held.release();
    // The DMS goes on and commits the chunk for a worker that no longer listens.
    await waitUntil(async () => (await ledgerSize(stack!, operationId)) === DONE_BEFORE_HELD_CHUNK + CHUNK, 'the DMS committed chunk 6');
    expect(await getOperation(stack, tenant, started)).toMatchObject({ progress: { processed: DONE_BEFORE_HELD_CHUNK } });

    await spawnService(stack, 'worker');
    const finished = await waitForOperation(stack, tenant, operationPath(started));
    await expectAppliedOnce(stack, tenant, finished, devices);
    await expectLinked(stack, devices);
  });

  it('of the DMS in the middle of a chunk of a bulk retire', async () => {
    stack = await TestStack.start({ env: STACK_ENV, dmsReplicas: 0 });
    const dms = await spawnService(stack, 'dms');
    const { tenant, devices, started } = await startRetirement(stack);

    const held = await holdRow(stack.env.DMS_DATABASE_URL!, 'SELECT 1 FROM devices WHERE id = $1 FOR UPDATE', [devices[HELD_ENTRY]!.deviceId]);
    await stack.startWorker();
    await waitUntil(() => blockedOn(stack!.env.DMS_DATABASE_URL!, 'dms'), 'the DMS blocked deciding chunk 6');
    await dms.kill9();
    await held.release();
    expect(await getOperation(stack, tenant, started)).toMatchObject({
      status: OperationStatus.Running,
      progress: { processed: DONE_BEFORE_HELD_CHUNK },
    });

    await spawnService(stack, 'dms');
    const finished = await waitForOperation(stack, tenant, operationPath(started));
    await expectAppliedOnce(stack, tenant, finished, devices);
    await expectRetired(stack, devices);
  });
});

interface Entry {
  deviceId: string;
  setId?: string;
}

/** 10000 devices assigned over 200 sets of 20 shipments, recorded while no worker runs. */
async function startAssignment(stack: TestStack): Promise<{ tenant: TestTenant; devices: Entry[]; started: HttpResult }> {
  const tenant = await createTenant(stack);
  const deviceIds = await seedDevices(stack, tenant, ENTRIES);
  const setIds = (await seedShipmentsWithSets(stack, tenant, 20, 10)).flatMap((shipment) => shipment.setIds);
  const devices = deviceIds.map((deviceId, index) => ({ deviceId, setId: setIds[index % setIds.length]! }));
  const started = await stack.request('POST', `/v1/accounts/${tenant.accountIds[0]}/sets/bulk-assign`, {
    token: tenant.token,
    body: { assignments: devices },
  });
  expect(started.status).toBe(202);
  return { tenant, devices, started };
}

/** 10000 devices to retire, recorded while no worker runs. */
async function startRetirement(stack: TestStack): Promise<{ tenant: TestTenant; devices: Entry[]; started: HttpResult }> {
  const tenant = await createTenant(stack);
  const deviceIds = await seedDevices(stack, tenant, ENTRIES);
  const started = await stack.request('POST', `/v1/accounts/${tenant.accountIds[0]}/devices/bulk-retire`, {
    token: tenant.token,
    body: { deviceIds },
  });
  expect(started.status).toBe(202);
  return { tenant, devices: deviceIds.map((deviceId) => ({ deviceId })), started };
}

async function idOf(started: HttpResult): Promise<string> {
  return (started.body as Operation).id;
}

async function getOperation(stack: TestStack, tenant: TestTenant, started: HttpResult): Promise<Operation> {
  const response = await stack.request('GET', operationPath(started), { token: tenant.token });
  expect(response.status).toBe(200);
  return response.body as Operation;
}

/**
 * Succeeded, every entry once: counts equal to the results, every device's version moved on by exactly
 * one write, and the DMS's record of each of the 10000 outcomes.
 */
async function expectAppliedOnce(stack: TestStack, tenant: TestTenant, operation: Operation, entries: Entry[]): Promise<void> {
  expect(operation).toMatchObject({
    status: OperationStatus.Succeeded,
    progress: { total: ENTRIES, processed: ENTRIES, succeeded: ENTRIES, failed: 0 },
  });
  const results = await stack.request('GET', `${operation.url}/results?includeTotal=true&limit=1`, { token: tenant.token });
  expect(results.body.metadata.total).toBe(ENTRIES);
  const failed = await stack.request('GET', `${operation.url}/results?status=Failed&includeTotal=true&limit=1`, { token: tenant.token });
  expect(failed.body.metadata.total).toBe(0);
  const versions = await query<{ version: number; devices: string }>(
    stack.env.DMS_DATABASE_URL!,
    'SELECT version, count(*) AS devices FROM devices WHERE id = ANY($1::uuid[]) GROUP BY version',
    [entries.map((entry) => entry.deviceId)],
  );
  expect(versions.map((row) => ({ version: row.version, devices: Number(row.devices) }))).toEqual([{ version: 2, devices: ENTRIES }]);
  expect(await ledgerSize(stack, operation.id)).toBe(ENTRIES);
}

/** Every device is linked to the set its entry named. */
async function expectLinked(stack: TestStack, entries: Entry[]): Promise<void> {
  const rows = await query<{ linked: string }>(
    stack.env.DMS_DATABASE_URL!,
    `SELECT count(*) AS linked FROM devices AS d
       JOIN unnest($1::uuid[], $2::uuid[]) AS e (device_id, set_id) ON d.id = e.device_id AND d.set_id = e.set_id
      WHERE d.status = 'Assigned'`,
    [entries.map((entry) => entry.deviceId), entries.map((entry) => entry.setId)],
  );
  expect(Number(rows[0]!.linked)).toBe(ENTRIES);
}

/** Every device is Retired, with its retirement time. */
async function expectRetired(stack: TestStack, entries: Entry[]): Promise<void> {
  const rows = await query<{ retired: string }>(
    stack.env.DMS_DATABASE_URL!,
    "SELECT count(*) AS retired FROM devices WHERE id = ANY($1::uuid[]) AND status = 'Retired' AND retired_at IS NOT NULL",
    [entries.map((entry) => entry.deviceId)],
  );
  expect(Number(rows[0]!.retired)).toBe(ENTRIES);
}

async function ledgerSize(stack: TestStack, operationId: string): Promise<number> {
  const rows = await query<{ size: string }>(
    stack.env.DMS_DATABASE_URL!,
    'SELECT count(*) AS size FROM operation_outcomes WHERE operation_id = $1',
    [operationId],
  );
  return Number(rows[0]!.size);
}

async function query<T>(url: string, sql: string, params: unknown[]): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

/** Takes a row lock in its own transaction until `release` (or the end of the test). */
async function holdRow(url: string, sql: string, params: unknown[]): Promise<HeldLock> {
  const held = await holdRowLock(url, sql, params);
  heldRows.push(held);
  return held;
}

/** Whether a session of the service (`oms` or `dms`, by its application name) waits for a row lock in that database. */
async function blockedOn(url: string, service: 'oms' | 'dms'): Promise<boolean> {
  return (await lockWaiters(url, service)) > 0;
}
