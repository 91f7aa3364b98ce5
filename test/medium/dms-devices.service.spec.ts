import { DeviceStatus, ErrorCode } from '@tracking/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DevicesService } from '../../apps/dms/src/devices/devices.service.js';
import { connect, deviceInput, type MediumService, newScope, rejection, startMediumDms, untilWaitingForLock } from '../support/medium.js';

/**
 * DevicesService with its real repository on its own DMS database (device-rules.ts decides, the device
 * row lock orders concurrent writers). No gateway, no NATS: the requests are what the handler receives.
 */
let dms: MediumService;
let devices: DevicesService;

beforeAll(async () => {
  dms = await startMediumDms();
  devices = dms.get(DevicesService);
});
afterAll(() => dms?.close());

type Scope = ReturnType<typeof newScope>;
const inAMinute = () => Date.now() + 60_000;

async function newDevice(scope: Scope) {
  const { resource } = await devices.create({ ...scope, device: deviceInput() });
  return resource;
}

function link(scope: Scope, deviceId: string, target: { shipmentId: string; setId: string }, deadline = inAMinute()) {
  return devices.assign({ ...scope, deviceId, ...target, deadline });
}

const newTarget = () => ({ shipmentId: crypto.randomUUID(), setId: crypto.randomUUID() });

async function retired(scope: Scope) {
  const device = await newDevice(scope);
  await devices.retire({ ...scope, deviceId: device.id });
  return device;
}

describe('DevicesService.create', () => {
  it('registers an Available, unassigned device at version 1', async () => {
    const scope = newScope();
    const created = await devices.create({ ...scope, device: deviceInput({ metadata: { k: 1 } }) });
    expect(created.version).toBe(1);
    expect(created.resource).toMatchObject({ status: DeviceStatus.Available, shipmentId: null, setId: null, retiredAt: null, metadata: { k: 1 } });
    expect((await devices.get({ ...scope, deviceId: created.resource.id })).resource).toEqual(created.resource);
  });

  it('refuses a serial number taken in the tenant, in any of its accounts, with DuplicateSerialNumber', async () => {
    const scope = newScope();
    const input = deviceInput();
    await devices.create({ ...scope, device: input });
    expect((await rejection(devices.create({ ...scope, device: input }))).code).toBe(ErrorCode.DuplicateSerialNumber);
    const sibling = { tenantId: scope.tenantId, accountId: crypto.randomUUID() };
    expect((await rejection(devices.create({ ...sibling, device: input }))).code).toBe(ErrorCode.DuplicateSerialNumber);
    // Another tenant has serial numbers of its own.
    await expect(devices.create({ ...newScope(), device: input })).resolves.toBeDefined();
  });

  it('lets exactly one of concurrent registrations of one serial number win', async () => {
    const scope = newScope();
    const input = deviceInput();
    const results = await Promise.allSettled(Array.from({ length: 6 }, () => devices.create({ ...scope, device: input })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const result of results.filter((r) => r.status === 'rejected')) {
      expect((result as PromiseRejectedResult).reason.code).toBe(ErrorCode.DuplicateSerialNumber);
    }
  });

  it('keeps the serial number of a retired device taken and frees that of a deleted one', async () => {
    const scope = newScope();
    const kept = await retired(scope);
    expect((await rejection(devices.create({ ...scope, device: deviceInput({ serialNumber: kept.serialNumber }) }))).code).toBe(
      ErrorCode.DuplicateSerialNumber,
    );
    const gone = await newDevice(scope);
    await devices.delete({ ...scope, deviceId: gone.id });
    await expect(devices.create({ ...scope, device: deviceInput({ serialNumber: gone.serialNumber }) })).resolves.toBeDefined();
  });
});

describe('DevicesService.update', () => {
  it('changes the given fields and the version; a patch that changes nothing keeps the version', async () => {
    const scope = newScope();
    const device = await newDevice(scope);
    const changed = await devices.update({ ...scope, deviceId: device.id, patch: { model: 'T-200', batteryLevel: 0.5 } });
    expect(changed).toMatchObject({ version: 2, resource: { model: 'T-200', batteryLevel: 0.5, serialNumber: device.serialNumber } });
    expect((await devices.update({ ...scope, deviceId: device.id, patch: { model: 'T-200' } })).version).toBe(2);
  });

  it('refuses a stale expected version with PreconditionFailed and leaves the device unchanged', async () => {
    const scope = newScope();
    const device = await newDevice(scope);
    const refused = await rejection(devices.update({ ...scope, deviceId: device.id, expectedVersion: 7, patch: { model: 'X' } }));
    expect(refused.code).toBe(ErrorCode.PreconditionFailed);
    expect((await devices.get({ ...scope, deviceId: device.id })).resource.model).toBe(device.model);
  });

  it('refuses a retired device with DeviceRetired, PreconditionFailed first', async () => {
    const scope = newScope();
    const device = await retired(scope);
    expect((await rejection(devices.update({ ...scope, deviceId: device.id, patch: {} }))).code).toBe(ErrorCode.DeviceRetired);
    expect((await rejection(devices.update({ ...scope, deviceId: device.id, expectedVersion: 1, patch: {} }))).code).toBe(
      ErrorCode.PreconditionFailed,
    );
  });

  it('changes an assigned device and keeps its link', async () => {
    const scope = newScope();
    const device = await newDevice(scope);
    const target = newTarget();
    await link(scope, device.id, target);
    const { resource } = await devices.update({ ...scope, deviceId: device.id, patch: { firmwareVersion: '2.0' } });
    expect(resource).toMatchObject({ status: DeviceStatus.Assigned, ...target, firmwareVersion: '2.0' });
  });
});

describe('DevicesService.retire and delete', () => {
  it('retires an Available device once: a second retire is DeviceRetired', async () => {
    const scope = newScope();
    const device = await newDevice(scope);
    expect(await devices.retire({ ...scope, deviceId: device.id })).toEqual({ version: 2 });
    const { resource } = await devices.get({ ...scope, deviceId: device.id });
    expect(resource.status).toBe(DeviceStatus.Retired);
    expect(resource.retiredAt).not.toBeNull();
    expect((await rejection(devices.retire({ ...scope, deviceId: device.id }))).code).toBe(ErrorCode.DeviceRetired);
  });

  it('refuses to retire or delete an assigned device with DeviceAssigned, and a retired one with DeviceRetired', async () => {
    const scope = newScope();
    const assigned = await newDevice(scope);
    await link(scope, assigned.id, newTarget());
    expect((await rejection(devices.retire({ ...scope, deviceId: assigned.id }))).code).toBe(ErrorCode.DeviceAssigned);
    expect((await rejection(devices.delete({ ...scope, deviceId: assigned.id }))).code).toBe(ErrorCode.DeviceAssigned);
    const old = await retired(scope);
    expect((await rejection(devices.delete({ ...scope, deviceId: old.id }))).code).toBe(ErrorCode.DeviceRetired);
  });

  it('honours the expected version on retire and delete', async () => {
    const scope = newScope();
    const device = await newDevice(scope);
    expect((await rejection(devices.retire({ ...scope, deviceId: device.id, expectedVersion: 2 }))).code).toBe(ErrorCode.PreconditionFailed);
    expect((await rejection(devices.delete({ ...scope, deviceId: device.id, expectedVersion: 2 }))).code).toBe(ErrorCode.PreconditionFailed);
    await devices.delete({ ...scope, deviceId: device.id, expectedVersion: 1 });
    expect((await rejection(devices.get({ ...scope, deviceId: device.id }))).code).toBe(ErrorCode.DeviceNotExists);
  });

  it('retires a device exactly once under concurrent retires', async () => {
    const scope = newScope();
    const device = await newDevice(scope);
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => devices.retire({ ...scope, deviceId: device.id })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const result of results.filter((r) => r.status === 'rejected')) {
      expect((result as PromiseRejectedResult).reason.code).toBe(ErrorCode.DeviceRetired);
    }
  });

  it("never finds another account's or tenant's device: DeviceNotExists for every call", async () => {
    const scope = newScope();
    const device = await newDevice(scope);
    for (const other of [{ tenantId: scope.tenantId, accountId: crypto.randomUUID() }, newScope()]) {
      const request = { ...other, deviceId: device.id };
      for (const call of [
        () => devices.get(request),
        () => devices.update({ ...request, patch: { model: 'X' } }),
        () => devices.retire(request),
        () => devices.delete(request),
        () => link(other, device.id, newTarget()),
      ]) {
        expect((await rejection(call())).code).toBe(ErrorCode.DeviceNotExists);
      }
    }
    expect((await devices.get({ ...scope, deviceId: device.id })).version).toBe(1);
  });
});

describe('DevicesService.assign (link)', () => {
  it('links an Available device to the set; assigning again changes nothing, not even the version', async () => {
    const scope = newScope();
    const device = await newDevice(scope);
    const target = newTarget();
    await link(scope, device.id, target);
    const first = await devices.get({ ...scope, deviceId: device.id });
    expect(first).toMatchObject({ version: 2, resource: { status: DeviceStatus.Assigned, ...target } });
    await link(scope, device.id, target);
    expect((await devices.get({ ...scope, deviceId: device.id })).version).toBe(2);
  });

  it('moves the device to another set of the same shipment', async () => {
    const scope = newScope();
    const device = await newDevice(scope);
    const target = newTarget();
    await link(scope, device.id, target);
    const moved = { shipmentId: target.shipmentId, setId: crypto.randomUUID() };
    await link(scope, device.id, moved);
    expect((await devices.get({ ...scope, deviceId: device.id })).resource).toMatchObject(moved);
  });

  it('refuses a device on another shipment with DeviceAlreadyAssigned naming the device and that shipment', async () => {
    const scope = newScope();
    const device = await newDevice(scope);
    const first = newTarget();
    await link(scope, device.id, first);
    const refused = await rejection(link(scope, device.id, newTarget()));
    expect(refused.code).toBe(ErrorCode.DeviceAlreadyAssigned);
    expect(refused.details).toEqual({ deviceId: device.id, shipmentId: first.shipmentId });
    expect((await devices.get({ ...scope, deviceId: device.id })).resource).toMatchObject(first);
  });

  it('refuses a retired device with DeviceRetired, and an unknown or malformed id with DeviceNotExists', async () => {
    const scope = newScope();
    const old = await retired(scope);
    expect((await rejection(link(scope, old.id, newTarget()))).code).toBe(ErrorCode.DeviceRetired);
    expect((await rejection(link(scope, crypto.randomUUID(), newTarget()))).code).toBe(ErrorCode.DeviceNotExists);
    expect((await rejection(link(scope, 'not-a-uuid', newTarget()))).code).toBe(ErrorCode.DeviceNotExists);
  });

  it('refuses a link to a released shipment (ShipmentClosed) or released set (SetNotExists)', async () => {
    const scope = newScope();
    const device = await newDevice(scope);
    const closed = newTarget();
    await devices.release({ ...scope, shipmentId: closed.shipmentId, deadline: inAMinute() });
    expect((await rejection(link(scope, device.id, closed))).code).toBe(ErrorCode.ShipmentClosed);
    const shipment = newTarget();
    await devices.release({ ...scope, ...shipment, deadline: inAMinute() });
    expect((await rejection(link(scope, device.id, shipment))).code).toBe(ErrorCode.SetNotExists);
    // Another set of that shipment still takes devices.
    await link(scope, device.id, { shipmentId: shipment.shipmentId, setId: crypto.randomUUID() });
  });

  it('rolls a link back when it would commit after the deadline (GatewayTimeout)', async () => {
    const scope = newScope();
    const device = await newDevice(scope);
    expect((await rejection(link(scope, device.id, newTarget(), Date.now() - 1))).code).toBe(ErrorCode.GatewayTimeout);
    expect((await devices.get({ ...scope, deviceId: device.id })).resource).toMatchObject({ status: DeviceStatus.Available, shipmentId: null });
  });

  it('gives up waiting for the device lock at the deadline (GatewayTimeout), leaving the device as it was', async () => {
    const scope = newScope();
    const device = await newDevice(scope);
    const holder = await connect(dms.url);
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM devices WHERE id = $1 FOR UPDATE', [device.id]);
      expect((await rejection(link(scope, device.id, newTarget(), Date.now() + 300))).code).toBe(ErrorCode.GatewayTimeout);
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    expect((await devices.get({ ...scope, deviceId: device.id })).version).toBe(1);
  });

  it('lets exactly one of two concurrent links of one device to two shipments win; the other names the winner', async () => {
    const scope = newScope();
    const device = await newDevice(scope);
    const targets = [newTarget(), newTarget()];
    const results = await Promise.allSettled(targets.map((target) => link(scope, device.id, target)));
    const won = results.findIndex((r) => r.status === 'fulfilled');
    const lost = results.findIndex((r) => r.status === 'rejected');
    expect(won).not.toBe(-1);
    expect(lost).not.toBe(-1);
    const reason = (results[lost] as PromiseRejectedResult).reason;
    expect(reason.code).toBe(ErrorCode.DeviceAlreadyAssigned);
    expect(reason.details).toEqual({ deviceId: device.id, shipmentId: targets[won].shipmentId });
    expect((await devices.get({ ...scope, deviceId: device.id })).resource).toMatchObject(targets[won]);
  });

  it('makes a link wait for a release of its shipment in progress, and refuses it once the release commits', async () => {
    const scope = newScope();
    const device = await newDevice(scope);
    const target = newTarget();
    const release = await connect(dms.url);
    const observer = await connect(dms.url);
    try {
      // What DeviceRepository.release does, held open: the shipment's link lock taken exclusively, the shipment recorded as released.
      await release.query('BEGIN');
      await release.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`links:${target.shipmentId}`]);
      await release.query('INSERT INTO released_link_targets (target_id) VALUES ($1)', [target.shipmentId]);
      const linking = rejection(link(scope, device.id, target));
      await untilWaitingForLock(observer);
      await release.query('COMMIT');
      expect((await linking).code).toBe(ErrorCode.ShipmentClosed);
    } finally {
      await release.end();
      await observer.end();
    }
    expect((await devices.get({ ...scope, deviceId: device.id })).resource.status).toBe(DeviceStatus.Available);
  });
});

describe('DevicesService.unassign, release and linked', () => {
  it('unlinks only from exactly the set the device is on; otherwise AssignmentNotExists', async () => {
    const scope = newScope();
    const device = await newDevice(scope);
    const target = newTarget();
    await link(scope, device.id, target);
    for (const wrong of [
      { ...target, setId: crypto.randomUUID() },
      { ...target, shipmentId: crypto.randomUUID() },
      { ...target, deviceId: crypto.randomUUID() },
      { ...target, deviceId: 'not-a-uuid' },
    ]) {
      expect((await rejection(devices.unassign({ ...scope, deviceId: device.id, ...wrong, deadline: inAMinute() }))).code).toBe(ErrorCode.AssignmentNotExists);
    }
    await devices.unassign({ ...scope, deviceId: device.id, ...target, deadline: inAMinute() });
    expect((await devices.get({ ...scope, deviceId: device.id })).resource).toMatchObject({ status: DeviceStatus.Available, shipmentId: null, setId: null });
    expect((await rejection(devices.unassign({ ...scope, deviceId: device.id, ...target, deadline: inAMinute() }))).code).toBe(ErrorCode.AssignmentNotExists);
  });

  it('releases every device of a shipment, or of one set only, and counts them', async () => {
    const scope = newScope();
    const shipmentId = crypto.randomUUID();
    const [setA, setB] = [crypto.randomUUID(), crypto.randomUUID()];
    const [a1, a2, b1] = [await newDevice(scope), await newDevice(scope), await newDevice(scope)];
    await link(scope, a1.id, { shipmentId, setId: setA });
    await link(scope, a2.id, { shipmentId, setId: setA });
    await link(scope, b1.id, { shipmentId, setId: setB });
    const elsewhere = await newDevice(scope);
    await link(scope, elsewhere.id, newTarget());

    expect(await devices.release({ ...scope, shipmentId, setId: setA, deadline: inAMinute() })).toEqual({ released: 2 });
    expect(await devices.linked({ ...scope, setIds: [setA, setB] })).toEqual({ [setA]: [], [setB]: [b1.id] });
    expect(await devices.release({ ...scope, shipmentId, deadline: inAMinute() })).toEqual({ released: 1 });
    expect(await devices.release({ ...scope, shipmentId, deadline: inAMinute() })).toEqual({ released: 0 });
    expect((await devices.get({ ...scope, deviceId: a1.id })).version).toBe(3);
    expect((await devices.get({ ...scope, deviceId: elsewhere.id })).resource.status).toBe(DeviceStatus.Assigned);
  });

  it("releases only the account's own devices", async () => {
    const scope = newScope();
    const other = { tenantId: scope.tenantId, accountId: crypto.randomUUID() };
    const shipmentId = crypto.randomUUID();
    const theirs = await newDevice(other);
    await link(other, theirs.id, { shipmentId, setId: crypto.randomUUID() });
    expect(await devices.release({ ...scope, shipmentId, deadline: inAMinute() })).toEqual({ released: 0 });
    expect((await devices.get({ ...other, deviceId: theirs.id })).resource.status).toBe(DeviceStatus.Assigned);
  });

  it('lists every requested set with its sorted device ids; unknown and malformed set ids have none', async () => {
    const scope = newScope();
    const target = newTarget();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const device = await newDevice(scope);
      await link(scope, device.id, target);
      ids.push(device.id);
    }
    const unknown = crypto.randomUUID();
    expect(await devices.linked({ ...scope, setIds: [target.setId, unknown, 'x'] })).toEqual({
      [target.setId]: [...ids].sort(),
      [unknown]: [],
      x: [],
    });
    expect(await devices.linked({ ...newScope(), setIds: [target.setId] })).toEqual({ [target.setId]: [] });
  });
});
