import { randomUUID } from 'node:crypto';
import type { EntryError, Operation, OperationResult } from '@tracking/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAllResults, startBulkAssign, startBulkRetire, waitForOperation } from '../factories/bulk.factory.js';
import { createDevice } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createSet } from '../factories/set.factory.js';
import { ACTIONS_TO, createShipment, type ShipmentStatusName } from '../factories/shipment.factory.js';
import { type HttpResult, TestStack } from '../support/stack.js';

/*
 * Each entry of a bulk request is judged exactly as its single call would judge it: the same error code,
 * and the same message wherever the single call's situation is the same. Entries are spread over
 * chunks of 3, so refusals of the OMS (sets) and of the DMS (devices) share chunks.
 */

/** A set in a shipment of some status, of some tenant and account. */
interface Target {
  tenant: TestTenant;
  account: number;
  shipmentId: string;
  setId: string;
}

describe('per-entry errors of bulk operations', () => {
  let stack: TestStack;
  /** Account 1 is "another account of the same tenant". */
  let tenant: TestTenant;
  let otherTenant: TestTenant;

  beforeAll(async () => {
    stack = await TestStack.start({ workers: 1, env: { WORKER_CHUNK_SIZE: '3' } });
    tenant = await createTenant(stack, { accounts: 2 });
    otherTenant = await createTenant(stack);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const accountPath = (owner: TestTenant, account = 0) => `/v1/accounts/${owner.accountIds[account]}`;
  const shipmentPath = (target: Target) => `${accountPath(target.tenant, target.account)}/shipments/${target.shipmentId}`;

  /** A new shipment with one set, moved to `status` after the set was made. */
  async function newTarget(status: ShipmentStatusName = 'Planned', owner = tenant, account = 0): Promise<Target> {
    const shipmentId = (await createShipment(stack, owner, { account })).id;
    const setId = (await createSet(stack, owner, shipmentId, { account })).set.id;
    const target = { tenant: owner, account, shipmentId, setId };
    for (const action of ACTIONS_TO[status]) {
      const response = await stack.request('POST', `${shipmentPath(target)}/${action}`, { token: owner.token });
      if (response.status !== 204) throw new Error(`${action}: ${response.status} ${response.text}`);
    }
    return target;
  }

  async function newSetOf(target: Target): Promise<Target> {
    return { ...target, setId: (await createSet(stack, target.tenant, target.shipmentId, { account: target.account })).set.id };
  }

  async function newDevice(owner = tenant, account = 0): Promise<string> {
    return (await createDevice(stack, owner, { account })).device.id;
  }

  /** The single assignment of `deviceId` to the target's set. */
  const assignOne = (target: Target, deviceId: string) =>
    stack.request('PUT', `${shipmentPath(target)}/sets/${target.setId}/devices/${deviceId}`, { token: target.tenant.token });

  /** The single retirement of `deviceId` through the tenant's first account. */
  const retireOne = (deviceId: string) => stack.request('POST', `${accountPath(tenant)}/devices/${deviceId}/retire`, { token: tenant.token });

  const readDevice = (deviceId: string, owner = tenant, account = 0) =>
    stack.request('GET', `${accountPath(owner, account)}/devices/${deviceId}`, { token: owner.token });

  async function deviceIdsOf(target: Target): Promise<string[]> {
    const response = await stack.request('GET', `${shipmentPath(target)}/sets/${target.setId}`, { token: target.tenant.token });
    expect(response.status, response.text).toBe(200);
    return [...(response.body.deviceIds as string[])].sort();
  }

  /** The error a single call answered, as a bulk entry reports it. */
  function entryErrorOf(response: HttpResult): EntryError {
    expect(response.status, response.text).toBeGreaterThanOrEqual(400);
    return { code: response.body.error.code, message: response.body.error.message };
  }

  /** A device as GET shows it, with its ETag: what "unchanged" compares. */
  const snapshot = async (deviceId: string, owner = tenant, account = 0) => {
    const response = await readDevice(deviceId, owner, account);
    expect(response.status, response.text).toBe(200);
    return { body: response.body, etag: response.headers.get('etag') };
  };

  async function finished(owner: TestTenant, path: string): Promise<{ operation: Operation; results: OperationResult[] }> {
    const operation = await waitForOperation(stack, owner, path);
    const results = await readAllResults(stack, owner, path);
    const succeeded = results.filter((result) => result.status === 'Succeeded').length;
    expect(operation.progress).toEqual({ total: results.length, processed: results.length, succeeded, failed: results.length - succeeded });
    return { operation, results };
  }

  describe('POST /sets/bulk-assign', () => {
    it('refuses each entry as PUT .../sets/{setId}/devices/{deviceId} would, applies the others, and says which is which', async () => {
      const main = await newTarget('Planned');
      const otherSet = await newSetOf(main);
      const elsewhere = await newTarget('InTransit');
      const delivered = await newTarget('Delivered');
      const completed = await newTarget('Completed');
      const cancelled = await newTarget('Cancelled');
      const inOtherAccount = await newTarget('Planned', tenant, 1);
      const inOtherTenant = await newTarget('Planned', otherTenant);

      const free = await Promise.all([0, 1, 2, 3, 4].map(() => newDevice()));
      const ofOtherAccount = await newDevice(tenant, 1);
      const ofOtherTenant = await newDevice(otherTenant);
      const retired = await newDevice();
      expect((await retireOne(retired)).status).toBe(204);
      const onElsewhere = await newDevice();
      expect((await assignOne(elsewhere, onElsewhere)).status).toBe(204);
      const toMove = await newDevice();
      expect((await assignOne(main, toMove)).status).toBe(204);
      const alreadyThere = await newDevice();
      expect((await assignOne(otherSet, alreadyThere)).status).toBe(204);
      const fresh = await newDevice();
      const toDelivered = await newDevice();
      const toInTransit = await newDevice();
      const unknownDevice = randomUUID();
      const unknownSet = randomUUID();

      // [set as the single call's path names it, device, the set named in the entry]
      const entries: [Target, string, string][] = [
        [{ ...main, setId: unknownSet }, free[0]!, unknownSet],
        [{ ...main, setId: inOtherAccount.setId }, free[1]!, inOtherAccount.setId],
        [{ ...main, setId: inOtherTenant.setId }, free[2]!, inOtherTenant.setId],
        [completed, free[3]!, completed.setId],
        [cancelled, free[4]!, cancelled.setId],
        [main, unknownDevice, main.setId],
        [main, ofOtherAccount, main.setId],
        [main, ofOtherTenant, main.setId],
        [main, retired, main.setId],
        [main, onElsewhere, main.setId],
        [otherSet, toMove, otherSet.setId],
        [otherSet, alreadyThere, otherSet.setId],
        [main, fresh, main.setId],
        [completed, randomUUID(), completed.setId],
        // Delivered and InTransit shipments are ongoing: they take devices.
        [delivered, toDelivered, delivered.setId],
        [elsewhere, toInTransit, elsewhere.setId],
      ];
      const applied = new Set([10, 11, 12, 14, 15]);
      const expectedCodes = [
        'SetNotExists',
        'SetNotExists',
        'SetNotExists',
        'ShipmentClosed',
        'ShipmentClosed',
        'DeviceNotExists',
        'DeviceNotExists',
        'DeviceNotExists',
        'DeviceRetired',
        'DeviceAlreadyAssigned',
        null,
        null,
        null,
      ];
      // What the single call answers for each refused entry, asked before the bulk request (a refusal changes nothing).
      const single = new Map<number, EntryError>();
      for (const [index, [target, deviceId]] of entries.entries()) {
        if (applied.has(index)) continue;
        single.set(index, entryErrorOf(await assignOne(target, deviceId)));
      }
      // The last entry, a closed shipment and an unknown device, is answered as the single call answers it.
      expectedCodes.push(single.get(13)!.code, null, null);
      expect([...single.entries()].map(([index, error]) => [index, error.code])).toEqual(
        expectedCodes.flatMap((code, index) => (code === null ? [] : [[index, code]])),
      );
      const refused = [...free, retired, onElsewhere];
      const before = new Map(await Promise.all(refused.map(async (id) => [id, await snapshot(id)] as const)));
      const foreignBefore = [await snapshot(ofOtherAccount, tenant, 1), await snapshot(ofOtherTenant, otherTenant)];
      const unchangedBefore = await snapshot(alreadyThere);

      const path = await startBulkAssign(
        stack,
        tenant,
        entries.map(([, deviceId, setId]) => ({ setId, deviceId })),
      );

      const { operation, results } = await finished(tenant, path);
      expect(operation).toMatchObject({ type: 'BulkSetAssignment', status: 'PartiallySucceeded', progress: { total: 16, succeeded: 5, failed: 11 } });
      expect(results.map((result) => result.index)).toEqual([...entries.keys()]);
      for (const [index, result] of results.entries()) {
        const [, deviceId, setId] = entries[index]!;
        expect(result).toEqual({
          index,
          setId,
          deviceId,
          status: expectedCodes[index] === null ? 'Succeeded' : 'Failed',
          error: expectedCodes[index] === null ? null : { code: expectedCodes[index], message: expect.any(String) },
        });
        const answered = single.get(index);
        if (answered === undefined) continue;
        if (answered.code === 'SetNotExists') {
          // The single call names the shipment of its path; a bulk entry names only the set, in the account.
          expect(result.error!.message).toContain(setId);
        } else {
          expect(result.error, `entry ${index}`).toEqual(answered);
        }
      }

      // Refused entries changed nothing; the others did what the single call does.
      for (const id of refused) expect(await snapshot(id)).toEqual(before.get(id));
      expect([await snapshot(ofOtherAccount, tenant, 1), await snapshot(ofOtherTenant, otherTenant)]).toEqual(foreignBefore);
      expect((await readDevice(toMove)).body).toMatchObject({ status: 'Assigned', shipmentId: main.shipmentId, setId: otherSet.setId });
      // Assigning a device to the set it is in succeeds and changes nothing, not even its version.
      expect(await snapshot(alreadyThere)).toEqual(unchangedBefore);
      expect((await readDevice(fresh)).body).toMatchObject({ status: 'Assigned', shipmentId: main.shipmentId, setId: main.setId });
      expect((await readDevice(onElsewhere)).body).toMatchObject({ status: 'Assigned', shipmentId: elsewhere.shipmentId });
      expect(await deviceIdsOf(main)).toEqual([fresh]);
      expect(await deviceIdsOf(otherSet)).toEqual([toMove, alreadyThere].sort());
      expect(await deviceIdsOf(elsewhere)).toEqual([onElsewhere, toInTransit].sort());
      expect(await deviceIdsOf(delivered)).toEqual([toDelivered]);
      expect(await deviceIdsOf(completed)).toEqual([]);
      expect(await deviceIdsOf(cancelled)).toEqual([]);
      expect(await deviceIdsOf(inOtherAccount)).toEqual([]);
      expect(await deviceIdsOf(inOtherTenant)).toEqual([]);
    });

    it('judges entries against what earlier operations did', async () => {
      const first = await newTarget('Planned');
      const second = await newTarget('Planned');
      const devices = await Promise.all([0, 1, 2, 3].map(() => newDevice()));
      const firstPath = await startBulkAssign(
        stack,
        tenant,
        devices.map((deviceId) => ({ setId: first.setId, deviceId })),
      );
      expect((await finished(tenant, firstPath)).operation.status).toBe('Succeeded');

      // The devices are on the first shipment now: a second operation onto another shipment finds them taken.
      const secondPath = await startBulkAssign(stack, tenant, [
        { setId: second.setId, deviceId: devices[0]! },
        { setId: first.setId, deviceId: devices[1]! },
      ]);

      const { operation, results } = await finished(tenant, secondPath);
      const taken = entryErrorOf(await assignOne(second, devices[0]!));
      expect(operation.status).toBe('PartiallySucceeded');
      expect(results.map((result) => [result.status, result.error])).toEqual([
        ['Failed', taken],
        ['Succeeded', null],
      ]);
      expect(taken.code).toBe('DeviceAlreadyAssigned');
      expect(await deviceIdsOf(second)).toEqual([]);
      expect(await deviceIdsOf(first)).toEqual([...devices].sort());
    });
  });

  describe('POST /devices/bulk-retire', () => {
    it('refuses each entry as POST /devices/{deviceId}/retire would, retires the others', async () => {
      const target = await newTarget('Planned');
      const ofOtherAccount = await newDevice(tenant, 1);
      const ofOtherTenant = await newDevice(otherTenant);
      const assigned = await newDevice();
      expect((await assignOne(target, assigned)).status).toBe(204);
      const retired = await newDevice();
      expect((await retireOne(retired)).status).toBe(204);
      const available = [await newDevice(), await newDevice()];
      const entries = [randomUUID(), ofOtherAccount, ofOtherTenant, assigned, retired, ...available];
      const expectedCodes = ['DeviceNotExists', 'DeviceNotExists', 'DeviceNotExists', 'DeviceAssigned', 'DeviceRetired', null, null];
      const single = new Map<number, EntryError>();
      for (const index of [0, 1, 2, 3, 4]) single.set(index, entryErrorOf(await retireOne(entries[index]!)));
      expect([...single.values()].map((error) => error.code)).toEqual(expectedCodes.slice(0, 5));
      const before = [
        await snapshot(ofOtherAccount, tenant, 1),
        await snapshot(ofOtherTenant, otherTenant),
        await snapshot(assigned),
        await snapshot(retired),
      ];

      const path = await startBulkRetire(stack, tenant, entries);

      const { operation, results } = await finished(tenant, path);
      expect(operation).toMatchObject({ type: 'BulkRetire', status: 'PartiallySucceeded', progress: { total: 7, succeeded: 2, failed: 5 } });
      expect(results).toEqual(
        entries.map((deviceId, index) => ({
          index,
          deviceId,
          status: expectedCodes[index] === null ? 'Succeeded' : 'Failed',
          // Exactly the single call's error: code and message.
          error: single.get(index) ?? null,
        })),
      );
      expect([
        await snapshot(ofOtherAccount, tenant, 1),
        await snapshot(ofOtherTenant, otherTenant),
        await snapshot(assigned),
        await snapshot(retired),
      ]).toEqual(before);
      for (const id of available) {
        const read = await readDevice(id);
        expect(read.body).toMatchObject({ status: 'Retired', shipmentId: null, setId: null });
        expect(Date.parse(read.body.retiredAt)).toBeGreaterThanOrEqual(Date.parse(operation.startedAt!));
        // Retired for good, as after a single retire.
        expect(entryErrorOf(await retireOne(id)).code).toBe('DeviceRetired');
      }
      expect(await deviceIdsOf(target)).toEqual([assigned]);
    });
  });
});
