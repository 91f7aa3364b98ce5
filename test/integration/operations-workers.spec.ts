import type { Device, Operation, OperationResult } from '@tracking/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  holdDevices,
  operationsPath,
  readAllResults,
  seedDevices,
  seedShipmentsWithSets,
  startBulkAssign,
  startBulkRetire,
  waitForOperation,
} from '../factories/bulk.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { TestStack } from '../support/stack.js';

/*
 * Two workers (each running two operations at a time) on one stack, with operations that compete for the
 * same devices: assignments to four different shipments and two retirements, overlapping. Whatever order
 * the chunks run in, each device ends with exactly one successful entry, and its state is that entry's.
 */

const WORKER_CONCURRENCY = 2;

describe('several operations on two workers', () => {
  let stack: TestStack;
  let tenant: TestTenant;

  beforeAll(async () => {
    stack = await TestStack.start({
      env: { WORKER_CHUNK_SIZE: '25', WORKER_CONCURRENCY: String(WORKER_CONCURRENCY), DMS_DATABASE_POOL_SIZE: '6' },
    });
    await stack.startWorker();
    await stack.startWorker();
    tenant = await createTenant(stack);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const get = (path: string) => stack.request('GET', path, { token: tenant.token });

  /** Every device of the account linked to `shipmentId`, following the cursors. */
  async function devicesOf(shipmentId: string): Promise<Device[]> {
    const devices: Device[] = [];
    for (let cursor: string | null = null; ; ) {
      const query = `?shipmentId=${shipmentId}&limit=100${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
      const page = await get(`/v1/accounts/${tenant.accountIds[0]}/devices${query}`);
      expect(page.status, page.text).toBe(200);
      devices.push(...(page.body.devices as Device[]));
      cursor = page.body.metadata.nextCursor;
      if (cursor === null) return devices;
    }
  }

  it('all complete, counts equal results, and no device is linked twice or both linked and retired', async () => {
    const shipments = await seedShipmentsWithSets(stack, tenant, 4, 2);
    const devices = await seedDevices(stack, tenant, 400);
    const range = (from: number, to: number) => devices.slice(from, to);
    // Assignment k takes devices [50k, 50k + 200) onto shipment k; the retirements take [100, 350) and [300, 400) backwards.
    const assignments = shipments.map((shipment, k) =>
      range(50 * k, 50 * k + 200).map((deviceId, i) => ({ setId: shipment.setIds[i % 2]!, deviceId })),
    );
    const retirements = [range(100, 350), range(300, 400).reverse()];
    // Every operation but the last waits on this device in one of its chunks, until it is released.
    const contested = devices[150]!;

    const held = await holdDevices(stack, [contested]);
    const paths: string[] = [];
    try {
      for (const entries of assignments) paths.push(await startBulkAssign(stack, tenant, entries));
      for (const deviceIds of retirements) paths.push(await startBulkRetire(stack, tenant, deviceIds));
      // Both workers are busy at once: one worker alone runs at most WORKER_CONCURRENCY operations.
      const deadline = Date.now() + 30000;
      for (;;) {
        const running = await get(`${operationsPath(tenant)}?status=Running`);
        if (running.body.items.length === 2 * WORKER_CONCURRENCY) break;
        expect(running.body.items.length).toBeLessThanOrEqual(2 * WORKER_CONCURRENCY);
        if (Date.now() > deadline) throw new Error(`never ${2 * WORKER_CONCURRENCY} operations Running at once: ${running.text}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await held.release();
    }

    const finished: { operation: Operation; results: OperationResult[] }[] = [];
    for (const path of paths) {
      const operation = await waitForOperation(stack, tenant, path);
      const results = await readAllResults(stack, tenant, path);
      const succeeded = results.filter((result) => result.status === 'Succeeded').length;
      expect(operation.progress).toEqual({ total: results.length, processed: results.length, succeeded, failed: results.length - succeeded });
      expect(['Succeeded', 'PartiallySucceeded', 'Failed']).toContain(operation.status);
      finished.push({ operation, results });
    }
    expect(finished.map(({ results }) => results.length)).toEqual([200, 200, 200, 200, 250, 100]);

    // The one successful entry of each device, and what it did.
    const winners = new Map<string, { operation: number; setId?: string }>();
    for (const [operation, { results }] of finished.entries()) {
      for (const result of results) {
        if (result.status === 'Failed') {
          const expected = operation < 4 ? ['DeviceAlreadyAssigned', 'DeviceRetired'] : ['DeviceAssigned', 'DeviceRetired'];
          expect(expected).toContain(result.error?.code);
          continue;
        }
        expect(winners.get(result.deviceId), `device ${result.deviceId} succeeded twice`).toBeUndefined();
        winners.set(result.deviceId, { operation, setId: result.setId });
      }
    }
    expect(winners.size).toBe(devices.length);

    const linked = (await Promise.all(shipments.map((shipment) => devicesOf(shipment.shipmentId)))).flat();
    expect(new Set(linked.map((device) => device.id)).size).toBe(linked.length);
    for (const device of linked) {
      const winner = winners.get(device.id)!;
      expect(winner.operation).toBeLessThan(4);
      expect(device).toMatchObject({ status: 'Assigned', shipmentId: shipments[winner.operation]!.shipmentId, setId: winner.setId });
    }
    const retired = await get(`/v1/accounts/${tenant.accountIds[0]}/devices?status=Retired&limit=100&includeTotal=true`);
    const retiredCount = [...winners.values()].filter((winner) => winner.operation >= 4).length;
    expect(retired.body.metadata.total).toBe(retiredCount);
    expect(linked.length + retiredCount).toBe(devices.length);
    for (const shipment of shipments) {
      for (const setId of shipment.setIds) {
        const set = await get(`/v1/accounts/${tenant.accountIds[0]}/shipments/${shipment.shipmentId}/sets/${setId}`);
        const expected = [...winners.entries()].filter(([, winner]) => winner.setId === setId).map(([id]) => id);
        expect([...set.body.deviceIds].sort()).toEqual(expected.sort());
      }
    }
  }, 120000);
});
